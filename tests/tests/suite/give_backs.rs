//! Charges that depend on the outcome (`count = failures | successes`) and reserve-then-settle: the check
//! comes first, the unit is taken up front, and what the outcome does not count is given back exactly, in
//! memory and on Redis.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use limiter_runtime::{rate_limit, Algorithm, FakeClock, Limiter, RateLimited, Rule};
use tests::{RedisServer, ALGORITHMS};

#[derive(Debug)]
enum LoginError {
    WrongPassword,
    Limited(RateLimited),
}

impl From<RateLimited> for LoginError {
    fn from(e: RateLimited) -> Self {
        LoginError::Limited(e)
    }
}

/// Three failed attempts per user an hour; successes are free.
#[rate_limit(prefix = "login:", key = user, max = 3, window = 3600, count = failures)]
async fn login(user: &str, password: &str, runs: &AtomicUsize) -> Result<(), LoginError> {
    runs.fetch_add(1, Ordering::SeqCst);
    if password == "secret" {
        Ok(())
    } else {
        Err(LoginError::WrongPassword)
    }
}

async fn failures_only(limiter: &Limiter) {
    let runs = AtomicUsize::new(0);
    limiter
        .scope(async {
            // Successes never count: a hundred of them leave the three attempts.
            for _ in 0..100 {
                login("alice", "secret", &runs).await.unwrap();
            }
            for _ in 0..3 {
                assert!(matches!(
                    login("alice", "guess", &runs).await,
                    Err(LoginError::WrongPassword)
                ));
            }
            // Past the limit the body does not run, whatever the password.
            let before = runs.load(Ordering::SeqCst);
            assert!(matches!(
                login("alice", "secret", &runs).await,
                Err(LoginError::Limited(_))
            ));
            assert!(matches!(
                login("alice", "guess", &runs).await,
                Err(LoginError::Limited(_))
            ));
            assert_eq!(runs.load(Ordering::SeqCst), before);
            // Another user is another bucket.
            assert!(login("bob", "secret", &runs).await.is_ok());
        })
        .await;
}

#[tokio::test]
async fn count_failures_charges_only_failures_in_memory() {
    failures_only(&Limiter::in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_failures_charges_only_failures_on_redis() {
    let server = RedisServer::start();
    failures_only(&server.limiter()).await;
}

/// Concurrent attempts cannot overshoot: each takes its unit before its body runs, so at most `max` bodies
/// run at once, whatever their outcome turns out to be.
#[rate_limit(prefix = "slow:", max = 3, window = 3600, count = failures)]
async fn slow_failure(running: &AtomicUsize, peak: &AtomicUsize) -> Result<(), LoginError> {
    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
    peak.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(50)).await;
    running.fetch_sub(1, Ordering::SeqCst);
    Err(LoginError::WrongPassword)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_attempts_cannot_overshoot() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let (running, peak) = (AtomicUsize::new(0), AtomicUsize::new(0));
    limiter
        .scope(async {
            let calls = (0..20).map(|_| slow_failure(&running, &peak));
            let outcomes = futures::future::join_all(calls).await;
            let limited = outcomes
                .iter()
                .filter(|o| matches!(o, Err(LoginError::Limited(_))))
                .count();
            assert_eq!(limited, 17);
        })
        .await;
    assert!(peak.load(Ordering::SeqCst) <= 3);
}

#[rate_limit(prefix = "orders:", key = user, max = 2, window = 3600, count = successes)]
#[rate_limit(prefix = "attempts:", key = user, max = 4, window = 3600)]
async fn order(user: &str, in_stock: bool) -> Result<(), LoginError> {
    if in_stock {
        Ok(())
    } else {
        Err(LoginError::WrongPassword)
    }
}

/// `count = successes` charges only `Ok` outcomes, stacked with a limit that counts every call.
#[tokio::test]
async fn count_successes_in_a_stack_with_a_limit_that_counts_all() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    limiter
        .scope(async {
            assert!(order("u", false).await.is_err());
            assert!(order("u", true).await.is_ok());
            assert!(order("u", true).await.is_ok());
            // Two orders placed: the third is refused by the orders limit...
            let Err(LoginError::Limited(refused)) = order("u", true).await else {
                panic!("the orders limit refuses");
            };
            assert_eq!(refused.prefix(), "orders:");
            // ...and three attempts were counted (the refused one charged nothing).
            let attempts = Rule::new()
                .prefix("attempts:")
                .max(4)
                .window(Duration::from_secs(3_600));
            assert_eq!(limiter.check(&attempts, "u").cost(0).await.remaining, 1);
        })
        .await;
}

/// Reserve an estimate, settle to the actual cost: exactly the actual cost stays charged, for every
/// algorithm, in memory and on Redis (driven by the same fake time).
#[tokio::test]
async fn reserve_then_settle_charges_what_was_used() {
    let server = RedisServer::start();
    for algorithm in ALGORITHMS {
        let rule = Rule::new()
            .prefix(format!("llm:{algorithm}:"))
            .algorithm(algorithm)
            .max(10_000)
            .window(Duration::from_secs(60));
        let rule = match algorithm {
            Algorithm::LeakyBucket => rule.max_wait(Duration::from_secs(60)),
            _ => rule,
        };
        let clock = FakeClock::new();
        let memory = Limiter::builder().clock(clock.clone()).build().unwrap();
        let redis = server.limiter_with_clock(&clock);
        for limiter in [&memory, &redis] {
            let estimate = limiter.estimate(&rule, "tenant").cost(1_000).await.unwrap();
            let estimated = estimate.decision().remaining;
            estimate.settle(250).await;
            let now = limiter.check(&rule, "tenant").cost(0).await;
            // 750 given back: the same limit as after a call of 250.
            let reference = Limiter::builder().clock(clock.clone()).build().unwrap();
            let expected = reference.check(&rule, "tenant").cost(250).await;
            let expected_now = reference.check(&rule, "tenant").cost(0).await;
            assert_eq!(now.remaining, expected_now.remaining, "{algorithm}");
            assert!(
                estimated < expected.remaining || algorithm == Algorithm::LeakyBucket,
                "{algorithm}"
            );
            // Cancelled, an estimate gives everything back.
            let before = limiter.check(&rule, "tenant").cost(0).await.remaining;
            limiter
                .estimate(&rule, "tenant")
                .cost(400)
                .await
                .unwrap()
                .cancel()
                .await;
            assert_eq!(
                limiter.check(&rule, "tenant").cost(0).await.remaining,
                before,
                "{algorithm}"
            );
        }
    }
}

/// What a give-back removes from Redis: a sliding log's own member (not a newer call's), or part of its weight,
/// and only from the window charged; nothing once the charge has left.
#[tokio::test]
async fn a_give_back_removes_its_own_members_and_nothing_once_gone() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let log = Rule::new()
        .prefix("log:")
        .max(10)
        .window(Duration::from_secs(10));
    // Each member with its score: one per call, and "#" scored minus the units in the window (and 2^52 while
    // heavier calls may be among them).
    const HEAVY: i64 = 1 << 52;
    let members = || -> Vec<(String, i64)> {
        redis::cmd("ZRANGE")
            .arg("log:k")
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut server.connection())
            .unwrap()
    };
    let first = limiter.estimate(&log, "k").cost(2).await.unwrap();
    let older = members();
    assert_eq!(older.len(), 2, "{older:?}");
    clock.advance(Duration::from_secs(1));
    let second = limiter.estimate(&log, "k").cost(3).await.unwrap();
    let all = members();
    assert_eq!(all.len(), 3, "one member a call, and #: {all:?}");
    assert_eq!(
        all[0],
        ("#".to_owned(), -5 - HEAVY),
        "2 + 3 units, heavier calls"
    );
    // The second gives back two of its three: the first stays, the second weighs one.
    second.settle(1).await;
    let left = members();
    assert_eq!(left.len(), 3, "{left:?}");
    assert_eq!(
        left[0],
        ("#".to_owned(), -3 - HEAVY),
        "the first call still weighs 2"
    );
    assert_eq!(left[1], older[1], "the first call's member is untouched");
    assert_eq!(
        left[2].0.len(),
        16,
        "a call of cost 1 is its nonce alone: {left:?}"
    );
    // Once the heavier call is given back too, every member weighs one: "#" goes.
    let light = limiter.estimate(&log, "k").cost(1).await.unwrap();
    assert_eq!(members().len(), 4);
    light.cancel().await;
    assert_eq!(limiter.check(&log, "k").cost(0).await.remaining, 7);
    // Once its charge has left the window, giving back the first changes nothing.
    clock.advance(Duration::from_secs(10));
    let third = limiter.estimate(&log, "k").cost(1).await.unwrap();
    first.cancel().await;
    assert_eq!(limiter.check(&log, "k").cost(0).await.remaining, 9);
    drop(third);

    // A fixed window: a give-back after the window turned leaves the new window alone.
    let window = Rule::new()
        .prefix("fixed:")
        .algorithm(Algorithm::FixedWindow)
        .max(5)
        .window(Duration::from_secs(10));
    let old = limiter.estimate(&window, "k").cost(3).await.unwrap();
    clock.advance(Duration::from_secs(10));
    let _new = limiter.estimate(&window, "k").cost(2).await.unwrap();
    old.cancel().await;
    assert_eq!(limiter.check(&window, "k").cost(0).await.remaining, 3);
}

/// A bucket is never filled past its capacity by giving back, and a charge given back twice is given back
/// once.
#[tokio::test]
async fn a_bucket_is_never_fuller_than_full() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    for limiter in [
        Limiter::builder().clock(clock.clone()).build().unwrap(),
        server.limiter_with_clock(&clock),
    ] {
        for algorithm in [Algorithm::TokenBucket, Algorithm::LeakyBucket] {
            let rule = Rule::new()
                .prefix(format!("bucket:{algorithm}:"))
                .algorithm(algorithm)
                .max(10)
                .window(Duration::from_secs(10))
                .max_wait(Duration::from_secs(10));
            let first = limiter.estimate(&rule, "k").cost(4).await.unwrap();
            clock.advance(Duration::from_secs(3));
            // Three seconds refilled three of the four: only one is left to give back.
            first.cancel().await;
            let full = limiter.check(&rule, "k").cost(0).await;
            assert_eq!(
                full.reset_after,
                Duration::ZERO,
                "{algorithm}: full again, not fuller"
            );
        }
    }
}

/// An estimate dropped without being settled (an early return, `?`, a cancelled task) gives its whole
/// estimate back: in memory at once, with Redis on a task of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_estimate_dropped_unsettled_gives_its_estimate_back() {
    let server = RedisServer::start();
    for limiter in [Limiter::in_memory(), server.limiter()] {
        let rule = Rule::new()
            .prefix("dropped:")
            .algorithm(Algorithm::TokenBucket)
            .max(100)
            .window(Duration::from_secs(3_600));
        let held = limiter.estimate(&rule, "k").cost(40).await.unwrap();
        assert_eq!(held.decision().remaining, 60);
        drop(held);
        // Dropped by `?`, in a function that fails after reserving.
        async fn fails(limiter: &Limiter, rule: &Rule) -> Result<(), std::fmt::Error> {
            let _estimate = limiter.estimate(rule, "k").cost(30).await.unwrap();
            Err(std::fmt::Error)?;
            Ok(())
        }
        assert!(fails(&limiter, &rule).await.is_err());
        let started = std::time::Instant::now();
        while limiter.check(&rule, "k").cost(0).await.remaining != 100 {
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "the estimates stayed charged"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// A token bucket of 100 tokens a day.
fn daily_bucket(name: &str) -> Rule {
    Rule::new()
        .prefix(format!("{name}:"))
        .algorithm(Algorithm::TokenBucket)
        .max(100)
        .window(Duration::from_secs(86_400))
}

/// Three estimates of 30 settled out of order, to keep 0, 10 and 5: the bucket keeps 15, whatever the
/// order, in memory and on Redis. (A leaky bucket's estimate waits for its slot: the twins' property test
/// settles its charges in any order, and the differential test compares the stores.)
#[tokio::test]
async fn a_bucket_settled_out_of_order_keeps_exactly_what_was_used() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let rule = daily_bucket("three");
    for (store, limiter) in [
        (
            "memory",
            Limiter::builder().clock(clock.clone()).build().unwrap(),
        ),
        ("redis", server.limiter_with_clock(&clock)),
    ] {
        for order in [[1, 0, 2], [2, 0, 1], [0, 2, 1], [1, 2, 0]] {
            let key = format!("{order:?}");
            let mut held = Vec::new();
            for _ in 0..3 {
                held.push(Some(limiter.estimate(&rule, &key).cost(30).await.unwrap()));
            }
            let kept = [0, 10, 5];
            for i in order {
                held[i].take().unwrap().settle(kept[i]).await;
            }
            let left = limiter.check(&rule, &key).cost(0).await;
            assert_eq!(
                left.remaining, 85,
                "{store}, settled in the order {order:?}"
            );
        }
    }
}

/// Twenty estimates of 5 from two nodes, settled concurrently to keep 19 units in all: the bucket keeps
/// 19, whatever the interleaving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_settled_at_once_from_two_nodes_keep_exactly_what_was_used() {
    let server = RedisServer::start();
    let nodes = [server.limiter(), server.limiter()];
    for round in 0..5 {
        let rule = daily_bucket(&format!("twenty:{round}"));
        let mut held = Vec::new();
        for i in 0..20 {
            held.push(
                nodes[i % 2]
                    .estimate(&rule, "tenant")
                    .cost(5)
                    .await
                    .unwrap(),
            );
        }
        assert_eq!(held.last().unwrap().decision().remaining, 0);
        // Kept: one unit of each of the first nineteen, none of the last; settled all at once.
        let settled = held
            .into_iter()
            .enumerate()
            .map(|(i, estimate)| tokio::spawn(estimate.settle(u64::from(i < 19))));
        for settle in settled.collect::<Vec<_>>() {
            settle.await.unwrap();
        }
        let left = nodes[round % 2].check(&rule, "tenant").cost(0).await;
        assert_eq!(left.remaining, 81, "round {round}: {left:?}");
    }
}
