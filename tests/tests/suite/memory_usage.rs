//! Redis memory per limit (`MEMORY USAGE` of its one key), for every algorithm, with the key full:
//! `cargo test -p tests --test suite -- memory_usage:: --nocapture` prints the table the README quotes.

use std::time::Duration;

use limiter_runtime::{Algorithm, FakeClock, Period, Rule};
use redis::Commands;
use tests::{RedisServer, ALGORITHMS};

/// Bytes Redis uses for one limit of `max` per minute after `max` calls, spread over the window.
async fn bytes(server: &RedisServer, algorithm: Algorithm, max: u64) -> u64 {
    let rule = Rule::new()
        .algorithm(algorithm)
        .max(max)
        .window(Duration::from_secs(60));
    bytes_of(server, rule, &format!("mem:{algorithm:?}:{max}:"), max).await
}

/// Bytes Redis uses for `rule`'s one key under `prefix` after `max` calls, spread over a minute.
async fn bytes_of(server: &RedisServer, rule: Rule, prefix: &str, max: u64) -> u64 {
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let rule = rule.prefix(prefix.to_owned());
    for _ in 0..max {
        limiter.check(&rule, "user:1001").await;
        clock.advance(Duration::from_micros(60_000_000 / max / 2));
    }
    let mut redis = server.connection();
    let keys: Vec<String> = redis.keys(format!("{prefix}*")).unwrap();
    assert_eq!(keys.len(), 1, "one key per limit");
    redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&keys[0])
        .arg("SAMPLES")
        .arg(0)
        .query(&mut redis)
        .unwrap()
}

#[tokio::test]
async fn memory_per_limit() {
    let server = RedisServer::start();
    println!("| algorithm | max = 100 | max = 10 000 |\n|---|---|---|");
    for algorithm in ALGORITHMS {
        let (small, large) = (
            bytes(&server, algorithm, 100).await,
            bytes(&server, algorithm, 10_000).await,
        );
        println!("| {algorithm:?} | {small} B | {large} B |");
        if algorithm == Algorithm::SlidingLog {
            // One member per admission: memory grows with max, as the README says (3.1 KB, 1.23 MB).
            assert!(large > 50 * small, "{small} B → {large} B");
            assert!(small <= 3_200 && large <= 1_250_000, "{small} B, {large} B");
        } else {
            // O(1): one small value (a hash or a string) whatever the limit, as the README says (≤ 120 B; a
            // bucket's queue keeps the terms it was charged under, which it carries over from: ≤ 152 B).
            let most = match algorithm {
                Algorithm::TokenBucket | Algorithm::LeakyBucket => 152,
                _ => 120,
            };
            assert!(
                small <= most && large <= most,
                "{algorithm:?}: {small} B, {large} B"
            );
        }
    }
    // A calendar quota: one hash (the period's end, its count) whatever the limit, as the README says.
    let mut calendar = [0; 2];
    for (bytes, max) in calendar.iter_mut().zip([100, 10_000]) {
        let rule = Rule::new().period(Period::Month).max(max);
        *bytes = bytes_of(&server, rule, &format!("mem:calendar:{max}:"), max).await;
    }
    let [small, large] = calendar;
    println!("| calendar | {small} B | {large} B |");
    assert!(
        small <= 120 && large <= 120,
        "calendar: {small} B, {large} B"
    );
}

/// A cost is a weight, never a number of entries: twenty calls of 50,000 units hold a few hundred bytes,
/// whatever the algorithm, and a limit of ten million is exact at its edge.
#[tokio::test]
async fn a_cost_is_a_weight_not_entries() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let mut redis = server.connection();
    for algorithm in ALGORITHMS {
        let prefix = format!("heavy:{algorithm:?}:");
        let rule = Rule::new()
            .algorithm(algorithm)
            .max(10_000_000)
            .window(Duration::from_secs(60))
            .prefix(prefix.clone());
        let rule = match algorithm {
            Algorithm::LeakyBucket => rule.max_wait(Duration::from_secs(60)),
            _ => rule,
        };
        for _ in 0..20 {
            assert!(limiter.check(&rule, "k").cost(50_000).await.allowed);
            clock.advance(Duration::from_millis(10));
        }
        let bytes: u64 = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(format!("{prefix}k"))
            .arg("SAMPLES")
            .arg(0)
            .query(&mut redis)
            .unwrap();
        assert!(bytes < 64 * 1024, "{algorithm:?}: {bytes} B");
    }
    let log = Rule::new()
        .max(10_000_000)
        .window(Duration::from_secs(60))
        .prefix("edge:");
    assert!(limiter.check(&log, "k").cost(1_000_000).await.allowed);
    let refused = limiter.check(&log, "k").cost(9_000_001).await;
    assert!(!refused.allowed);
    assert_eq!(refused.remaining, 9_000_000);
    assert!(limiter.check(&log, "k").cost(9_000_000).await.allowed);
    assert!(!limiter.check(&log, "k").await.allowed);
}
