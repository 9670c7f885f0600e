//! Coalescing against a real Redis: calls on one key that arrive while one of them is with Redis go together
//! in one script call, and each is decided exactly as if sent alone: the same admissions for every
//! algorithm, with costs and stacked limits, the sliding log's calls of one script call one member weighing
//! them all, each given back exactly; fewer script calls than decisions; and a batch whose leader misses its
//! deadline fails alone and leaves the line usable.

use std::sync::Arc;
use std::time::{Duration, Instant};

use limiter_runtime::{Algorithm, FakeClock, Limiter, Rule};
use tests::{RedisServer, PATIENT};

/// A limiter on `server` whose "now" is `clock`'s (frozen: every call is decided at one instant, so what a
/// limit admits is its capacity, exactly), coalescing or not.
fn limiter(server: &RedisServer, clock: &FakeClock, coalesce: bool) -> Limiter {
    Limiter::builder()
        .redis(server.url())
        .deadline(PATIENT)
        .clock(clock.clone())
        .coalesce(coalesce)
        .deny_cache(false)
        .build()
        .unwrap()
}

/// `tasks` tasks making `calls` calls each on `key`, all at once, each weighing `cost`, under every rule of
/// `rules` (stacked): how many were admitted.
async fn hammer(
    limiter: &Limiter,
    rules: &[Rule],
    key: &str,
    tasks: usize,
    calls: usize,
    cost: u64,
) -> usize {
    let rules: Arc<Vec<Rule>> = Arc::new(rules.to_vec());
    let workers: Vec<_> = (0..tasks)
        .map(|_| {
            let (limiter, rules, key) = (limiter.clone(), rules.clone(), key.to_owned());
            tokio::spawn(async move {
                let mut admitted = 0;
                for _ in 0..calls {
                    let allowed = match rules.as_slice() {
                        [one] => limiter.check(one, &key).cost(cost).await.allowed,
                        [a, b] => {
                            let [x, y] = limiter
                                .all([(a, &key, cost), (b, &key, cost)])
                                .check()
                                .await;
                            x.allowed && y.allowed
                        }
                        _ => unreachable!("one or two rules"),
                    };
                    admitted += usize::from(allowed);
                }
                admitted
            })
        })
        .collect();
    let mut admitted = 0;
    for worker in workers {
        admitted += worker.await.unwrap();
    }
    admitted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_algorithm_admits_as_one_call_at_a_time_would_in_fewer_script_calls() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let (coalescing, alone) = (
        limiter(&server, &clock, true),
        limiter(&server, &clock, false),
    );
    let waiting = Rule::new().wait();
    for (algorithm, rule) in Algorithm::ALL
        .iter()
        .map(|&a| (a.to_string(), Rule::new().algorithm(a)))
        .chain([(
            "leaky_bucket_wait".to_owned(),
            waiting.algorithm(Algorithm::LeakyBucket),
        )])
    {
        let rule = rule
            .prefix(format!("{algorithm}:"))
            .max(300)
            .window(Duration::from_secs(60));
        let before = server.calls("evalsha");
        let one_by_one = hammer(&alone, std::slice::from_ref(&rule), "alone", 64, 10, 1).await;
        let middle = server.calls("evalsha");
        let together = hammer(&coalescing, &[rule], "together", 64, 10, 1).await;
        let (scripts_alone, scripts_together) = (middle - before, server.calls("evalsha") - middle);
        assert_eq!(together, one_by_one, "{algorithm}: the same admissions");
        assert!(together >= 1, "{algorithm}");
        assert!(
            scripts_alone >= 640,
            "{algorithm}: {scripts_alone} script calls alone"
        );
        assert!(
            scripts_together * 4 < 640,
            "{algorithm}: {scripts_together} script calls for 640 decisions"
        );
        eprintln!(
            "{algorithm}: {together} of 640 admitted; {scripts_together} script calls together"
        );
    }
    let mut redis = server.connection();
    let units: Vec<usize> = ["sliding_log:alone", "sliding_log:together"]
        .iter()
        .map(|key| tests::logged_calls(&mut redis, key))
        .collect();
    assert_eq!(units, [300, 300], "every admitted call weighs in the log");
    // Alone, a member a call; the calls of one script call together are one member, weighing them all.
    let alone = tests::logged_members(&mut redis, "sliding_log:alone").len();
    let together = tests::logged_members(&mut redis, "sliding_log:together").len();
    assert_eq!(alone, 300);
    assert!(together * 4 < 300, "{together} members for 300 calls");
}

/// Calls coalesced into one script call share one sliding-log member, and each gives back exactly its own
/// part, in any order: whole, in part, or not at all; the log then holds exactly what was kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coalesced_calls_share_a_member_and_each_gives_back_its_own_part() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = limiter(&server, &clock, true);
    let rule = Rule::new()
        .prefix("shared:")
        .max(1_000)
        .window(Duration::from_secs(60));
    let estimates: Vec<_> = futures::future::join_all((0..64u64).map(|i| {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        tokio::spawn(async move { limiter.estimate(&rule, "k").cost(1 + i % 3).await.unwrap() })
    }))
    .await
    .into_iter()
    .map(Result::unwrap)
    .collect();
    let mut redis = server.connection();
    let reserved: u64 = (0..64u64).map(|i| 1 + i % 3).sum();
    assert_eq!(tests::logged_calls(&mut redis, "shared:k") as u64, reserved);
    let members = tests::logged_members(&mut redis, "shared:k").len();
    assert!(members < 64, "coalesced calls share members: {members}");
    // Settled in an order of their own: every third given back whole, every third kept, the rest in part.
    let mut kept = 0;
    for (i, estimate) in estimates.into_iter().enumerate().rev() {
        let cost = 1 + i as u64 % 3;
        let settled = match i % 3 {
            0 => 0,
            1 => cost,
            _ => cost - 1,
        };
        kept += settled;
        estimate.settle(settled).await;
    }
    assert_eq!(tests::logged_calls(&mut redis, "shared:k") as u64, kept);
    let decision = limiter.check(&rule, "k").cost(0).await;
    assert_eq!(decision.remaining, 1_000 - kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn costs_and_stacked_limits_decide_each_call_whole() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let coalescing = limiter(&server, &clock, true);
    // Costs: 3 units a call on a limit of 100 admits 33 calls, never a part of one.
    let rule = Rule::new()
        .prefix("costly:")
        .max(100)
        .window(Duration::from_secs(60));
    assert_eq!(hammer(&coalescing, &[rule], "k", 32, 5, 3).await, 33);

    // Stacked: a burst of 40 and a quota of 50 on the same key; the burst refuses first, and a refused call
    // is charged to neither, so the quota keeps 10.
    let burst = Rule::new()
        .prefix("burst:")
        .algorithm(Algorithm::TokenBucket)
        .max(40)
        .window(Duration::from_secs(60));
    let quota = Rule::new()
        .prefix("quota:")
        .algorithm(Algorithm::SlidingLog)
        .max(50)
        .window(Duration::from_secs(3_600));
    assert_eq!(
        hammer(&coalescing, &[burst, quota.clone()], "k", 32, 5, 1).await,
        40
    );
    assert_eq!(coalescing.check(&quota, "k").await.remaining, 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_that_misses_its_deadline_fails_alone_and_the_line_moves_on() {
    let server = RedisServer::start();
    let deadline = Duration::from_millis(200);
    let limiter = Limiter::builder()
        .redis(server.url())
        .deadline(deadline)
        .breaker(1_000, Duration::from_millis(50))
        .build()
        .unwrap();
    let rule = Rule::new()
        .prefix("frozen:")
        .max(1_000)
        .window(Duration::from_secs(60));
    assert!(limiter.check(&rule, "hot").await.allowed);

    // Redis frozen with a batch in flight and calls waiting behind it: every call is decided degraded
    // within its deadline, none hangs.
    server.pause();
    let started = Instant::now();
    for (decision, took) in tests::at_once(&limiter, &rule, "hot", 32).await {
        assert!(decision.degraded, "Redis is frozen");
        // One deadline and scheduling slack, less than a second deadline: waiters behind the frozen batch
        // wait no longer than it.
        assert!(
            took < deadline + Duration::from_millis(100),
            "a call took {took:?}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    server.resume();

    // The line is not stuck: once Redis answers, calls on the key are decided by Redis again.
    let started = Instant::now();
    while limiter.check(&rule, "hot").await.degraded {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "Redis does not decide the key again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = limiter.stats().degraded;
    for _ in 0..10 {
        assert!(!limiter.check(&rule, "hot").await.degraded);
    }
    assert_eq!(limiter.stats().degraded, before);
}
