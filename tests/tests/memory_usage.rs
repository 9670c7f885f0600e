//! Redis memory per limit (`MEMORY USAGE` of its one key), for every algorithm, with the key full:
//! `cargo test -p tests --test memory_usage -- --nocapture` prints the table the README quotes.

use std::time::Duration;

use limiter_runtime::{Algorithm, FakeClock, Rule};
use redis::Commands;
use tests::{RedisServer, ALGORITHMS};

/// Bytes Redis uses for one limit of `max` per minute after `max` calls, spread over the window.
async fn bytes(server: &RedisServer, algorithm: Algorithm, max: u64) -> u64 {
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let prefix = format!("mem:{algorithm:?}:{max}:");
    let rule = Rule::new()
        .algorithm(algorithm)
        .max(max)
        .window(Duration::from_secs(60))
        .prefix(prefix.clone());
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
            // One member per admission: memory grows with max.
            assert!(large > 50 * small, "{small} B → {large} B");
        } else {
            // O(1): one small value (a hash or a string) whatever the limit.
            assert!(
                small < 200 && large < 200,
                "{algorithm:?}: {small} B, {large} B"
            );
        }
    }
}
