//! A bad key beside healthy ones (it holds a value of another type: `WRONGTYPE`): in one batch, the batch's
//! other calls are decided by Redis exactly and the bad key's by its own `on_error`; in one stacked call, the
//! call is decided by `on_error` and no limit keeps a charge, though Redis may have charged a limit before it
//! met the bad key. (Apart from `key_faults.rs`, which captures the log process-wide and counts its lines.)

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures::future::join_all;
use limiter_runtime::{Algorithm, Decision, FakeClock, Limiter, OnError, Rule};
use tests::{Monitor, RedisServer, ALGORITHMS, PATIENT};

/// The bad keys' limits: a sliding log on a string, and a fixed window on a list (each `on_error` closed).
fn bad_rules(server: &RedisServer) -> [Rule; 2] {
    let mut redis = server.connection();
    redis::cmd("SET")
        .arg("bad:log:victim")
        .arg("not a limit's state")
        .query::<()>(&mut redis)
        .unwrap();
    redis::cmd("RPUSH")
        .arg("bad:window:victim")
        .arg("not a limit's state")
        .query::<()>(&mut redis)
        .unwrap();
    let window = Duration::from_secs(3_600);
    [
        Rule::new()
            .prefix("bad:log:")
            .algorithm(Algorithm::SlidingLog)
            .window(window)
            .on_error(OnError::Closed),
        Rule::new()
            .prefix("bad:window:")
            .algorithm(Algorithm::FixedWindow)
            .window(window)
            .on_error(OnError::Closed),
    ]
}

/// The value of another type is still there, as written: nothing wrote over it.
fn untouched(server: &RedisServer) {
    let mut redis = server.connection();
    let value: String = redis::cmd("GET")
        .arg("bad:log:victim")
        .query(&mut redis)
        .unwrap();
    assert_eq!(value, "not a limit's state");
    let list: Vec<String> = redis::cmd("LRANGE")
        .arg("bad:window:victim")
        .arg(0)
        .arg(-1)
        .query(&mut redis)
        .unwrap();
    assert_eq!(list, ["not a limit's state"]);
}

/// A call waiting to be polled: its decisions.
type Pending<'a> = Pin<Box<dyn Future<Output = Vec<Decision>> + 'a>>;

/// `rule`'s call on `key`, as a future not yet polled.
fn one<'a>(limiter: &'a Limiter, rule: &'a Rule, key: &'static str) -> Pending<'a> {
    Box::pin(async move { vec![limiter.check(rule, key).await] })
}

/// A batch holding the bad keys beside healthy ones, made for certain: Redis frozen, four calls go first
/// and fill the line, and every call after them, polled once, joins the batch gathering behind them (a
/// call joins its line when first polled); Redis thawed, the batch goes as one script call, which MONITOR
/// shows naming the bad keys and the healthy ones. The healthy calls are each decided by Redis exactly (5
/// calls on a limit of 3 admit the first 3, and it counts 3), the bad keys' by their `on_error` (closed:
/// refused, degraded), the breaker closed. A stacked call in the batch whose second limit's key is bad is
/// refused and leaves no charge on its first limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_key_in_a_batch_leaves_the_batchs_other_calls_exact() {
    let server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .batch_across_keys(true)
        .deadline(PATIENT)
        .deny_cache(false)
        .build()
        .unwrap();
    let [log, window] = bad_rules(&server);
    let hour = Duration::from_secs(3_600);
    let lead = Rule::new().prefix("lead:").max(100).window(hour);
    let good = Rule::new().prefix("good:").max(3).window(hour);
    let stacked = Rule::new()
        .prefix("stacked:")
        .algorithm(Algorithm::FixedWindow)
        .max(10)
        .window(hour);
    // Connected, the scripts loaded (a call's own, and the one of batches and stacked calls).
    assert!(limiter.check(&lead, "warm").await.allowed);
    assert!(
        limiter
            .all([(&lead, "warm"), (&good, "warm")])
            .check()
            .await[0]
            .allowed
    );
    let monitor = Monitor::start(server.port());

    let mut calls: Vec<Pending<'_>> = (0..4).map(|_| one(&limiter, &lead, "k")).collect();
    // The batch, in order: good:a five times, good:b twice, each bad key once, and the stacked call.
    for (rule, key) in [
        (&good, "a"),
        (&log, "victim"),
        (&good, "a"),
        (&good, "b"),
        (&window, "victim"),
        (&good, "a"),
        (&good, "a"),
        (&good, "b"),
        (&good, "a"),
    ] {
        calls.push(one(&limiter, rule, key));
    }
    calls.push(Box::pin(async {
        limiter
            .all([(&stacked, "s"), (&log, "victim")])
            .check()
            .await
            .to_vec()
    }));

    server.pause();
    for call in &mut calls {
        assert!(
            futures::poll!(call.as_mut()).is_pending(),
            "Redis is frozen"
        );
    }
    server.resume();
    let decided = join_all(calls).await;

    // The batch: a script call of its own behind the first four, carrying every call after them.
    let lines = monitor.take_lines();
    let batch: Vec<&String> = lines
        .iter()
        .filter(|line| !line.contains(" lua]") && line.contains("\"good:b\""))
        .collect();
    assert_eq!(batch.len(), 1, "{lines:#?}");
    for key in [
        "good:a",
        "good:b",
        "bad:log:victim",
        "bad:window:victim",
        "stacked:s",
    ] {
        assert!(
            batch[0].contains(&format!("\"{key}\"")),
            "{key}: {batch:#?}"
        );
    }

    let decision = |i: usize| &decided[4 + i][0];
    assert!(decided[..4]
        .iter()
        .flatten()
        .all(|d| d.allowed && !d.degraded));
    let a: Vec<bool> = [0, 2, 5, 6, 8].map(|i| decision(i).allowed).to_vec();
    assert_eq!(a, [true, true, true, false, false], "good:a, in order");
    for i in [0, 2, 5, 6, 8, 3, 7] {
        assert!(!decision(i).degraded, "{:?}", decision(i));
    }
    assert!(decision(3).allowed && decision(7).allowed, "good:b");
    for i in [1, 4] {
        assert!(
            !decision(i).allowed && decision(i).degraded,
            "{:?}",
            decision(i)
        );
    }
    let stacked_call = &decided[13];
    assert!(
        !stacked_call.iter().all(|d| d.allowed) && stacked_call[1].degraded,
        "{stacked_call:?}"
    );
    assert!(!limiter.stats().breaker_open);

    // Counted exactly: each log holds what was admitted, and the stacked call's first limit kept nothing.
    let mut redis = server.connection();
    assert_eq!(tests::logged_calls(&mut redis, "good:a"), 3);
    assert_eq!(tests::logged_calls(&mut redis, "good:b"), 2);
    assert_eq!(tests::logged_calls(&mut redis, "lead:k"), 4);
    assert_eq!(
        limiter.check(&stacked, "s").await.remaining,
        9,
        "the refused stacked call kept a charge"
    );
    untouched(&server);
}

/// A stacked call whose second limit's key is bad, for every algorithm of its first limit and both bad
/// keys: Redis charged the first limit before it met the bad key; the call is decided by `on_error`
/// (closed: refused), and the first limit keeps no charge: on a frozen clock, a call of it alone after is
/// decided exactly as the first call on a fresh key. A permit in flight taken before the bad key is given
/// back too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stacked_call_on_a_bad_key_leaves_no_charge_on_its_other_limits() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server
        .builder()
        .clock(clock.clone())
        .deadline(PATIENT)
        .deny_cache(false)
        .build()
        .unwrap();
    let bad = bad_rules(&server);
    let seen = |d: &Decision| {
        (
            d.allowed,
            d.remaining,
            d.retry_after,
            d.reset_after,
            d.delay,
        )
    };
    for algorithm in ALGORITHMS {
        for (b, bad) in bad.iter().enumerate() {
            let first = Rule::new()
                .prefix(format!("first:{algorithm:?}:{b}:"))
                .algorithm(algorithm)
                .max(5)
                .window(Duration::from_secs(3_600));
            let [kept, refused] = limiter.all([(&first, "k"), (bad, "victim")]).check().await;
            assert!(
                refused.degraded && !refused.allowed,
                "{algorithm:?}: {refused:?}"
            );
            assert!(!kept.allowed || kept.degraded, "{algorithm:?}: {kept:?}");
            let alone = limiter.check(&first, "k").await;
            let fresh = limiter.check(&first, "fresh").await;
            assert!(alone.allowed && !alone.degraded, "{algorithm:?}: {alone:?}");
            assert_eq!(
                seen(&alone),
                seen(&fresh),
                "{algorithm:?} before bad key {b}: the refused call kept a charge"
            );
        }
    }
    let flight = Rule::new().prefix("first:flight:").in_flight(1);
    let [_, refused] = limiter
        .all([(&flight, "k"), (&bad[0], "victim")])
        .check()
        .await;
    assert!(refused.degraded && !refused.allowed);
    let mut redis = server.connection();
    let held: u64 = redis::cmd("ZCARD")
        .arg("first:flight:k")
        .query(&mut redis)
        .unwrap();
    assert_eq!(held, 0, "a permit kept for a refused call");
    drop(limiter.acquire(&flight, "k").await.unwrap());
    assert!(!limiter.stats().breaker_open);
    untouched(&server);
}
