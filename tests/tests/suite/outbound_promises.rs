//! The outbound promises each held by a test of its own: a call passed over past its deadline fails, a refused
//! call waits and asks again, the line while Redis fails, `on_error = closed` while Redis is down, the client
//! layer keyed by a function with priorities, and a pause learned from quota fields on every node. Ordering
//! is read from events (what `MONITOR` shows Redis ran, what a node counts), never from a sleep.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use limiter_runtime::{Algorithm, FakeClock, Limiter, OnError, Priority, Reason, Rule};
use test_support::{Monitor, RedisServer};

/// The partner's 10 calls a second, as a leaky bucket that spaces them, each waiting up to `max_wait`.
fn partner(prefix: &'static str, max_wait: Duration) -> Rule {
    Rule::new()
        .prefix(prefix)
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1))
        .max_wait(max_wait)
}

/// The script calls a client sent naming `text` (a key) among `lines` seen by `MONITOR`: a call's ask, one
/// `EVALSHA` each (a script Redis did not hold yet follows it whole, as an `EVAL`: not counted).
fn asks_in(lines: &[String], text: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|line| line.contains("\"EVALSHA\""))
        .filter(|line| !line.contains(" lua]") && line.contains(text))
        .cloned()
        .collect()
}

/// Waits (10 s at most) until `MONITOR` has shown `n` more asks naming `text` than `seen` holds, adding them
/// to it: Redis has decided those calls, in the order shown.
fn wait_for_asks(monitor: &Monitor, text: &str, seen: &mut Vec<String>, n: usize) {
    let want = seen.len() + n;
    let until = Instant::now() + Duration::from_secs(10);
    tokio::task::block_in_place(|| loop {
        seen.extend(asks_in(&monitor.take_lines(), text));
        if seen.len() >= want {
            return;
        }
        assert!(Instant::now() < until, "asks of {text} seen: {seen:?}");
        std::thread::sleep(Duration::from_millis(5));
    });
}

/// The server's time of a `MONITOR` line (`1700000000.000001 [0 127.0.0.1:5000] "EVALSHA" ...`).
fn monitor_time(line: &str) -> Duration {
    let seconds: f64 = line.split_whitespace().next().unwrap().parse().unwrap();
    Duration::from_secs_f64(seconds)
}

/// Polls `condition` every 10 ms until it holds, failing with `what` after 5 s.
async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(started.elapsed() < Duration::from_secs(5), "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Checks that a call passed over by more important ones fails as soon as that pushes its slot past its
/// deadline, saying how long it would have waited, rather than waiting past `max_wait`. One call a second
/// (slots 1.001 s apart: the window's 10 s and the 10 ms send tolerance over 10); the other node holds the
/// next 9 s. A `Normal` call's slot is then 9 s out, within its 10 s; 4 s later two `High` calls join (each
/// slot within their own 10 s: 6.001 s and 7.002 s on), pass it, and move it to 11.002 s after the other
/// node's calls: past its deadline, so it fails then, 5 s before its first slot would have come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_passed_over_past_its_deadline_fails_at_once_with_its_retry() {
    let server = RedisServer::start();
    let (one, two) = (server.limiter(), server.limiter());
    let rule = Rule::new()
        .prefix("out:passed-over:")
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(10))
        .max_wait(Duration::from_secs(10));
    let monitor = Monitor::start(server.port());
    one.turn(&rule, "warm").await.unwrap().settle(&[]).await;
    let mut seen = Vec::new();
    // The other node's calls: 9 slots at once (a plain check spends no send tolerance: 9 s).
    let filled = Instant::now();
    assert!(two.check(&rule, "acme").cost(9).await.allowed);
    wait_for_asks(&monitor, "passed-over:acme", &mut seen, 1);
    let asked = Instant::now();
    let normal = {
        let (one, rule) = (one.clone(), rule.clone());
        tokio::spawn(async move {
            let turn = one.turn(&rule, "acme").await;
            (Instant::now(), turn.map(|turn| turn.waited()))
        })
    };
    wait_for_asks(&monitor, "passed-over:acme", &mut seen, 1);
    // Time passes (the promise is about deadlines): the high calls' slots, after the normal one's, are within
    // their own 10 s once 1.002 s has passed; the normal one's first slot comes at 9 s.
    tokio::time::sleep_until((asked + Duration::from_secs(4)).into()).await;
    let highs: Vec<_> = (0..2)
        .map(|_| {
            let (one, rule) = (one.clone(), rule.clone());
            tokio::spawn(async move { one.turn(&rule, "acme").priority(Priority::High).await })
        })
        .collect();
    let joined = Instant::now();
    let (refused_at, turn) = tokio::time::timeout(Duration::from_secs(15), normal)
        .await
        .expect("the normal call ended")
        .unwrap();
    let refused = match turn {
        Err(refused) => refused,
        Ok(waited) => panic!(
            "passed over past its deadline, it went after {waited:?}, {:?} after the high calls joined",
            refused_at - joined
        ),
    };
    // Refused when passed over, long before its first slot (9 s on) or its deadline (10 s on).
    assert!(
        refused_at < asked + Duration::from_secs(9),
        "refused {:?} after it asked",
        refused_at - asked
    );
    assert_eq!(refused.reason(), Reason::Limited);
    // Its retry is the slot it was moved to: past its deadline, and the third of the slots after the other
    // node's, 9 s + 2 × 1.001 s after they were taken (1 s of slack: the high calls' slots are counted from
    // when their replies were read, later under load).
    let slot = refused_at + refused.retry_after();
    assert!(slot > asked + Duration::from_secs(10), "{:?}", slot - asked);
    assert!(
        slot <= filled + Duration::from_millis(11_002 + 1_000),
        "{:?}",
        slot - filled
    );
    for high in highs {
        high.abort();
    }
}

/// Checks that a call the limit refuses for now waits as long as it is told and asks again, and goes once
/// the limit allows it, within its deadline, rather than failing at once (the guide: "Refused, it waits and
/// asks again ... while its deadline allows"). On a fake clock: the tokens are spent; a call of 500 is refused
/// for 500 ms (a token a millisecond); the clock moves on 500 ms once Redis has refused it, and its next ask,
/// at least 500 ms after the first, is admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_waits_as_told_asks_again_and_goes() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let requests = partner("out:asks-again:requests:", Duration::from_secs(2));
    let tokens = Rule::new()
        .prefix("out:asks-again:tokens:")
        .algorithm(Algorithm::TokenBucket)
        .max(1_000)
        .window(Duration::from_secs(1));
    let monitor = Monitor::start(server.port());
    limiter
        .all([(&requests, "warm", 1), (&tokens, "warm", 1)])
        .turn()
        .await
        .unwrap()
        .settle(&[])
        .await;
    let spent = limiter
        .all([(&requests, "acme", 1), (&tokens, "acme", 1_000)])
        .turn()
        .await
        .unwrap();
    spent.settle(&[1, 1_000]).await;
    let mut asks = Vec::new();
    wait_for_asks(&monitor, "asks-again:tokens:acme", &mut asks, 1);
    asks.clear();
    let call = {
        let (limiter, requests, tokens) = (limiter.clone(), requests.clone(), tokens.clone());
        tokio::spawn(async move {
            limiter
                .all([(&requests, "acme", 1), (&tokens, "acme", 500)])
                .turn()
                .await
        })
    };
    // Redis refused its first ask (nothing refilled on the fake clock): time moves on by what it was told.
    wait_for_asks(&monitor, "asks-again:tokens:acme", &mut asks, 1);
    clock.advance(Duration::from_millis(500));
    let turn = tokio::time::timeout(Duration::from_secs(15), call)
        .await
        .expect("the call ended")
        .unwrap()
        .expect("admitted once the tokens refilled, within its deadline");
    assert!(
        turn.waited() >= Duration::from_millis(500),
        "{:?}",
        turn.waited()
    );
    assert!(!turn.decisions()[1].degraded);
    // It asked again, no sooner than it was told (Redis's own times of the two asks).
    asks.extend(asks_in(&monitor.take_lines(), "asks-again:tokens:acme"));
    assert!(asks.len() >= 2, "{asks:?}");
    let between = monitor_time(&asks[1]) - monitor_time(&asks[0]);
    assert!(between >= Duration::from_millis(500), "{between:?}");
    // Charged once: the 500 that refilled, all taken (the refused asks charged nothing).
    turn.settle(&[1, 500]).await;
    let left = limiter.inspect(&tokens, "acme").await.unwrap().remaining;
    assert_eq!(left, 0);
}

/// Checks that while Redis fails (killed), the calls waiting in a node's line keep the slots
/// they hold and their order, and the calls that ask meanwhile are decided by the node's share of the rate
/// (`on_error` open taken as local): with two nodes sharing 10 calls a second, 5, a slot every 202 ms. On a
/// frozen local clock, the slots within the 2 s a call may wait are 10 (0 to 9 × 202 ms): at most 10 of 24
/// callers go (the whole limit's would be 20), and at least the first 5, whose slots are a second or more
/// within their deadline (a slot is counted from the decision, the deadline from the ask: a caller held up
/// between the two may find its slot past it); the rest fail, saying how long to wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_redis_fails_waiting_calls_keep_their_order_and_new_ones_the_nodes_share() {
    let mut server = RedisServer::start();
    let clock = FakeClock::new();
    let node = |local_clock: Option<&FakeClock>| {
        // Once Redis has failed twice, no call asks it again: each is decided at once. (A second's deadline:
        // Redis answers a loaded machine's calls before it kills it, and then refuses at once.)
        let builder = server
            .builder()
            .deadline(Duration::from_secs(1))
            .heartbeat_every(Duration::from_millis(500))
            .breaker(2, Duration::from_secs(3_600));
        match local_clock {
            Some(clock) => builder.local_clock(clock.clone()),
            None => builder,
        }
        .build()
        .unwrap()
    };
    let (one, two) = (node(Some(&clock)), node(None));
    until("both nodes counted", || {
        one.stats().instances == 2 && two.stats().instances == 2
    })
    .await;
    let rule = partner("out:failing:", Duration::from_secs(2));
    let monitor = Monitor::start(server.port());
    one.turn(&rule, "warm").await.unwrap().settle(&[]).await;
    let mut seen = Vec::new();
    // The other node holds the next 1.5 s of slots: this node's 5 callers wait in its line, 1.5 s on and after
    // (the last 1.904 s on, within the 2 s they may wait).
    assert!(two.check(&rule, "acme").cost(10).await.allowed);
    assert!(two.check(&rule, "acme").cost(5).await.allowed);
    wait_for_asks(&monitor, "failing:acme", &mut seen, 2);
    let went = Arc::new(Mutex::new(Vec::new()));
    let mut callers = Vec::new();
    let call = |name: String| {
        let (one, rule, went) = (one.clone(), rule.clone(), Arc::clone(&went));
        Box::pin(async move {
            let asked = Instant::now();
            let turn = one.turn(&rule, "acme").await;
            let at = Instant::now();
            match turn {
                Ok(turn) => {
                    went.lock().unwrap().push((at, name));
                    turn.settle(&[]).await;
                    Ok(())
                }
                Err(refused) => Err((at - asked, refused)),
            }
        })
    };
    for i in 0..5 {
        callers.push(tokio::spawn(call(format!("waiting {i}"))));
        wait_for_asks(&monitor, "failing:acme", &mut seen, 1);
    }
    server.kill();
    // Asked while Redis is down, each decided (counted degraded) and in the line before the next
    // asks: polled here until it waits for its slot (decided without Redis, a call joins the line in the
    // same poll), then left to a task of its own.
    for i in 0..24 {
        let before = one.stats().degraded;
        let mut caller = call(format!("new {i}"));
        let first = futures::poll!(caller.as_mut());
        if one.stats().degraded == before {
            // It asked Redis (the breaker not open yet): decided once Redis failed.
            callers.push(tokio::spawn(caller));
            until("the call decided without Redis", || {
                one.stats().degraded > before
            })
            .await;
            continue;
        }
        callers.push(match first {
            std::task::Poll::Ready(went) => tokio::spawn(async move { went }),
            std::task::Poll::Pending => tokio::spawn(caller),
        });
    }
    let mut refused = Vec::new();
    for caller in callers {
        if let Err((waited, limited)) = caller.await.unwrap() {
            // By its deadline (2 s) and its last ask: 5 s is scheduling slack on a loaded machine, and catches
            // a caller that asks on past it.
            assert!(waited <= Duration::from_secs(7), "{waited:?}");
            assert_eq!(limited.reason(), Reason::Limited);
            assert!(limited.retry_after() > Duration::ZERO);
            assert!(limited.decision().degraded);
            refused.push(limited);
        }
    }
    let went = went.lock().unwrap().clone();
    let names: Vec<_> = went.iter().map(|(_, name)| name.clone()).collect();
    let waiting: Vec<_> = (0..5).map(|i| format!("waiting {i}")).collect();
    let new: Vec<_> = (0..24)
        .map(|i| format!("new {i}"))
        .filter(|name| names.contains(name))
        .collect();
    for name in &waiting {
        assert!(names.contains(name), "{name} did not go: {names:?}");
    }
    assert!((5..=10).contains(&new.len()), "went: {names:?}");
    assert_eq!(new[..5], ["new 0", "new 1", "new 2", "new 3", "new 4"]);
    assert_eq!(refused.len(), 24 - new.len());
    // In order: the calls that waited before Redis failed go before any that asked after, and those in the
    // order they asked. (The waiting ones' order among themselves is the order they joined the line, which
    // two replies a millisecond apart may swap.) 100 ms of slack: the slots Redis gave and the node's own may
    // lie within milliseconds, and two calls woken that close may report either way; calls out of order are
    // a slot or more apart (101 ms of Redis's, 202 ms of the node's share).
    let at = |name: &str| went.iter().find(|(_, n)| n == name).unwrap().0;
    let slack = Duration::from_millis(100);
    for (first, then) in waiting.iter().flat_map(|w| new.iter().map(move |n| (w, n))) {
        assert!(
            at(then) + slack >= at(first),
            "{then} went {:?} before {first}: {names:?}",
            at(first) - at(then)
        );
    }
    for pair in new.windows(2) {
        assert!(
            at(&pair[1]) + slack >= at(&pair[0]),
            "{} went {:?} before {}: {names:?}",
            pair[1],
            at(&pair[0]) - at(&pair[1]),
            pair[0]
        );
    }
}

/// A limiter whose calls of `prefix` (`on_error = closed`, waiting up to `max_wait`) have gone once through
/// Redis, which is then killed: it asks Redis within 100 ms, and probes it every 200 ms once it failed.
async fn closed_with_redis_killed(
    prefix: &'static str,
    max_wait: Duration,
) -> (RedisServer, Limiter, Rule) {
    let mut server = RedisServer::start();
    let limiter = server
        .builder()
        .deadline(Duration::from_millis(100))
        .breaker(1, Duration::from_millis(200))
        .build()
        .unwrap();
    let rule = partner(prefix, max_wait).on_error(OnError::Closed);
    limiter.turn(&rule, "acme").await.unwrap().settle(&[]).await;
    server.kill();
    (server, limiter, rule)
}

/// Checks that with `on_error = closed`, a call that asks while Redis is down is refused for now and asks
/// again (as the breaker probes Redis, every 200 ms here) until its deadline, then fails as unavailable: not at
/// once, and asking no more than its deadline holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_a_call_keeps_asking_until_its_deadline_then_fails() {
    let (_server, limiter, rule) =
        closed_with_redis_killed("out:closed:", Duration::from_secs(1)).await;
    let before = limiter.stats().degraded;
    let asked = Instant::now();
    let refused = limiter.turn(&rule, "acme").await.unwrap_err();
    let took = asked.elapsed();
    assert_eq!(refused.reason(), Reason::Unavailable, "{refused:?}");
    // Each refusal says to ask again when Redis is next probed (200 ms): it fails once that would pass its
    // deadline, so no sooner than 1 s − 200 ms; and it asks no more than the deadline holds, each ask 200 ms
    // or more after the one before and none past it: 1 + 1 s / 200 ms.
    assert!(took >= Duration::from_millis(800), "{took:?}");
    let asks = limiter.stats().degraded - before;
    assert!((1..=6).contains(&asks), "{asks} asks in {took:?}");
}

/// Checks that with `on_error = closed`, a call that asks while Redis is down goes once Redis is back, within
/// its deadline: refused twice while Redis is down (counted), then Redis restarts and its next ask decides.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_a_call_goes_once_redis_is_back_within_its_deadline() {
    let (mut server, limiter, rule) =
        closed_with_redis_killed("out:closed-back:", Duration::from_secs(10)).await;
    let before = limiter.stats().degraded;
    let asked = Instant::now();
    let call = {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        tokio::spawn(async move { limiter.turn(&rule, "acme").await })
    };
    until("two asks refused while Redis is down", || {
        limiter.stats().degraded >= before + 2
    })
    .await;
    server.restart();
    let back = asked.elapsed();
    let turn = tokio::time::timeout(Duration::from_secs(15), call)
        .await
        .expect("the call ended")
        .unwrap()
        .expect("admitted once Redis is back, within its deadline");
    assert!(!turn.decisions()[0].degraded);
    assert!(turn.waited() >= back, "{:?} < {back:?}", turn.waited());
    turn.settle(&[]).await;
}

/// What the client layer sends: each request's `x-name` and when it was sent, answered 200 at once.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(String, Instant)>>>);

impl tower_service::Service<http::Request<()>> for Recorder {
    type Response = http::Response<()>;
    type Error = std::convert::Infallible;
    type Future = std::future::Ready<Result<http::Response<()>, std::convert::Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<()>) -> Self::Future {
        let name = request.headers()["x-name"].to_str().unwrap().to_owned();
        self.0.lock().unwrap().push((name, Instant::now()));
        std::future::ready(Ok(http::Response::new(())))
    }
}

/// Checks that the client layer keyed by a function limits the key the function returns (the organisation in
/// the path, not the host), and that its `.priority(..)` orders the line: requests that join behind waiting
/// ones less important take their slots. One call a second (slots 1.001 s apart); the node's other calls
/// hold the next 3 s, so the four requests are all in the line before the first of their slots comes (3 s
/// of slack for a loaded machine). Each is of its own priority: the order of two of one priority is the
/// order they joined, which two replies a millisecond apart may swap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_layer_keyed_by_a_function_limits_that_key_and_orders_by_priority() {
    use limiter_runtime::tower::OutboundLayer;
    use tower_service::Service;

    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new()
        .prefix("out:layer-fn:")
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(10))
        .max_wait(Duration::from_secs(8));
    let layer = OutboundLayer::new(&limiter, rule.clone(), |parts| {
        parts.uri.path().split('/').nth(1).unwrap_or("").to_owned()
    })
    .priority(
        |parts| match parts.headers.get("x-priority").map(|p| p.as_bytes()) {
            Some(b"low") => Priority::Low,
            Some(b"high") => Priority::High,
            Some(b"critical") => Priority::Critical,
            _ => Priority::Normal,
        },
    );
    let recorder = Recorder::default();
    let client = tower_layer::Layer::layer(&layer, recorder.clone());
    let monitor = Monitor::start(server.port());
    let request = |org: &str, name: &str, priority: &str| {
        let mut client = client.clone();
        let request = http::Request::get(format!("http://partner.test/{org}/v1/chat"))
            .header("x-name", name)
            .header("x-priority", priority)
            .body(())
            .unwrap();
        tokio::spawn(async move { client.call(request).await.map(|answer| answer.status()) })
    };
    request("warm", "warm", "normal").await.unwrap().unwrap();
    let mut seen = Vec::new();
    let mut calls = Vec::new();
    // The node's other calls: 3 slots at once (a plain check spends no send tolerance: 3 s).
    assert!(limiter.check(&rule, "acme").cost(3).await.allowed);
    wait_for_asks(&monitor, "layer-fn:acme", &mut seen, 1);
    // Each asks once Redis has given the one before its slot: their slots are in this order.
    for (name, priority) in [
        ("low", "low"),
        ("normal", "normal"),
        ("high", "high"),
        ("critical", "critical"),
    ] {
        calls.push(request("acme", name, priority));
        wait_for_asks(&monitor, "layer-fn:acme", &mut seen, 1);
    }
    // The key is the function's: the organisation's slots are taken (7, its line 7 s long), the host's
    // untouched.
    let acme = limiter.inspect(&rule, "acme").await.unwrap();
    assert!(
        acme.used > 0 && acme.reset_after > Duration::ZERO,
        "{acme:?}"
    );
    let host = limiter.inspect(&rule, "partner.test").await.unwrap();
    assert_eq!(
        (host.used, host.reset_after),
        (0, Duration::ZERO),
        "{host:?}"
    );
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), http::StatusCode::OK);
    }
    let sent = recorder.0.lock().unwrap().clone();
    // They asked in the order of their importance, least first, and went most important first: each that
    // joined passed those less important waiting for a slot. Half a slot of slack: two calls whose slots
    // came while this process was held up wake together, in either order.
    let at = |name: &str| sent.iter().find(|(n, _)| n == name).unwrap().1;
    let names: Vec<_> = sent.iter().map(|(name, _)| name.as_str()).collect();
    let mut all = names.clone();
    all.sort();
    assert_eq!(all, ["critical", "high", "low", "normal", "warm"]);
    for pair in ["critical", "high", "normal", "low"].windows(2) {
        assert!(
            at(pair[1]) + Duration::from_millis(500) >= at(pair[0]),
            "{} went {:?} before {}: {names:?}",
            pair[1],
            at(pair[0]) - at(pair[1]),
            pair[0]
        );
    }
}

/// Checks that a pause learned from quota fields (`X-RateLimit-Remaining: 0`, reset in 5 s, on a 200) reaches
/// the other nodes: the second node's `inspect` shows it (its cause 0: the quota fields), and neither its
/// caller already waiting for a slot inside the pause nor one that asks after it heard is sent before the
/// pause ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_from_quota_fields_reaches_the_other_nodes() {
    let server = RedisServer::start();
    let (one, two) = (server.limiter(), server.limiter());
    // One call a second, each waiting up to 20 s (a deadline no slower machine reaches here).
    let rule = Rule::new()
        .prefix("out:quota-seen:")
        .algorithm(Algorithm::LeakyBucket)
        .max(1)
        .window(Duration::from_secs(1))
        .max_wait(Duration::from_secs(20));
    let monitor = Monitor::start(server.port());
    two.turn(&rule, "warm").await.unwrap().settle(&[]).await;
    let mut seen = Vec::new();
    let turn = one.turn(&rule, "acme").await.unwrap();
    wait_for_asks(&monitor, "quota-seen:acme", &mut seen, 1);
    // The node's other calls hold the next 3 s of slots (a plain check spends no send tolerance).
    for _ in 0..3 {
        assert!(one.check(&rule, "acme").await.allowed);
    }
    wait_for_asks(&monitor, "quota-seen:acme", &mut seen, 3);
    let go = |two: &Limiter| {
        let (two, rule) = (two.clone(), rule.clone());
        tokio::spawn(async move {
            let turn = two.turn(&rule, "acme").await.unwrap();
            let went = Instant::now();
            turn.settle(&[]).await;
            went
        })
    };
    // The other node's caller holds the next slot, 4 s on: inside the pause to come (5 s from about now).
    let waiting = go(&two);
    wait_for_asks(&monitor, "quota-seen:acme", &mut seen, 1);
    let paused_at = Instant::now();
    let pause = turn
        .answered(
            200,
            [("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "5")],
        )
        .await
        .unwrap();
    assert_eq!(pause, Some(Duration::from_secs(5)));
    // The other node hears of it (Redis's channel) and shows it with its cause.
    let mut inspected = two.inspect(&rule, "acme").await.unwrap();
    let heard = Instant::now() + Duration::from_secs(5);
    while inspected.paused.is_none() {
        assert!(Instant::now() < heard, "never heard: {inspected:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
        inspected = two.inspect(&rule, "acme").await.unwrap();
    }
    assert_eq!(inspected.paused, Some(0));
    assert!(!inspected.banned);
    // What is left of 5 s, read after the pause began (5 ms: Redis's clock against this process's).
    assert!(inspected.blocked_for <= Duration::from_secs(5));
    assert!(
        inspected.blocked_for + paused_at.elapsed() + Duration::from_millis(5)
            >= Duration::from_secs(5),
        "{inspected:?}"
    );
    let after = go(&two);
    let ends = paused_at + Duration::from_secs(5);
    for went in [waiting.await.unwrap(), after.await.unwrap()] {
        assert!(
            went >= ends,
            "sent {:?} before the pause ended",
            ends - went
        );
    }
}
