//! A `Limit` (a rule resolved once) decides as `Limiter::check` does, in the same counts, in memory and on a
//! real Redis: overrides, the switch, rejections, the degraded policies and long keys included.

use std::time::Duration;

use limiter_runtime::{Algorithm, Limiter, OnError, Override, Rule};
use tests::{RedisServer, ALGORITHMS};

fn rule(algorithm: Algorithm) -> Rule {
    Rule::new()
        .prefix("lim:")
        .max(3)
        .window(Duration::from_secs(60))
        .algorithm(algorithm)
        .message("three is plenty")
}

/// Alternating a `Limit` and the plain API on one key: one count, whoever asks.
async fn shares_the_count_of_the_plain_api(limiter: &Limiter) {
    for algorithm in ALGORITHMS {
        let rule = rule(algorithm);
        let limit = limiter.resolve(&rule);
        let key = format!("shared-{algorithm:?}");
        // A leaky bucket spaces its calls (one per 20 s here): the plain API's call right after is the one
        // that finds the slot taken.
        let admitted = if algorithm == Algorithm::LeakyBucket {
            1
        } else {
            3
        };
        for call in 0..admitted {
            let decision = if call % 2 == 0 {
                limit.check(&key).await
            } else {
                limiter.check(&rule, &key).await
            };
            assert!(decision.allowed, "{algorithm:?}, call {call}: {decision:?}");
            assert_eq!(decision.limit, 3);
        }
        assert!(!limiter.check(&rule, &key).await.allowed, "{algorithm:?}");
        let denied = limit.check(&key).await;
        assert!(!denied.allowed, "{algorithm:?}");
        assert!(denied.retry_after > Duration::ZERO, "{algorithm:?}");
        let error = limit.enforce(&key).await.unwrap_err();
        assert_eq!(error.to_string(), "three is plenty");
        assert_eq!(error.key(), format!("lim:{key}"));
    }
}

#[tokio::test]
async fn in_memory_a_limit_shares_the_count_of_the_plain_api() {
    shares_the_count_of_the_plain_api(&Limiter::in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redis_a_limit_shares_the_count_of_the_plain_api() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    shares_the_count_of_the_plain_api(&limiter).await;
    // The counts are Redis's: one key per limit, under the rule's prefix.
    let keys = server.limit_keys();
    assert_eq!(keys.len(), ALGORITHMS.len(), "{keys:?}");
    assert!(keys.iter().all(|key| key.starts_with("lim:shared-")));
    assert_eq!(limiter.stats().degraded, 0);
}

/// Keys up to 128 bytes are kept verbatim, longer ones digested: either side of that line, a `Limit` counts
/// under the plain API's key, in memory (where a `Limit` hands its prefix and key over apart) and in Redis,
/// and that key is the one a rejection names. Returns those keys.
async fn long_keys_are_the_plain_apis_keys(limiter: &Limiter) -> Vec<String> {
    let rule = Rule::new().prefix("lim:").max(1);
    let mut named = Vec::new();
    for len in [128, 129, 1_000] {
        let long = "k".repeat(len);
        assert!(limiter.resolve(&rule).check(&long).await.allowed, "{len}");
        assert!(!limiter.check(&rule, &long).await.allowed, "{len}");
        assert!(!limiter.resolve(&rule).check(&long).await.allowed, "{len}");
        let rejection = limiter.enforce(&rule, &long).await.unwrap_err();
        named.push(rejection.key().to_owned());
    }
    named
}

#[tokio::test]
async fn in_memory_a_long_key_is_the_plain_apis_long_key() {
    long_keys_are_the_plain_apis_keys(&Limiter::in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_key_is_the_plain_apis_long_key() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let mut named = long_keys_are_the_plain_apis_keys(&limiter).await;
    let mut keys = server.limit_keys();
    keys.sort();
    named.sort();
    assert_eq!(keys, named);
    assert_eq!(
        keys.iter().filter(|key| key.contains('#')).count(),
        2,
        "{keys:?}"
    );
    assert!(keys.iter().all(|key| key.len() < 200), "{keys:?}");
}

#[tokio::test]
async fn overrides_and_the_switch_apply_to_a_limit_made_before_them() {
    let limiter = Limiter::in_memory();
    let limit = limiter.resolve(&rule(Algorithm::TokenBucket));

    limiter
        .set_override(Override::key("lim:", "vip").max(5))
        .await
        .unwrap();
    let mut admitted = 0;
    for _ in 0..8 {
        admitted += usize::from(limit.check("vip").await.allowed);
    }
    assert_eq!(admitted, 5);
    assert_eq!(limit.check("other").await.limit, 3);

    limiter.set_enabled_here(false);
    assert!(limit.check("vip").await.allowed);
    limiter.set_enabled_here(true);
    assert!(!limit.check("vip").await.allowed);
}

#[tokio::test]
async fn a_limit_fills_in_the_limiters_defaults_once() {
    let limiter = Limiter::builder()
        .window(Duration::from_secs(7))
        .max(2)
        .build()
        .unwrap();
    let limit = limiter.resolve(&Rule::new().prefix("lim:"));
    let decision = limit.check("k").await;
    assert_eq!(
        (decision.limit, decision.window),
        (2, Duration::from_secs(7))
    );
    // Resolving what it kept gives it back: nothing is left to the defaults, even another limiter's.
    assert_eq!(limiter.resolve(&limit.rule()).rule(), limit.rule());
    assert_ne!(limit.rule(), Rule::new().prefix("lim:"));
    let other = Limiter::builder()
        .window(Duration::from_secs(1))
        .max(50)
        .build()
        .unwrap();
    let decision = other.resolve(&limit.rule()).check("k").await;
    assert_eq!(
        (decision.limit, decision.window),
        (2, Duration::from_secs(7))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_follows_its_failure_policy_when_redis_is_down() {
    let mut server = RedisServer::start();
    let limiter = server.limiter();
    let open = limiter.resolve(&rule(Algorithm::SlidingLog).on_error(OnError::Open));
    let closed = limiter.resolve(&rule(Algorithm::SlidingLog).on_error(OnError::Closed));
    assert!(!open.check("k").await.degraded);
    server.kill();
    let decision = open.check("k").await;
    assert!(decision.allowed && decision.degraded);
    let decision = closed.check("k").await;
    assert!(!decision.allowed && decision.degraded);
}

/// Several limits read from configuration: a `Vec` (answered with a `Vec`) or a slice, with costs or
/// without, decided as one.
#[tokio::test]
async fn limits_from_a_list_are_decided_as_one() {
    let limiter = Limiter::in_memory();
    let rules: Vec<Rule> = (1..=3)
        .map(|i| Rule::new().prefix(format!("list{i}:")).max(i))
        .collect();
    let limits: Vec<(&Rule, &str)> = rules.iter().map(|rule| (rule, "k")).collect();
    let first = limiter.all(limits.clone()).check().await;
    assert_eq!(first.len(), 3);
    assert!(first.iter().all(|d| d.allowed));
    // The first limit (max 1) is spent: refused, and charged to none.
    let second = limiter.all(&limits[..]).check().await;
    assert!(!second[0].allowed);
    assert_eq!(second[2].remaining, 2);
    let weighed: Vec<(&Rule, &str, u64)> = rules[1..].iter().map(|r| (r, "w", 2)).collect();
    assert!(limiter.all(weighed).enforce().await.is_ok());
}
