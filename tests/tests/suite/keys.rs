//! Keys never collide: a key list writes each part escaped, so distinct lists are distinct keys whatever text
//! they hold (an IPv6 address beside an id too), in memory and in Redis, short or bounded; no key reaches into
//! another prefix's keys, nested prefixes included; a plain key reads as it always did.

use std::time::Duration;

use limiter_runtime::{rate_limit, Algorithm, Limiter, RateLimited, Rule};
use tests::RedisServer;

#[rate_limit(prefix = "pair:", key = (tenant, user), max = 1, window = 3600)]
async fn call(tenant: &str, user: &str) -> Result<(), RateLimited> {
    Ok(())
}

async fn lists_never_share_a_bucket(limiter: &Limiter) {
    let long = "x".repeat(200);
    let pairs: Vec<(String, String)> = vec![
        ("a".into(), "b:c".into()),
        ("a:b".into(), "c".into()),
        ("a%3Ab".into(), "c".into()),
        ("2001:db8::1".into(), "7".into()),
        ("2001:db8:".into(), ":1:7".into()),
        ("".into(), ":".into()),
        (":".into(), "".into()),
        (format!("{long}:"), "y".into()),
        (long.clone(), ":y".into()),
    ];
    limiter
        .scope(async {
            for (tenant, user) in &pairs {
                assert!(
                    call(tenant, user).await.is_ok(),
                    "({tenant:?}, {user:?}) shares a bucket"
                );
            }
            for (tenant, user) in &pairs {
                let refused = call(tenant, user).await.unwrap_err();
                assert!(refused.key().len() <= "pair:".len() + 128 + 41);
            }
        })
        .await;
}

#[tokio::test]
async fn key_lists_never_share_a_bucket_in_memory() {
    lists_never_share_a_bucket(&Limiter::in_memory()).await;
}

#[tokio::test]
async fn key_lists_never_share_a_bucket_on_redis() {
    let server = RedisServer::start();
    lists_never_share_a_bucket(&server.limiter()).await;
    // A list's parts are joined with `:`, which the store key escapes like any other key's.
    let limiter = server.limiter();
    limiter.scope(call("acme", "42")).await.unwrap();
    assert!(server.limit_keys().contains(&"pair:acme%3A42".to_owned()));
}

/// Two limits under nested prefixes, the outer one's key chosen by a client to spell out the inner one's:
/// each keeps its own count (one algorithm), and neither meets the other's state (two algorithms).
async fn nested_prefixes_keep_their_counts(limiter: &Limiter) {
    for (outer_algorithm, inner_algorithm) in [
        (Algorithm::FixedWindow, Algorithm::FixedWindow),
        (Algorithm::SlidingLog, Algorithm::TokenBucket),
    ] {
        let window = Duration::from_secs(3600);
        let outer = Rule::new()
            .prefix(format!("rl:{outer_algorithm:?}:"))
            .max(5)
            .window(window)
            .algorithm(outer_algorithm);
        let inner = Rule::new()
            .prefix(format!("rl:{outer_algorithm:?}:daily:"))
            .max(2)
            .window(window)
            .algorithm(inner_algorithm);
        for _ in 0..5 {
            let decision = limiter.check(&outer, "daily:alice").await;
            assert!(decision.allowed && !decision.degraded, "{decision:?}");
        }
        assert!(!limiter.check(&outer, "daily:alice").await.allowed);
        // alice's own daily limit is untouched by the client's five calls.
        for _ in 0..2 {
            let decision = limiter.check(&inner, "alice").await;
            assert!(decision.allowed && !decision.degraded, "{decision:?}");
        }
        let decision = limiter.check(&inner, "alice").await;
        assert!(!decision.allowed && !decision.degraded, "{decision:?}");
    }
}

#[tokio::test]
async fn nested_prefixes_keep_their_counts_in_memory() {
    nested_prefixes_keep_their_counts(&Limiter::in_memory()).await;
}

#[tokio::test]
async fn nested_prefixes_keep_their_counts_on_redis() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    nested_prefixes_keep_their_counts(&limiter).await;
    assert!(!limiter.stats().breaker_open);
    let keys = server.limit_keys();
    assert!(
        keys.contains(&"rl:FixedWindow:daily%3Aalice".to_owned()),
        "{keys:?}"
    );
    assert!(
        keys.contains(&"rl:FixedWindow:daily:alice".to_owned()),
        "{keys:?}"
    );
}

/// A prefix that does not end with `:` is marked where it ends, so that it, too, is apart from every other.
#[tokio::test]
async fn a_prefix_without_a_colon_is_marked() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new().prefix("plain").max(1);
    assert!(limiter.check(&rule, "1001").await.allowed);
    assert!(
        !limiter
            .check(&Rule::new().prefix("plai").max(1), "n|1001")
            .await
            .degraded
    );
    assert!(!limiter.check(&rule, "1001").await.allowed);
    assert_eq!(server.limit_keys().len(), 2);
    assert!(server.limit_keys().contains(&"plain|1001".to_owned()));
}
