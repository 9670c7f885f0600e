//! When Redis fails or is slow, annotated calls go ahead (fail open), within the deadline, and say so.

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use limiter_runtime::{rate_limit, Limiter, RateLimited, Rule};
use tests::logs::Captured;
use tests::RedisServer;
use tracing::instrument::WithSubscriber;

/// Long enough that a call costing two deadlines cannot hide in the margin below.
const DEADLINE: Duration = Duration::from_millis(250);
/// Scheduling slack on a shared two-core machine: under one deadline, so "at most one deadline" is what is
/// tested, not two.
const MARGIN: Duration = Duration::from_millis(100);

#[rate_limit(key = id, max = 1)]
async fn fetch(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::test]
async fn a_dead_redis_lets_calls_through_and_says_why() {
    let mut server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .deadline(DEADLINE)
        .build()
        .unwrap();
    let logs = Captured::default();
    async {
        assert!(limiter.scope(fetch(1)).await.is_ok());
        assert!(
            limiter.scope(fetch(1)).await.is_err(),
            "Redis is up: the limit holds"
        );
        server.kill();
        for _ in 0..20 {
            // Key 2 was never limited (key 1 still is, in this node's deny cache: Redis already said so).
            let started = Instant::now();
            assert_eq!(limiter.scope(fetch(2)).await.unwrap(), 2);
            assert!(
                started.elapsed() < DEADLINE + MARGIN,
                "{:?}",
                started.elapsed()
            );
        }
        let decision = limiter.check(&Rule::new(), "plain").await;
        assert!(decision.allowed && decision.degraded);
    }
    .with_subscriber(logs.subscriber())
    .await;
    let logs = logs.text();
    assert!(logs.contains("WARN"), "{logs}");
    assert!(logs.contains("fail open"), "{logs}");
    assert!(
        logs.contains(r#"key="rate_limit:2""#),
        "the event names the key: {logs}"
    );
    assert!(logs.contains("cause="), "the event names the cause: {logs}");
}

#[tokio::test]
async fn a_hung_redis_costs_one_deadline_and_the_timed_out_call_is_not_retried() {
    let server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .deadline(DEADLINE)
        .build()
        .unwrap();
    let rule = Rule::new().max(5);
    // Connect and load the script first, so the paused call is exactly one EVALSHA.
    assert!(limiter.check(&rule, "warm").await.allowed);

    server.pause();
    let logs = Captured::default();
    let started = Instant::now();
    let decision = limiter
        .check(&rule, "k")
        .into_future()
        .with_subscriber(logs.subscriber())
        .await;
    let elapsed = started.elapsed();
    server.resume();

    assert!(decision.allowed && decision.degraded);
    assert!(
        elapsed >= DEADLINE && elapsed < DEADLINE + MARGIN,
        "{elapsed:?}"
    );
    assert!(logs.text().contains("deadline"), "{}", logs.text());

    // The EVALSHA sent before the deadline runs once Redis is back (within 5 s): once, never twice.
    let mut redis = server.connection();
    let waited = Instant::now();
    while tests::logged_calls(&mut redis, "rate_limit:k") == 0 {
        assert!(
            waited.elapsed() < Duration::from_secs(5),
            "the paused call never ran"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(tests::logged_calls(&mut redis, "rate_limit:k"), 1);
    // And the limiter decides from Redis again.
    let decision = limiter.check(&rule, "k").await;
    assert!(!decision.degraded);
    assert_eq!(decision.remaining, 3);
}

#[tokio::test]
async fn redis_restarted_is_used_again_without_user_action() {
    let mut server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .deadline(DEADLINE)
        .build()
        .unwrap();
    let rule = Rule::new().max(5);
    assert!(!limiter.check(&rule, "k").await.degraded);
    server.restart();
    // The connection drops with the old server; it is remade and the script reloaded (NOSCRIPT) on its own.
    let started = Instant::now();
    loop {
        let decision = limiter.check(&rule, "k").await;
        if !decision.degraded {
            assert_eq!(decision.remaining, 4, "the restarted Redis is empty");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "still degraded after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
