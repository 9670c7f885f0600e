//! Degraded mode's logging: the first failure and the recovery are logged once each, and every degraded
//! decision is counted.

use std::time::Duration;

use limiter_runtime::{Limiter, OnError, Rule};
use tests::logs::Captured;
use tests::{until_redis_decides, RedisServer};
use tracing::instrument::WithSubscriber;

fn limiter(server: &RedisServer) -> Limiter {
    Limiter::builder()
        .redis(server.url())
        .deadline(Duration::from_millis(50))
        .on_error(OnError::Open)
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_first_failure_and_the_recovery_are_logged_once_each_and_every_degraded_decision_counted(
) {
    let mut server = RedisServer::start();
    let limiter = limiter(&server);
    let rule = Rule::new().max(1_000);
    let logs = Captured::default();
    async {
        assert!(!limiter.check(&rule, "k").await.degraded);
        server.kill();
        let mut degraded = 0;
        for _ in 0..200 {
            degraded += u64::from(limiter.check(&rule, "k").await.degraded);
        }
        assert_eq!(degraded, 200);
        assert_eq!(limiter.stats().degraded, 200);
        server.restart();
        until_redis_decides(&limiter, &rule).await;
        for _ in 0..50 {
            assert!(!limiter.check(&rule, "k").await.degraded);
        }
    }
    .with_subscriber(logs.subscriber())
    .await;
    let logs = logs.text();
    assert_eq!(logs.matches("WARN").count(), 2, "{logs}");
    assert_eq!(
        logs.matches("Redis failed; deciding in degraded mode")
            .count(),
        1,
        "{logs}"
    );
    assert_eq!(logs.matches("Redis answers again").count(), 1, "{logs}");
}
