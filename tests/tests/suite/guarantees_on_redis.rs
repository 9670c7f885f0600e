//! Each algorithm's guarantee, checked on a real Redis with Redis's own clock: concurrent callers hammer one
//! key for a bounded time, every admission is recorded with the time Redis decided it (`decided_at`).

use std::time::{Duration, Instant};

use futures::future::join_all;
use limiter_runtime::{Algorithm, Decision, Limiter, Rule};
use tests::RedisServer;

const WINDOW: Duration = Duration::from_millis(100);
const MAX: u64 = 5;
const RUN_FOR: Duration = Duration::from_millis(700);

/// Every admitted decision of 8 tasks calling as fast as they can, sorted by Redis time.
async fn hammer(limiter: &Limiter, rule: &Rule) -> Vec<Decision> {
    let tasks = (0..8).map(|_| {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let mut admitted = Vec::new();
            while started.elapsed() < RUN_FOR {
                let decision = limiter.check(&rule, "hot").await;
                assert!(!decision.degraded);
                if decision.allowed {
                    admitted.push(decision);
                }
            }
            admitted
        })
    });
    let mut admitted: Vec<Decision> = join_all(tasks)
        .await
        .into_iter()
        .flat_map(Result::unwrap)
        .collect();
    admitted.sort_by_key(|d| d.decided_at);
    // At least the whole run's worth of windows was admitted: the test exercised the limit.
    assert!(
        admitted.len() as u64 >= MAX * 5,
        "only {} admitted",
        admitted.len()
    );
    admitted
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

fn rule(algorithm: Algorithm) -> Rule {
    Rule::new().algorithm(algorithm).window(WINDOW).max(MAX)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sliding_log_never_admits_more_than_max_in_any_window() {
    let server = RedisServer::start();
    let admitted = hammer(&server.limiter(), &rule(Algorithm::SlidingLog)).await;
    for (i, end) in admitted.iter().enumerate() {
        let in_window = admitted[..=i]
            .iter()
            .filter(|d| d.decided_at + WINDOW > end.decided_at)
            .count();
        assert!(
            in_window as u64 <= MAX,
            "{in_window} admissions in the window ending at {:?}",
            end.decided_at
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fixed_and_sliding_windows_never_admit_more_than_max_per_aligned_window() {
    let server = RedisServer::start();
    for algorithm in [Algorithm::FixedWindow, Algorithm::SlidingWindow] {
        let admitted = hammer(
            &server.limiter(),
            &rule(algorithm).prefix(format!("{algorithm:?}:")),
        )
        .await;
        let window = micros(WINDOW);
        for d in &admitted {
            let index = micros(d.decided_at) / window;
            let in_window = admitted
                .iter()
                .filter(|e| micros(e.decided_at) / window == index)
                .count();
            assert!(
                in_window as u64 <= MAX,
                "{algorithm:?}: {in_window} admissions in window {index}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_bucket_never_admits_more_than_burst_plus_the_rate() {
    let server = RedisServer::start();
    let burst = 3;
    let admitted = hammer(
        &server.limiter(),
        &rule(Algorithm::TokenBucket).burst(burst),
    )
    .await;
    for (i, start) in admitted.iter().enumerate() {
        for (n, end) in admitted[i..].iter().enumerate() {
            let units = n as u128 + 1;
            let elapsed = u128::from(micros(end.decided_at - start.decided_at));
            assert!(
                units * WINDOW.as_micros()
                    <= u128::from(burst) * WINDOW.as_micros() + u128::from(MAX) * elapsed,
                "{units} admissions in {elapsed} µs"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaky_bucket_slots_are_never_closer_than_window_over_max() {
    let server = RedisServer::start();
    let admitted = hammer(
        &server.limiter(),
        &rule(Algorithm::LeakyBucket).max_wait(WINDOW),
    )
    .await;
    let mut slots: Vec<Duration> = admitted.iter().map(|d| d.decided_at + d.delay).collect();
    slots.sort();
    let spacing = WINDOW / MAX as u32;
    for pair in slots.windows(2) {
        assert!(
            pair[1] - pair[0] >= spacing,
            "slots {:?} and {:?} closer than {spacing:?}",
            pair[0],
            pair[1]
        );
    }
    assert!(admitted.iter().all(|d| d.delay <= WINDOW));
}
