//! The deny cache against a real Redis: an abusive key hammered by 64 tasks costs Redis a few calls per retry
//! period, not one per request; the limit still holds exactly; an override clears what the cache knew.

use std::time::{Duration, Instant};

use futures::future::join_all;
use limiter_runtime::{Algorithm, Limiter, Override, Rule};
use tests::RedisServer;

/// 64 tasks calling one key as fast as they can for `run_for`: (decisions, admissions).
async fn hammer(limiter: &Limiter, rule: &Rule, run_for: Duration) -> (u64, u64) {
    let tasks = (0..64).map(|_| {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let (mut decisions, mut admitted) = (0, 0);
            while started.elapsed() < run_for {
                let decision = limiter.check(&rule, "abuser").await;
                decisions += 1;
                admitted += u64::from(decision.allowed);
                if decisions % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            (decisions, admitted)
        })
    });
    join_all(tasks)
        .await
        .into_iter()
        .map(Result::unwrap)
        .fold((0, 0), |(d, a), (dd, aa)| (d + dd, a + aa))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abusive_key_costs_redis_a_few_calls_per_retry_period() {
    let server = RedisServer::start();
    for algorithm in [
        Algorithm::FixedWindow,
        Algorithm::TokenBucket,
        Algorithm::SlidingLog,
    ] {
        let limiter = server.limiter();
        let rule = Rule::new()
            .algorithm(algorithm)
            .max(5)
            .window(Duration::from_millis(500))
            .prefix(format!("{algorithm:?}:"));
        // The first moment, before the cache knows anything, every task asks Redis once: warm up first.
        hammer(&limiter, &rule, Duration::from_millis(100)).await;
        let before = server.calls("evalsha");
        let (decisions, admitted) = hammer(&limiter, &rule, Duration::from_millis(1_500)).await;
        let calls = server.calls("evalsha") - before;
        // 1.5 s of a 5-per-500-ms limit: about 15 admissions, exactly as without the cache.
        assert!(
            (10..=20).contains(&admitted),
            "{algorithm:?}: {admitted} admitted"
        );
        // Each admission is one call, and each retry period costs a denial or so more.
        assert!(
            calls <= admitted + 40,
            "{algorithm:?}: {calls} Redis calls for {decisions} decisions"
        );
        assert!(
            decisions > 50 * calls,
            "{algorithm:?}: {decisions} decisions for {calls} Redis calls"
        );
    }
}

#[tokio::test]
async fn an_override_clears_what_the_cache_knew() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new()
        .prefix("api:")
        .max(1)
        .window(Duration::from_secs(60));
    assert!(limiter.check(&rule, "k").await.allowed);
    assert!(!limiter.check(&rule, "k").await.allowed);
    let before = server.calls("evalsha");
    assert!(!limiter.check(&rule, "k").await.allowed);
    assert_eq!(server.calls("evalsha"), before, "answered from the cache");
    limiter
        .set_override(Override::prefix("api:").max(5))
        .await
        .unwrap();
    assert!(
        limiter.check(&rule, "k").await.allowed,
        "the raised limit applies at once"
    );
}

#[tokio::test]
async fn without_the_cache_every_call_asks_redis() {
    let server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .deny_cache(false)
        .build()
        .unwrap();
    let rule = Rule::new().max(1);
    limiter.check(&rule, "k").await;
    let before = server.calls("evalsha");
    for _ in 0..10 {
        assert!(!limiter.check(&rule, "k").await.allowed);
    }
    assert_eq!(server.calls("evalsha") - before, 10);
}
