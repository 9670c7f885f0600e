//! Process memory under a flood of distinct keys: the in-memory store holds at most `max_keys` live keys,
//! counts what it forgot to stay there, and gives its memory back once the keys have expired. (A test
//! binary of its own: it reads this process's resident memory.)

use std::time::Duration;

use limiter_runtime::{FakeClock, Limiter, Rule};

/// This process's resident memory, in bytes (`VmRSS` of `/proc/self/status`).
fn resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status");
    kib * 1024
}

#[tokio::test]
async fn a_flood_of_keys_is_bounded_and_its_memory_comes_back() {
    const BOUND: u64 = 1_000_000;
    const FLOOD: u64 = 2_000_000;
    let clock = FakeClock::new();
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .max_keys(BOUND as usize)
        .build()
        .unwrap();
    let rule = Rule::new()
        .prefix("flood:")
        .max(10)
        .window(Duration::from_secs(60));
    let before = resident();
    for key in 0..FLOOD {
        assert!(limiter.check(&rule, key).await.allowed, "key {key}");
        if key % 1_000 == 999 {
            clock.advance(Duration::from_millis(1));
        }
    }
    let stats = limiter.stats();
    assert!(stats.keys <= BOUND, "{} keys held", stats.keys);
    assert!(stats.keys > BOUND * 3 / 4, "{} keys held", stats.keys);
    assert_eq!(
        stats.evicted,
        FLOOD - stats.keys,
        "every key forgotten is counted"
    );
    let peak = resident();
    // The most recent keys are the ones kept: those closest to their expiry went first.
    assert_eq!(limiter.check(&rule, FLOOD - 1).await.remaining, 8);

    // The window passes; ordinary traffic on a few keys sweeps every shard of what expired.
    clock.advance(Duration::from_secs(61));
    for call in 0..200_000u64 {
        limiter
            .check(&rule, format!("after:{}", call % 1_000))
            .await;
    }
    let stats = limiter.stats();
    assert!(
        stats.keys <= 1_000,
        "{} keys held after the window",
        stats.keys
    );
    let after = resident();
    println!(
        "resident memory: {} MB before the flood, {} MB at its peak, {} MB after the window",
        before >> 20,
        peak >> 20,
        after >> 20
    );
    let grown = peak.saturating_sub(before);
    assert!(
        grown > 50 << 20,
        "the flood took {} MB: too little to measure",
        grown >> 20
    );
    assert!(
        after.saturating_sub(before) < grown / 4,
        "memory stayed up: {} MB before, {} MB at the peak, {} MB after",
        before >> 20,
        peak >> 20,
        after >> 20
    );
}
