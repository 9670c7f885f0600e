//! A call dropped on its way to Redis keeps nothing: a caller that goes away (a client disconnect, a
//! `timeout` around the call) after its call was sent never learns what Redis decided, so what Redis charged
//! for it is given back once the answer is in. For a call alone and for a call waiting in a batch: permits
//! in flight come back at once instead of after their time to live, and rate units are not spent.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, Rule};
use tests::{RedisServer, Rng};

/// Polls `call` `polls` times, yielding between polls, and drops it unless it was decided meanwhile: its
/// output if it was.
async fn poll_then_drop<F: Future>(call: F, polls: u64) -> Option<F::Output> {
    let mut call = pin!(call);
    for _ in 0..polls {
        if let Poll::Ready(output) = futures::poll!(call.as_mut()) {
            return Some(output);
        }
        tokio::task::yield_now().await;
    }
    None
}

/// Waits (at most 10 s, checking every 20 ms) until `settled` holds.
async fn until(mut settled: impl FnMut() -> bool) {
    let started = Instant::now();
    while !settled() {
        assert!(started.elapsed() < Duration::from_secs(10), "never settled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn limiter(server: &RedisServer) -> Limiter {
    Limiter::builder()
        .redis(server.url())
        .deadline(tests::PATIENT)
        .deny_cache(false)
        .build()
        .unwrap()
}

/// 300 acquires of an `in_flight(2)` rule from 32 tasks, each dropped after a few polls: once Redis has
/// answered them, no permit is left held, and the key admits two calls at once again, at once (the
/// permits' time to live is a minute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquires_leave_no_permit_held() {
    let server = RedisServer::start();
    let limiter = limiter(&server);
    let rule = Rule::new()
        .prefix("dropped:")
        .in_flight(2)
        .in_flight_ttl(Duration::from_secs(60));
    // Connected, the scripts loaded.
    drop(limiter.acquire(&rule, "warm").await.unwrap());
    let tasks: Vec<_> = (0..32)
        .map(|task| {
            let (limiter, rule) = (limiter.clone(), rule.clone());
            tokio::spawn(async move {
                let mut rng = Rng::new(task + 1);
                let mut decided = 0;
                for _ in 0..10 {
                    let polls = 1 + rng.below(3);
                    // A permit granted in time is dropped too: given back as any permit is.
                    decided += usize::from(
                        poll_then_drop(limiter.acquire(&rule, "k"), polls)
                            .await
                            .is_some(),
                    );
                }
                decided
            })
        })
        .collect();
    let mut decided = 0;
    for task in tasks {
        decided += task.await.unwrap();
    }
    assert!(
        decided < 320,
        "every call was decided before it was dropped"
    );
    let mut redis = server.connection();
    until(|| {
        redis::cmd("ZCARD")
            .arg("dropped:k")
            .query::<u64>(&mut redis)
            .unwrap()
            == 0
    })
    .await;
    let first = limiter.acquire(&rule, "k").await.expect("a permit");
    let second = limiter.acquire(&rule, "k").await.expect("a second permit");
    assert!(limiter.acquire(&rule, "k").await.is_err(), "two at once");
    drop((first, second));
}

/// 300 checks of a sliding log from 32 tasks, each dropped after a few polls: once Redis has answered them,
/// the log holds exactly the calls whose callers read an admission, no more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_checks_are_not_charged() {
    let server = RedisServer::start();
    let limiter = limiter(&server);
    let rule = Rule::new()
        .prefix("charged:")
        .max(1_000)
        .window(Duration::from_secs(3_600));
    assert!(limiter.check(&rule, "warm").await.allowed);
    let tasks: Vec<_> = (0..32)
        .map(|task| {
            let (limiter, rule) = (limiter.clone(), rule.clone());
            tokio::spawn(async move {
                let mut rng = Rng::new(task + 100);
                let (mut admitted, mut dropped) = (0, 0);
                for _ in 0..10 {
                    let polls = 1 + rng.below(3);
                    match poll_then_drop(limiter.check(&rule, "k"), polls).await {
                        Some(decision) => admitted += usize::from(decision.allowed),
                        None => dropped += 1,
                    }
                }
                (admitted, dropped)
            })
        })
        .collect();
    let (mut admitted, mut dropped) = (0, 0);
    for task in tasks {
        let (a, d) = task.await.unwrap();
        admitted += a;
        dropped += d;
    }
    assert!(
        dropped > 10,
        "{dropped} calls dropped before their decision"
    );
    let mut redis = server.connection();
    // Settled: the count stays at what callers were told, and a fresh call sees it.
    until(|| tests::logged_calls(&mut redis, "charged:k") == admitted).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(tests::logged_calls(&mut redis, "charged:k"), admitted);
    let after = limiter.check(&rule, "k").await;
    assert_eq!(after.remaining as usize, 1_000 - admitted - 1);
}
