//! One key's fault stays that key's: a key Redis cannot decide (it holds a value of another type, or one the
//! script cannot read) is decided by its own `on_error`, while Redis keeps deciding every other limit exactly,
//! the breaker closed. (A test binary of its own: it captures the log process-wide.)

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use limiter_runtime::{Algorithm, OnError, Reason, Rule};
use tests::logs::Captured;
use tests::RedisServer;

/// Callers flooding the bad key, and how many calls each makes.
const FLOODERS: usize = 64;
const FLOOD: usize = 40;
/// The healthy limits: each key's max, and how many calls each makes.
const MAX: u64 = 20;
const CALLS: usize = 50;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_on_one_bad_key_leaves_every_other_limit_exact() {
    let logs = Captured::default();
    tracing::subscriber::set_global_default(logs.subscriber()).unwrap();
    let server = RedisServer::start();
    let limiter = server
        .builder()
        .deadline(Duration::from_secs(2))
        .on_error(OnError::Open)
        .build()
        .unwrap();
    let window = Duration::from_secs(3600);
    // Foreign values where two limits keep their state (WRONGTYPE): a string where a sliding log keeps a sorted
    // set, and a list where a fixed window keeps a hash.
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
    let bad = [
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
    ];
    let good: Vec<Rule> = [Algorithm::SlidingLog, Algorithm::FixedWindow]
        .into_iter()
        .map(|algorithm| {
            Rule::new()
                .prefix(format!("good:{algorithm:?}:"))
                .algorithm(algorithm)
                .max(MAX)
                .window(window)
        })
        .collect();
    let (bad, good) = (Arc::new(bad), Arc::new(good));

    let flood = (0..FLOODERS).map(|task| {
        let (limiter, bad) = (limiter.clone(), Arc::clone(&bad));
        tokio::spawn(async move {
            for _ in 0..FLOOD {
                let decision = limiter.check(&bad[task % 2], "victim").await;
                // Decided by its own on_error (closed): refused, as Redis being unavailable for it.
                assert!(!decision.allowed && decision.degraded, "{decision:?}");
                let refused = limiter.enforce(&bad[task % 2], "victim").await.unwrap_err();
                assert_eq!(refused.reason(), Reason::Unavailable);
            }
        })
    });
    let healthy = (0..8).map(|task| {
        let (limiter, good) = (limiter.clone(), Arc::clone(&good));
        tokio::spawn(async move {
            let mut admitted = 0;
            for _ in 0..CALLS {
                let decision = limiter.check(&good[task % 2], format!("k{task}")).await;
                assert!(!decision.degraded, "{decision:?}");
                admitted += u64::from(decision.allowed);
                tokio::task::yield_now().await;
            }
            admitted
        })
    });
    let (flooded, admitted) = tokio::join!(join_all(flood), join_all(healthy));
    flooded.into_iter().for_each(Result::unwrap);
    for admitted in admitted {
        assert_eq!(admitted.unwrap(), MAX, "a healthy key's count");
    }
    assert!(!limiter.stats().breaker_open);
    // The foreign values are as they were: nothing was written over them.
    let value: String = redis::cmd("GET")
        .arg("bad:log:victim")
        .query(&mut redis)
        .unwrap();
    assert_eq!(value, "not a limit's state");

    // One warning for the whole flood (at most once a minute), none saying that Redis failed.
    let logs = logs.text();
    let warnings: Vec<&str> = logs.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(warnings.len(), 1, "{logs}");
    assert!(
        warnings[0].contains("a fault of the key, not of Redis"),
        "{logs}"
    );
    assert!(warnings[0].contains("victim"), "{logs}");
    assert!(
        !logs.contains("Redis failed; deciding in degraded mode"),
        "{logs}"
    );
}
