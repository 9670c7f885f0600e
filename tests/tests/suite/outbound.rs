//! Outbound quotas against a mock upstream on loopback: an axum server that allows N calls a second per
//! organisation (fixed windows of a second, from its start), answers 429 with `Retry-After` beyond, and can
//! change its limit mid-run. The fleet's nodes are limiters of their own on one real redis-server.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Response, StatusCode};
use axum::routing::get;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use limiter_runtime::{Algorithm, FakeClock, Limiter, Priority, Rule, Turn};
use test_support::RedisServer;

/// The time between two slots of [`partner`]'s limit: a turn spaces the slots by the window over 10 and 1/32
/// of that more, its margin (`SLOT_MARGIN` in `limiter/turn.rs`): 103.125 ms.
const SLOT: Duration = Duration::from_micros(103_125);

/// What the mock upstream saw: each call's arrival and whether it was refused.
#[derive(Default)]
struct Seen {
    limit: u64,
    /// Seconds a 429 tells callers to wait (`None`: until the window ends, rounded up).
    retry_after: Option<u64>,
    window: u64,
    count: u64,
    /// Whether it stopped sending quota fields (once its limit changed).
    quiet: bool,
    arrivals: Vec<Arrival>,
}

/// One call as the mock upstream saw it.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    /// When it arrived, from the upstream's start.
    at: Duration,
    /// Whether it was refused (429).
    refused: bool,
    /// The seconds its 429's `Retry-After` said (0 when admitted).
    retry_after: u64,
    /// When it arrived, in µs since the Unix epoch: the clock Redis's `TIME` reads on this machine.
    wall: u64,
    /// The slot the fleet gave it (its `x-slot` header: the decision's time plus its delay, on Redis's clock),
    /// in µs since the Unix epoch, when it said.
    slot: Option<u64>,
}

impl Arrival {
    /// How long after its slot it arrived (negative: before it, which no call may), in µs.
    fn late(&self) -> i64 {
        self.wall as i64 - self.slot.expect("the call said its slot") as i64
    }
}

#[derive(Clone)]
struct Upstream {
    started: Instant,
    seen: Arc<Mutex<Seen>>,
    url: String,
}

impl Upstream {
    async fn start(limit: u64) -> Upstream {
        let started = Instant::now();
        let seen = Arc::new(Mutex::new(Seen {
            limit,
            ..Seen::default()
        }));
        let app = axum::Router::new()
            .route("/{org}", get(answer))
            .with_state((started, Arc::clone(&seen)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Upstream { started, seen, url }
    }

    /// Changes the limit from now on, as an upstream that sends no quota fields: only a 429, which says to
    /// wait `retry_after` seconds, tells the fleet.
    fn set_limit(&self, limit: u64, retry_after: u64) {
        let mut seen = self.seen.lock().unwrap();
        seen.limit = limit;
        seen.retry_after = Some(retry_after);
        seen.quiet = true;
    }

    fn arrivals(&self) -> Vec<Arrival> {
        self.seen.lock().unwrap().arrivals.clone()
    }
}

/// Now, in µs since the Unix epoch.
fn wall_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64
}

async fn answer(
    State((started, seen)): State<(Instant, Arc<Mutex<Seen>>)>,
    Path(_org): Path<String>,
    headers: HeaderMap,
) -> Response<Body> {
    let (at, wall) = (started.elapsed(), wall_now());
    let slot = headers
        .get("x-slot")
        .and_then(|slot| slot.to_str().ok()?.parse().ok());
    let mut seen = seen.lock().unwrap();
    let window = at.as_secs();
    if window != seen.window {
        (seen.window, seen.count) = (window, 0);
    }
    let admitted = seen.count < seen.limit;
    let reset = 1_000_000 - u64::from(at.subsec_micros());
    let retry = seen.retry_after.unwrap_or(reset.div_ceil(1_000_000));
    seen.arrivals.push(Arrival {
        at,
        refused: !admitted,
        retry_after: if admitted { 0 } else { retry },
        wall,
        slot,
    });
    if admitted && seen.quiet {
        seen.count += 1;
        return Response::builder()
            .header("x-tokens-used", "10")
            .body(Body::empty())
            .unwrap();
    }
    if admitted {
        seen.count += 1;
        return Response::builder()
            .header("x-tokens-used", "10")
            .header(
                "x-ratelimit-remaining",
                (seen.limit - seen.count).to_string(),
            )
            .header("x-ratelimit-reset", format!("{:.3}", reset as f64 / 1e6))
            .body(Body::empty())
            .unwrap();
    }
    Response::builder()
        .status(StatusCode::TOO_MANY_REQUESTS)
        .header("retry-after", retry.to_string())
        .body(Body::empty())
        .unwrap()
}

type Http = Client<HttpConnector, Body>;

fn client() -> Http {
    Client::builder(TokioExecutor::new()).build_http()
}

/// The slot a turn went in: its decision's time plus its delay, in µs since the Unix epoch on the store's
/// clock.
fn slot_of(turn: &Turn) -> u64 {
    let decision = turn.decisions()[0];
    (decision.decided_at + decision.delay).as_micros() as u64
}

/// Sends the call whose turn it is (saying its slot), and tells the fleet what the upstream answered: its
/// status.
async fn send(http: &Http, upstream: &Upstream, turn: &Turn) -> u16 {
    let request = http::Request::get(format!("{}/acme", upstream.url))
        .header("x-slot", slot_of(turn).to_string())
        .body(Body::empty())
        .unwrap();
    let response = http.request(request).await.unwrap();
    let status = response.status().as_u16();
    turn.answered(status, response.headers()).await.unwrap();
    status
}

/// Waits until `condition` holds, polling it; fails past `within` (a bound far above what it takes).
async fn until<F: std::future::Future<Output = bool>>(
    within: Duration,
    what: &str,
    mut condition: impl FnMut() -> F,
) {
    let deadline = Instant::now() + within;
    while !condition().await {
        assert!(Instant::now() < deadline, "{what}: not within {within:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A rule of `prefix`'s keys that waits for nothing: what [`inspect`](Limiter::inspect) tells it to wait
/// for a call is how far the line of its key reaches ahead, whatever the line's own `max_wait` (whose
/// `used` and `reset_after` count nothing until the line holds more than `max` of the slots it allows).
fn reach(prefix: &'static str) -> Rule {
    Rule::new()
        .prefix(prefix)
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1))
}

/// Waits until the line of `prefix`'s key `acme` reaches `slots` slots ahead: on a frozen fake clock nothing
/// leaks, so it reaches exactly one slot further for each call Redis charged, and one less for each slot
/// given back.
async fn line_reaches(limiter: &Limiter, prefix: &'static str, slots: u32) {
    line_reaches_by(limiter, prefix, SLOT * slots).await;
}

/// Waits until the line of `prefix`'s key `acme` reaches `ahead` (see [`line_reaches`]).
async fn line_reaches_by(limiter: &Limiter, prefix: &'static str, ahead: Duration) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let inspected = limiter.inspect(&reach(prefix), "acme").await.unwrap();
        if inspected.retry_after == ahead {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the line never reached {ahead:?}: {inspected:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The partner's 10 calls a second, as a leaky bucket that spaces them, each waiting up to `max_wait`.
fn partner(prefix: &'static str, max_wait: Duration) -> Rule {
    Rule::new()
        .prefix(prefix)
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1))
        .max_wait(max_wait)
}

/// Three processes × 32 callers for 20 s against an upstream that allows 10 calls a second, each caller's next
/// call joining the end of the fleet's line (`src/bin/caller.rs`), which holds 96 × 103 ms = 9.9 s of slots,
/// within the deadline of 12 s. What the design promises, checked as the upstream saw the calls:
/// - the fleet's slots are a whole number of slots apart (103.125 ms: the window over 10 and its margin),
///   none handed out twice;
/// - each call leaves within its slot's margin, so any second in which 11 calls land holds one held up on
///   its way for more than 31 ms, and a 429 only comes of one such;
/// - no slot is past its caller's deadline;
/// - the line goes round the callers in turn: each sends as many calls as any other, give or take one, the
///   two its start may give it, and what a refusal or a late call costs;
/// - the fleet sends one call a slot: all but the slots a 429's pause takes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_an_upstreams_allowance_without_its_429s() {
    let server = RedisServer::start();
    let upstream = Upstream::start(10).await;
    let (run, max_wait) = (Duration::from_secs(20), Duration::from_secs(12));
    let args = vec![
        server.url(),
        upstream.url.clone(),
        "32".to_owned(),
        run.as_millis().to_string(),
        max_wait.as_millis().to_string(),
    ];
    let (go, _, outputs) = tests::callers::run(env!("CARGO_BIN_EXE_caller"), vec![args; 3]).await;
    let go = go.duration_since(upstream.started);
    let arrivals = upstream.arrivals();
    let refused = arrivals.iter().filter(|arrival| arrival.refused).count();
    let (mut shares, mut per_caller, mut turned_away) = (Vec::new(), Vec::new(), 0);
    for lines in &outputs {
        assert_eq!(lines.last().map(String::as_str), Some("done"));
        let mut sent = [0u64; 32];
        for line in &lines[..lines.len() - 1] {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words[..] {
                ["sent", caller, _, _, ahead] => {
                    sent[caller.parse::<usize>().unwrap()] += 1;
                    // Its slot (on Redis's clock) is within its deadline from when it asked, exactly: a turn
                    // whose slot would pass it is refused. (The millisecond covers the µs between reading
                    // the clock and the turn's start.)
                    let ahead = ahead.parse::<i64>().unwrap();
                    assert!(
                        ahead <= (max_wait + Duration::from_millis(1)).as_micros() as i64,
                        "its slot past its deadline: {line}"
                    );
                }
                ["refused", _, waited, retry] => {
                    turned_away += 1;
                    // Refused only when what it waited and what it was told pass its deadline.
                    let (waited, retry) = (
                        waited.parse::<u64>().unwrap(),
                        retry.parse::<u64>().unwrap(),
                    );
                    assert!(retry > 0, "{line}");
                    assert!(
                        waited + retry >= max_wait.as_micros() as u64,
                        "refused within its deadline: {line}"
                    );
                }
                _ => panic!("unexpected line {line:?}"),
            }
        }
        shares.push(sent.iter().sum::<u64>());
        per_caller.extend(sent);
    }
    let mut late: Vec<i64> = arrivals.iter().map(Arrival::late).collect();
    late.sort_unstable();
    println!(
        "arrivals {} refused {refused} turns refused {turned_away} per process {shares:?}; late (µs) p50 {} \
         p99 {} max {}",
        arrivals.len(),
        late[late.len() / 2],
        late[late.len() * 99 / 100],
        late[late.len() - 1],
    );
    // The slots, as the calls that went said them: one after another, a SLOT apart or more (exact: µs on
    // Redis's clock, and 103.125 ms is a whole number of them). None is handed out twice, none is off the
    // grid: a slot given back from the middle of the line is a hole no other call takes. The slots no call
    // went in (a call that woke past its slot's margin asked again, a pause covered the slot) are the holes.
    let mut slots: Vec<u64> = arrivals
        .iter()
        .map(|arrival| arrival.slot.expect("the call said its slot"))
        .collect();
    slots.sort_unstable();
    let slot = SLOT.as_micros() as u64;
    for pair in slots.windows(2) {
        assert!(
            pair[1] - pair[0] >= slot && (pair[1] - pair[0]) % slot == 0,
            "slots {pair:?} are not a whole number of slots apart: {arrivals:?}"
        );
    }
    let holes: u64 = slots
        .windows(2)
        .map(|pair| (pair[1] - pair[0]) / slot - 1)
        .sum();
    // No call lands before its slot, and each leaves within its slot's margin (3.125 ms) or not at all. 11
    // calls whose slots span 10 slots (1.03 s) land within a second only if the one of the earliest slot
    // arrived more than 31.25 ms after it (held up on its way, past what a margin absorbs): a 429 of the
    // upstream's fixed windows comes of nothing else.
    for arrival in &arrivals {
        assert!(arrival.late() >= 0, "before its slot: {arrival:?}");
    }
    let held_up = 10 * slot as i64 - 1_000_000;
    for (k, first) in arrivals.iter().enumerate() {
        let within: Vec<&Arrival> = arrivals[k..]
            .iter()
            .take_while(|later| later.at < first.at + Duration::from_secs(1))
            .collect();
        if within.len() > 10 {
            let earliest = within.iter().min_by_key(|arrival| arrival.slot).unwrap();
            assert!(
                earliest.late() > held_up,
                "{} calls within a second from {:?}, none {held_up} µs late: {within:?}",
                within.len(),
                first.at
            );
        }
    }
    let late_calls = arrivals.iter().filter(|a| a.late() > held_up).count() as u64;
    // The line goes round the callers in the order they asked, each asking again as it is answered: every
    // caller of every process sends as many calls as any other, give or take the round the run ended in.
    // What sends a caller to the end of the line costs it a call, and the slot it gives back may go to
    // another (two calls of spread): a 429 or a turn refused, a hole (its caller asked again). And the start:
    // each process's callers first ask over 155 ms (31 × 5 ms), so until the last has asked, the first go
    // round a line that does not hold everyone yet: a caller may start two calls ahead.
    let (fewest, most) = (
        per_caller.iter().min().unwrap(),
        per_caller.iter().max().unwrap(),
    );
    assert!(
        most - fewest <= 1 + 2 + 2 * (refused as u64 + turned_away + holes + late_calls),
        "calls per caller from {fewest} to {most}: {per_caller:?}"
    );
    // The line is never empty, so the fleet sends one call every slot: after the first second, 19 s hold
    // 184 slots (19 s / 103.125 ms), all but those a 429 costs (its own slot and the 1 s its `Retry-After`
    // pauses the fleet for: at most 11 slots), the holes, and a turn refused (its caller asks again at the
    // end of the line).
    let after_first: Vec<&Arrival> = arrivals
        .iter()
        .filter(|arrival| arrival.at >= go + Duration::from_secs(1))
        .collect();
    let admitted = after_first
        .iter()
        .filter(|arrival| !arrival.refused)
        .count();
    let slots = ((run - Duration::from_secs(1)).as_micros() / SLOT.as_micros()) as usize;
    assert!(
        admitted as u64 + 12 * refused as u64 + holes + turned_away >= slots as u64,
        "{admitted} calls admitted of {slots} slots, {refused} 429s, {holes} holes, \
         {turned_away} turns refused"
    );
}

/// A call the halving test sent, as its node saw it (µs since the Unix epoch, Redis's clock and this
/// machine's being one).
#[derive(Debug, Clone, Copy)]
struct Sent {
    node: usize,
    /// When Redis decided it, and its slot.
    decided: u64,
    slot: u64,
    /// When it left for the upstream.
    left: u64,
    /// For a 429: its `Retry-After` in seconds, and when `answered` returned (the pause then in Redis and
    /// noted on its node).
    refused: Option<(u64, u64)>,
}

/// The upstream halves its limit mid-run and answers 429 with `Retry-After: 2`: every 429 pauses every node
/// for its 2 s, and the fleet, back from the pause, sends (429s included) no more than the new limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_halves_its_limit_pauses_every_node() {
    let server = RedisServer::start();
    let upstream = Upstream::start(10).await;
    let rule = partner("out:halved:", Duration::from_secs(5));
    let log = Arc::new(Mutex::new(Vec::<Sent>::new()));
    let mut callers = Vec::new();
    for node in 0..2 {
        let limiter = server.limiter();
        limiter.ready().await.unwrap();
        for _ in 0..8 {
            let (limiter, rule, upstream) = (limiter.clone(), rule.clone(), upstream.clone());
            let log = Arc::clone(&log);
            callers.push(tokio::spawn(async move {
                let http = client();
                loop {
                    let Ok(turn) = limiter.turn(&rule, "acme").await else {
                        continue;
                    };
                    let decision = turn.decisions()[0];
                    let (decided, left) = (decision.decided_at.as_micros() as u64, wall_now());
                    let (status, slot) = (send(&http, &upstream, &turn).await, slot_of(&turn));
                    let refused = (status == 429).then(|| {
                        let answered = wall_now();
                        let arrivals = upstream.arrivals();
                        let mine = arrivals.iter().rev().find(|a| a.slot == Some(slot));
                        (mine.unwrap().retry_after, answered)
                    });
                    let sent = Sent {
                        node,
                        decided,
                        slot,
                        left,
                        refused,
                    };
                    log.lock().unwrap().push(sent);
                }
            }));
        }
    }
    // Halve the limit once the fleet has sent 15 calls at its 10 a second.
    until(Duration::from_secs(30), "15 calls sent", || async {
        upstream.arrivals().len() >= 15
    })
    .await;
    upstream.set_limit(5, 2);
    let halved = upstream.started.elapsed();
    // Run for 5 s from the first 429, and on until the last 429's pause has run out (2.2 s on; the next 429
    // needs half a second of calls at least, the fifth of a window and one more): back from a pause, the
    // fleet sends its 10 a second until the next 429, every 2.5 to 3.5 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (first, stopped) = loop {
        let arrivals = upstream.arrivals();
        let mut refusals = arrivals.iter().filter(|a| a.refused && a.at >= halved);
        let first = refusals.next().map(|a| a.at);
        let last = refusals.next_back().map(|a| a.at).or(first);
        let now = upstream.started.elapsed();
        let done = first.is_some_and(|first| now >= first + Duration::from_secs(5))
            && last.is_some_and(|last| now >= last + Duration::from_millis(2_200));
        if done || Instant::now() > deadline {
            break (first.expect("the halved limit refused a call"), now);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for caller in &callers {
        caller.abort();
    }
    let log = log.lock().unwrap().clone();
    // After every 429, no call goes in its pause (from when `answered` returned until its `Retry-After` has
    // passed since the 429 left): Redis refuses every call of the key (none decided after the pause began
    // goes in it), and a node that heard of the pause holds the slots Redis gave before (the 429's own node
    // heard before `answered` returned: none of its slots goes in it). A call of the other node, whose slot
    // came before the announcement reached it, may go: a node hears in milliseconds (one message), a second
    // at most on a loaded machine; so with a line shorter than the pause, a node that never heard would send
    // past it.
    for refusal in &log {
        let Some((retry, answered)) = refusal.refused else {
            continue;
        };
        let ends = refusal.left + retry * 1_000_000;
        for sent in log.iter().filter(|s| s.slot > answered && s.slot < ends) {
            assert!(
                sent.node != refusal.node && sent.decided < answered,
                "sent in the pause of {refusal:?}: {sent:?}"
            );
            assert!(
                sent.slot < answered + 1_000_000,
                "a node never heard of the pause of {refusal:?}: {sent:?}"
            );
        }
    }
    let arrivals: Vec<Arrival> = upstream
        .arrivals()
        .into_iter()
        .filter(|arrival| arrival.at < stopped)
        .collect();
    // The fleet came back after the first pause.
    assert!(
        arrivals
            .iter()
            .any(|arrival| arrival.at > first + Duration::from_secs(2)),
        "nothing sent after the pause: {arrivals:?}"
    );
    // From the first 429 on, the fleet sends (the 429s too) no more than the new limit a second, as the
    // guide says: 2 s of pause for each burst of at most 11 calls at 10 a second until the next 429 (a
    // window's fifth and sixth, or the rest of one and a whole next), and a call on its way.
    let after = arrivals
        .iter()
        .filter(|arrival| arrival.at >= first)
        .count();
    let seconds = (stopped - first).as_secs_f64();
    assert!(
        after as f64 <= 5.0 * seconds,
        "{after} calls sent in the {seconds:.1} s from the first 429: {arrivals:?}"
    );
}

/// Requests and tokens in one call: the tokens are charged as an estimate and settled with what the
/// answer used, the rest given back; a call the tokens cannot hold waits as long as it is told, asks again,
/// and fails past its deadline, charged nothing. On a frozen fake clock nothing refills (a token every 6 ms
/// otherwise), so every count is exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_tokens_settle_what_the_answer_did_not_use() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let requests = partner("out:llm:requests:", Duration::from_secs(2));
    let tokens = Rule::new()
        .prefix("out:llm:tokens:")
        .algorithm(Algorithm::TokenBucket)
        .max(10_000)
        .window(Duration::from_secs(60));
    let turn = limiter
        .all([(&requests, "acme", 1), (&tokens, "acme", 4_000)])
        .turn()
        .await
        .unwrap();
    assert_eq!(turn.decisions()[1].remaining, 6_000);
    turn.settle(&[1, 1_500]).await;
    let left = limiter.inspect(&tokens, "acme").await.unwrap().remaining;
    assert_eq!(left, 8_500);
    // The first call's slot is the line.
    let line = || async {
        limiter
            .inspect(&reach("out:llm:requests:"), "acme")
            .await
            .unwrap()
    };
    assert_eq!(line().await.retry_after, SLOT);
    // An estimate the tokens cannot hold within the deadline fails at once, saying how long: 500 tokens
    // short is 3 s of refill (6 ms each), past the 2 s it may wait.
    let refused = limiter
        .all([(&requests, "acme", 1), (&tokens, "acme", 9_000)])
        .turn()
        .await
        .unwrap_err();
    assert_eq!(refused.retry_after(), Duration::from_secs(3), "{refused:?}");
    // One they would hold within it waits as it is told, 200 tokens short: 1.2 s; then asks again, and, the
    // clock frozen, is told 1.2 s again, past its deadline: it fails, having waited.
    let asked = Instant::now();
    let refused = limiter
        .all([(&requests, "acme", 1), (&tokens, "acme", 8_700)])
        .turn()
        .await
        .unwrap_err();
    let waited = asked.elapsed();
    assert!(
        waited >= Duration::from_millis(1_200),
        "refused after {waited:?}"
    );
    assert_eq!(
        refused.retry_after(),
        Duration::from_millis(1_200),
        "{refused:?}"
    );
    // Nothing of the refused calls was charged: not their tokens, nor their requests' slots.
    let left = limiter.inspect(&tokens, "acme").await.unwrap().remaining;
    assert_eq!(left, 8_500);
    assert_eq!(
        line().await.retry_after,
        SLOT,
        "the first call's slot alone"
    );
}

/// Under a full line on one node, `High` callers are served before the `Normal` ones that came first, and the
/// `Normal` ones keep their order among themselves. Events order it, not sleeps: each caller joins once Redis
/// has charged the one before it (on a frozen fake clock the line reaches exactly one slot further each
/// time), and the `High` ones join just after a slot went. One thread runs every task, so a caller Redis has
/// charged takes its seat before the next one's answer is read.
#[tokio::test(flavor = "current_thread")]
async fn high_callers_go_before_normal_ones_on_the_same_node() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let rule = partner("out:priority:", Duration::from_secs(5));
    let (served, mut serving) = tokio::sync::mpsc::unbounded_channel();
    let join = |priority: Priority, name: String| {
        let (limiter, rule, served) = (limiter.clone(), rule.clone(), served.clone());
        tokio::spawn(async move {
            let turn = limiter
                .turn(&rule, "acme")
                .priority(priority)
                .await
                .unwrap();
            served.send((name, turn)).unwrap();
        });
    };
    for i in 0..12 {
        join(Priority::Normal, format!("normal {i}"));
        line_reaches(&limiter, "out:priority:", i + 1).await;
    }
    // Every normal caller is seated: wait for a slot to go.
    let mut order = Vec::new();
    while let Ok(turn) = serving.try_recv() {
        order.push(turn);
    }
    order.push(serving.recv().await.unwrap());
    for i in 0..4 {
        join(Priority::High, format!("high {i}"));
    }
    line_reaches(&limiter, "out:priority:", 16).await;
    // Every high caller is seated (some may have been served already).
    while let Ok(turn) = serving.try_recv() {
        order.push(turn);
    }
    let seated = order.len();
    while order.len() < 16 {
        order.push(serving.recv().await.unwrap());
    }
    let served: Vec<String> = order.iter().map(|(name, _)| name.clone()).collect();
    for (_, turn) in order {
        turn.settle(&[]).await;
    }
    let high = |name: &String| name.starts_with("high");
    // From when they were all seated, the high callers still waiting took the next slots, before every
    // normal one still waiting.
    let rest = &served[seated..];
    let waiting = rest.iter().filter(|name| high(name)).count();
    assert!(
        rest[..waiting].iter().all(high),
        "{seated} served before the high ones were seated: {served:?}"
    );
    // They joined last, a slot after one went, and passed normal ones: the last normal caller, whose slot
    // was most of a second on, went after them all (the high ones join in a few round trips).
    let last_normal = served.iter().position(|name| name == "normal 11").unwrap();
    assert!(
        served[..last_normal]
            .iter()
            .filter(|name| high(name))
            .count()
            == 4,
        "{served:?}"
    );
    // The normal callers keep their order among themselves.
    let normal: Vec<_> = served
        .iter()
        .filter(|name| name.starts_with("normal"))
        .cloned()
        .collect();
    let expected: Vec<_> = (0..12).map(|i| format!("normal {i}")).collect();
    assert_eq!(normal, expected);
}

/// Callers that give up waiting give their slots back: after 25 leave, the line holds only the slots of the
/// calls that went, and the next call's slot follows theirs. On a frozen fake clock nothing leaks, so the
/// line's length is exact: with every slot kept it would stay 25 slots long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_that_give_up_give_their_slots_back() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let rule = partner("out:gave-up:", Duration::from_secs(5));
    let mut callers = Vec::new();
    for _ in 0..25 {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        callers.push(tokio::spawn(async move {
            tokio::time::timeout(Duration::from_millis(300), limiter.turn(&rule, "acme"))
                .await
                .map(|turn| turn.map(drop))
        }));
    }
    let mut left = 0;
    for caller in callers {
        if caller.await.unwrap().is_err() {
            left += 1;
        }
    }
    assert!(left >= 20, "{left} callers gave up");
    // The slots the ones that left held are given back on tasks of their own: the line comes down to the
    // slots of the calls that went (a dropped turn keeps its charge).
    let went = 25 - left;
    line_reaches(&limiter, "out:gave-up:", went).await;
    let turn = limiter.turn(&rule, "acme").await.unwrap();
    assert_eq!(turn.decisions()[0].delay, SLOT * went);
    turn.settle(&[]).await;
}

/// A caller that gives up from the middle of the line gives back the line's latest slot, and the calls behind
/// it move up: no two calls share a slot, and none waits behind a hole (across nodes, see the next test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_given_back_from_the_middle_of_the_line_is_not_handed_out_twice() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let rule = partner("out:middle:", Duration::from_secs(5));
    let first = limiter.turn(&rule, "acme").await.unwrap();
    let wait = |limiter: &Limiter| {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        tokio::spawn(async move { limiter.turn(&rule, "acme").await })
    };
    // The second call holds the slot at 101 ms, the third the one at 202 ms; the second leaves.
    let second = wait(&limiter);
    line_reaches(&limiter, "out:middle:", 2).await;
    let third = wait(&limiter);
    line_reaches(&limiter, "out:middle:", 3).await;
    second.abort();
    // The line's latest slot goes back (on a task of its own): the line ends two slots ahead again.
    line_reaches(&limiter, "out:middle:", 2).await;
    let fourth = limiter.turn(&rule, "acme").await.unwrap();
    let third = third.await.unwrap().unwrap();
    assert_eq!(
        (third.decisions()[0].delay, fourth.decisions()[0].delay),
        (SLOT, SLOT * 2),
        "the third moved up into the second's slot, and the fourth came after it"
    );
    drop((first, third, fourth));
}

/// Across nodes, a slot given back from the middle of the fleet's line is a hole no other call gets (the call
/// after it keeps its slot, and so may leave then): the next call comes after the line's end. Once every slot
/// after the hole has gone back too, the line's end moves past it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_given_back_from_the_middle_of_the_fleets_line_is_a_hole() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let (a, b) = (
        server.limiter_with_clock(&clock),
        server.limiter_with_clock(&clock),
    );
    let rule = partner("out:hole:", Duration::from_secs(5));
    let wait = |limiter: &Limiter| {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        tokio::spawn(async move { limiter.turn(&rule, "acme").await })
    };
    let first = a.turn(&rule, "acme").await.unwrap();
    // Node a's second call holds the slot at one SLOT, node b's third the one at two; the second leaves.
    let second = wait(&a);
    line_reaches(&a, "out:hole:", 2).await;
    let third = wait(&b);
    line_reaches(&a, "out:hole:", 3).await;
    second.abort();
    // Its slot goes back on a task of its own: a hole, recorded in the line's state.
    let mut redis = server.connection();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("out:hole:*")
            .query(&mut redis)
            .unwrap();
        let states: Vec<String> = keys
            .iter()
            .filter_map(|key| redis::cmd("GET").arg(key).query(&mut redis).ok())
            .collect();
        if states.iter().any(|state| state.contains('|')) {
            break;
        }
        assert!(Instant::now() < deadline, "no hole recorded: {states:?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    line_reaches(&a, "out:hole:", 3).await;
    let fourth = wait(&a);
    line_reaches(&a, "out:hole:", 4).await;
    // The third and the fourth leave: the line's end moves back past the hole, to the first's slot.
    fourth.abort();
    third.abort();
    line_reaches(&a, "out:hole:", 1).await;
    let fifth = b.turn(&rule, "acme").await;
    assert_eq!(
        fifth.unwrap().decisions()[0].delay,
        SLOT,
        "the fifth follows the first"
    );
    drop(first);
}

/// Redis killed while callers wait: each is decided by its `on_error` within its deadline, and the default
/// (`open`) releases no more than this node's share at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_killed_waiting_callers_keep_the_nodes_share() {
    let mut server = RedisServer::start();
    let limiter = server
        .builder()
        .deadline(Duration::from_millis(100))
        .build()
        .unwrap();
    limiter.ready().await.unwrap();
    let max_wait = Duration::from_secs(2);
    let rule = partner("out:killed:", max_wait);
    // Fill the line, then kill Redis: 30 more callers come.
    for _ in 0..15 {
        limiter.turn(&rule, "acme").await.unwrap().settle(&[]).await;
    }
    server.kill();
    let mut callers = Vec::new();
    for _ in 0..30 {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        callers.push(tokio::spawn(async move {
            let (asked, asked_wall) = (Instant::now(), wall_now());
            let turn = limiter.turn(&rule, "acme").await;
            let waited = asked.elapsed();
            let turn = turn.map(|turn| (turn.decisions()[0].degraded, slot_of(&turn)));
            (asked_wall, waited, turn)
        }));
    }
    let mut slots = Vec::new();
    for caller in callers {
        let (asked, waited, turn) = caller.await.unwrap();
        // A turn waits for its slot, never past its deadline (2 s), or is refused at once; a last ask of Redis
        // begun before the deadline may take its own (100 ms). Past that, only how late a timer wakes its
        // task: 300 ms for a loaded two-core machine.
        assert!(waited <= Duration::from_millis(2_400), "{waited:?}");
        if let Ok((degraded, slot)) = turn {
            assert!(degraded);
            // Exactly: its slot (on this node's clock) is within its deadline from when it asked (the
            // millisecond covers the µs between reading the clock and the turn's start).
            assert!(
                slot <= asked + (max_wait + Duration::from_millis(1)).as_micros() as u64,
                "its slot {} µs after it asked",
                slot - asked
            );
            slots.push(slot);
        }
    }
    // Alone, the node's share is the whole limit: the slots it gives are still 101 ms apart, the window and
    // its send tolerance over 10. Exact but for how a slot is read back here: a decision's time and the `now`
    // its delay was counted from are two readings of this node's clock, µs apart on a loaded machine (seen:
    // 8 µs), so a millisecond, a tenth of the send tolerance, is allowed.
    assert!(!slots.is_empty());
    slots.sort_unstable();
    for pair in slots.windows(2) {
        assert!(
            pair[1] - pair[0] >= (SLOT - Duration::from_millis(1)).as_micros() as u64,
            "slots {} µs apart: {slots:?}",
            pair[1] - pair[0]
        );
    }
}

/// What an upstream taught is visible: `inspect` shows the pause and its cause on every node, and a caller
/// on another node is not sent before it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_is_seen_by_every_node_and_inspected_with_its_cause() {
    let server = RedisServer::start();
    let (one, two) = (server.limiter(), server.limiter());
    two.ready().await.unwrap();
    // One call a second (slots 1.01 s apart), so that the pause below starts a second before the waiting
    // caller's slot however late this machine runs the test's own steps.
    let rule = Rule::new()
        .prefix("out:seen:")
        .algorithm(Algorithm::LeakyBucket)
        .max(1)
        .window(Duration::from_secs(1))
        .max_wait(Duration::from_secs(5));
    // One node goes now and holds the next slot; the other node's caller waits for the slot after it.
    one.turn(&rule, "acme").await.unwrap().settle(&[]).await;
    let turn = one.turn(&rule, "acme").await.unwrap();
    let waiting = {
        let (two, rule) = (two.clone(), rule.clone());
        tokio::spawn(async move {
            let turn = two.turn(&rule, "acme").await.unwrap();
            (Instant::now(), turn.waited())
        })
    };
    // Time for it to ask (if it asks only after the pause, the pause holds it all the same).
    tokio::time::sleep(Duration::from_millis(30)).await;
    let paused_at = Instant::now();
    let pause = turn
        .answered(429, [("retry-after", "2"), ("content-type", "text/plain")])
        .await
        .unwrap();
    assert_eq!(pause, Some(Duration::from_secs(2)));
    // The other node hears of the pause in milliseconds (Redis's channel).
    let mut inspected = two.inspect(&rule, "acme").await.unwrap();
    for _ in 0..50 {
        if inspected.paused.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        inspected = two.inspect(&rule, "acme").await.unwrap();
    }
    assert_eq!(inspected.paused, Some(429));
    assert!(
        inspected.blocked_for > Duration::from_millis(1_800),
        "{inspected:?}"
    );
    assert!(!inspected.banned);
    let listed = two.bans("").await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|b| (b.key.as_str(), b.paused))
            .collect::<Vec<_>>(),
        [("acme", Some(429))]
    );
    let (went, _) = waiting.await.unwrap();
    assert!(
        went >= paused_at + Duration::from_millis(1_900),
        "{:?}",
        went - paused_at
    );
    // Quota fields that leave nothing pause the key as well, with 0 for their cause.
    let turn = one.turn(&rule, "other").await.unwrap();
    let pause = turn
        .answered(200, [("RateLimit", "\"default\";r=0;t=1")])
        .await
        .unwrap();
    assert_eq!(pause, Some(Duration::from_secs(1)));
    assert_eq!(one.inspect(&rule, "other").await.unwrap().paused, Some(0));
    // An answer with calls left teaches nothing.
    let calm = one.turn(&rule, "calm").await.unwrap();
    assert_eq!(
        calm.answered(200, [("x-ratelimit-remaining", "7")])
            .await
            .unwrap(),
        None
    );
}

/// In memory, a turn waits, pauses and settles as with Redis.
#[tokio::test]
async fn in_memory_a_turn_waits_and_a_pause_holds() {
    let limiter = Limiter::in_memory();
    let rule = partner("out:memory:", Duration::from_secs(1));
    let first = limiter.turn(&rule, "acme").await.unwrap();
    let second = limiter.turn(&rule, "acme").await.unwrap();
    assert!(second.waited() >= Duration::from_millis(90), "{second:?}");
    second.answered(503, [("retry-after", "5")]).await.unwrap();
    // Paused 5 s: past the 1 s a call may wait, it is refused at once, saying how long.
    let refused = limiter.turn(&rule, "acme").await.unwrap_err();
    assert!(
        refused.retry_after() > Duration::from_secs(4),
        "{refused:?}"
    );
    assert_eq!(
        limiter.inspect(&rule, "acme").await.unwrap().paused,
        Some(503)
    );
    first.settle(&[]).await;
}

/// The attribute on the client function waits in the same line, and a call dropped while it waits gives its
/// slot back: after 25 callers give up, the next waits for no one.
// `mode = wait` needs no `algorithm`: it is the leaky bucket's.
#[limiter_runtime::rate_limit(prefix = "out:attribute:", key = org, window = 1, max = 10, mode = wait, max_wait = "5s")]
async fn call_partner(org: &str) -> Result<(), limiter_runtime::RateLimited> {
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attributes_callers_that_give_up_give_their_slots_back() {
    let server = RedisServer::start();
    // On a frozen fake clock nothing leaks: the line's length is exact (see the test above).
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    // The attribute's slots are its window over its max: 100 ms (it adds no send tolerance).
    let slot = Duration::from_millis(100);
    limiter
        .scope(async {
            let mut callers = Vec::new();
            for _ in 0..25 {
                let limiter = limiter.clone();
                callers.push(tokio::spawn(async move {
                    let call = limiter.scope(call_partner("acme"));
                    tokio::time::timeout(Duration::from_millis(300), call).await
                }));
            }
            let mut left = 0;
            for caller in callers {
                if caller.await.unwrap().is_err() {
                    left += 1;
                }
            }
            assert!(left >= 20, "{left} callers gave up");
            // The line comes down to the slots of the calls that went; the next call takes the one after.
            let went = 25 - left;
            line_reaches_by(&limiter, "out:attribute:", slot * went).await;
            let asked = Instant::now();
            call_partner("acme").await.unwrap();
            assert!(asked.elapsed() >= slot * went, "{:?}", asked.elapsed());
            line_reaches_by(&limiter, "out:attribute:", slot * (went + 1)).await;
        })
        .await;
}

/// The client layer: requests through a hyper-util client wait their turn (spaced at the upstream's rate,
/// none refused), their tokens settle to what the answer says, and a 429 pauses the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_layer_waits_sends_learns_and_settles() {
    use limiter_runtime::tower::{OutboundError, OutboundLayer};
    use tower_service::Service;

    let server = RedisServer::start();
    let limiter = server.limiter();
    let upstream = Upstream::start(10).await;
    // 10,000 tokens in 100 days: one refills every 864 s, none while the test runs, so what is left is
    // exact (the slots stay on the real clock, their spacing checked at the upstream).
    let tokens = Rule::new()
        .prefix("out:layer:tokens:")
        .algorithm(Algorithm::TokenBucket)
        .max(10_000)
        .window(Duration::from_secs(100 * 86_400));
    let layer = OutboundLayer::by_host(&limiter, partner("out:layer:", Duration::from_secs(5)))
        .tokens(
            tokens.clone(),
            |_| 100,
            |answer| {
                answer
                    .headers
                    .get("x-tokens-used")?
                    .to_str()
                    .ok()?
                    .parse()
                    .ok()
            },
        );
    let client = tower_layer::Layer::layer(&layer, client());
    let asked = upstream.started.elapsed();
    let mut callers = Vec::new();
    for _ in 0..15 {
        let (mut client, uri) = (client.clone(), format!("{}/acme", upstream.url));
        callers.push(tokio::spawn(async move {
            let request = http::Request::get(uri).body(Body::empty()).unwrap();
            std::future::poll_fn(|cx| client.poll_ready(cx))
                .await
                .unwrap();
            client.call(request).await.map(|response| response.status())
        }));
    }
    for caller in callers {
        assert_eq!(caller.await.unwrap().unwrap(), StatusCode::OK);
    }
    // Spaced at the upstream's rate: none refused (at most 10 in any of its seconds), and none before its
    // slot, the first at once and each a slot (101 ms) after the one before: the k-th lands k slots after
    // they asked at the earliest, exactly, since no sleep ends early (how late each lands after its slot is
    // the machine's, which the send tolerance covers up to 10 ms).
    let arrivals = upstream.arrivals();
    assert_eq!(arrivals.len(), 15);
    for (k, arrival) in arrivals.iter().enumerate() {
        assert!(
            arrival.at >= asked + SLOT * k as u32,
            "call {k} before its slot: {arrivals:?}"
        );
    }
    // Each reserved 100 tokens and used 10: the rest came back.
    let left = limiter
        .inspect(&tokens, "127.0.0.1")
        .await
        .unwrap()
        .remaining;
    assert_eq!(left, 9_850);
    // The upstream refuses: the host pauses for its Retry-After, and a request that cannot wait that long is
    // refused before it is sent.
    upstream.set_limit(0, 30);
    let mut client = client.clone();
    let uri = format!("{}/acme", upstream.url);
    let answer = client
        .call(http::Request::get(&uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
    let refused = client
        .call(http::Request::get(&uri).body(Body::empty()).unwrap())
        .await;
    match refused {
        Err(OutboundError::Limited(limited)) => {
            assert!(
                limited.retry_after() > Duration::from_secs(25),
                "{limited:?}"
            )
        }
        other => panic!("{:?}", other.map(|response| response.status())),
    }
    assert_eq!(
        upstream.arrivals().len(),
        16,
        "the refused request was not sent"
    );
}

/// A call that wakes past its slot's margin (here: the only thread stalled 150 ms, a slot 103 ms away) does
/// not go late, where it would land closer than the spacing to the next slot's call: its slot goes back and
/// it asks again, and goes a slot after it asked again. So its turn comes after the stall and one more
/// slot, not at the stall's end.
#[tokio::test(flavor = "current_thread")]
async fn a_call_that_wakes_past_its_margin_asks_again() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let rule = partner("out:late:", Duration::from_secs(5));
    let first = limiter.turn(&rule, "acme").await.unwrap();
    let asked = Instant::now();
    let second = {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        tokio::spawn(async move { limiter.turn(&rule, "acme").await })
    };
    // The second joins the line (one slot ahead: the first's), then the thread stalls past its slot.
    line_reaches(&limiter, "out:late:", 2).await;
    std::thread::sleep(Duration::from_millis(150));
    let second = second.await.unwrap().unwrap();
    let waited = asked.elapsed();
    assert!(
        waited >= Duration::from_millis(150) + SLOT,
        "it went after {waited:?}: late, at the stall's end"
    );
    drop((first, second));
}
