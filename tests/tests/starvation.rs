//! No starvation: decisions made at once (a denial the deny cache answers, an in-memory decision) take part
//! in Tokio's cooperative budget, so tasks looping on them yield as often as tasks doing I/O, and the Redis
//! connection and the calls waiting on it keep being polled: with 64 tasks hammering one limited key for 3 s,
//! the calls that need Redis meanwhile are never late and never degraded. (A test binary of its own: its
//! deadline has room for a busy machine, not for another test flooding it beside.)

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, Rule};
use tests::RedisServer;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_of_denials_answered_at_once_does_not_starve_calls_waiting_on_redis() {
    let server = RedisServer::start();
    // Roomier than the default 50 ms, for a machine busy with other tests: unstarved, the slowest call takes
    // 15-40 ms here; starved, over a minute.
    let deadline = Duration::from_millis(250);
    let limiter = Limiter::builder()
        .redis(server.url())
        .deadline(deadline)
        .build()
        .unwrap();
    let abusive = Rule::new()
        .prefix("abusive:")
        .max(1)
        .window(Duration::from_secs(60));
    assert!(limiter.check(&abusive, "k").await.allowed);
    assert!(!limiter.check(&abusive, "k").await.allowed, "now limited");

    let stop = Arc::new(AtomicBool::new(false));
    let denials = Arc::new(AtomicU64::new(0));
    let hammers: Vec<_> = (0..64)
        .map(|_| {
            let (limiter, abusive) = (limiter.clone(), abusive.clone());
            let (stop, denials) = (stop.clone(), denials.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let decision = limiter.check(&abusive, "k").await;
                    assert!(!decision.allowed, "the abusive key stays limited");
                    denials.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();

    // Meanwhile, calls that Redis must decide (a new key each time).
    let ordinary = Rule::new().prefix("ordinary:").max(1_000);
    let (mut calls, mut slowest) = (0, Duration::ZERO);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(3) {
        let asked = Instant::now();
        let decision = limiter.check(&ordinary, calls).await;
        let took = asked.elapsed();
        assert!(
            !decision.degraded,
            "call {calls} was decided degraded after {took:?}, with {} denials answered so far",
            denials.load(Ordering::Relaxed)
        );
        slowest = slowest.max(took);
        calls += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for hammer in hammers {
        hammer.await.unwrap();
    }
    assert!(
        slowest < deadline,
        "the slowest of {calls} calls took {slowest:?}"
    );
    assert_eq!(limiter.stats().degraded, 0);
    assert!(
        denials.load(Ordering::Relaxed) > 10_000,
        "the hammering ran: {} denials",
        denials.load(Ordering::Relaxed)
    );
    eprintln!(
        "{calls} calls on Redis, slowest {slowest:?}; {} denials answered at once",
        denials.load(Ordering::Relaxed)
    );
}
