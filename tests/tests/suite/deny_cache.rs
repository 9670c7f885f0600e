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
        let started = Instant::now();
        // 1.25 s: the refills a sliding log makes at 0.4 s and 0.9 s (the warm-up's admissions leaving) are well
        // inside it, on a loaded machine too.
        let run_for = Duration::from_millis(1_250);
        let (decisions, admitted) = hammer(&limiter, &rule, run_for).await;
        let elapsed = started.elapsed();
        let calls = server.calls("evalsha") - before;
        // Every admission Redis made lies within `elapsed`: at most what the algorithm's guarantee allows over
        // that long (5 per 500 ms), and, the cache refusing nothing the limit would admit, at least 5 for each
        // whole period of `run_for`.
        let periods = elapsed.as_secs_f64() / 0.5;
        let most = match algorithm {
            // At most 5 in any interval of 500 ms.
            Algorithm::SlidingLog => 5 * periods.ceil() as u64,
            // At most 5 in each aligned window the interval meets.
            Algorithm::FixedWindow => 5 * (periods.ceil() as u64 + 1),
            // At most burst + rate · t.
            _ => 5 + (10.0 * elapsed.as_secs_f64()).floor() as u64,
        };
        // At least 5 for each whole period the tasks ran (a loaded machine may stretch `elapsed` past it with
        // no call made).
        let least = 5 * (run_for.as_secs_f64() / 0.5).floor() as u64;
        assert!(
            (least..=most).contains(&admitted),
            "{algorithm:?}: {admitted} admitted in {elapsed:?}, expected {least}..={most}"
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
        .set_override(Override::policy("api:").max(5))
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
