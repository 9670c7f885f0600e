//! Stacked limits are one decision: checked top first, a call admitted only when every limit admits it, and a
//! refused call charged to none, for every algorithm and mix of them, costs, shadow and wait mode, in memory
//! and on Redis (one atomic script), on a cluster whose slots split the keys, and through the plain API.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use limiter_runtime::{rate_limit, Algorithm, FakeClock, Limiter, RateLimited, Reason, Rule};
use tests::{RedisCluster, RedisServer, ALGORITHMS};

// A burst of 3 a second and 5 a minute.
#[rate_limit(prefix = "a:", policy = "burst", key = user, max = 3, window = 1)]
#[rate_limit(prefix = "b:", policy = "minute", key = user, max = 5, window = 60)]
async fn call(user: &str, runs: &AtomicUsize) -> Result<(), RateLimited> {
    runs.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

/// Ten quick calls run the body 3 times; the per-minute limit is charged 3, not 10, so a second later two
/// more calls go through.
async fn a_burst_and_a_quota(limiter: &Limiter) {
    let (user, runs) = ("alice", AtomicUsize::new(0));
    limiter
        .scope(async {
            let mut refused = Vec::new();
            for _ in 0..10 {
                if let Err(error) = call(user, &runs).await {
                    refused.push(error);
                }
            }
            assert_eq!(runs.load(Ordering::SeqCst), 3);
            // The top limit refused: named, with both limits' states.
            let error = &refused[0];
            assert_eq!(error.prefix(), "a:");
            let states: Vec<_> = error
                .limits()
                .map(|(policy, d)| (policy.to_owned(), d.allowed, d.remaining))
                .collect();
            assert_eq!(
                states,
                [
                    ("burst".to_owned(), false, 0),
                    ("minute".to_owned(), true, 2)
                ]
            );
            tokio::time::sleep(Duration::from_millis(1_100)).await;
            assert!(call(user, &runs).await.is_ok());
            assert!(call(user, &runs).await.is_ok());
            // Now the minute's quota is spent, the burst's is not: the lower limit refuses.
            let error = call(user, &runs).await.unwrap_err();
            assert_eq!(error.prefix(), "b:");
        })
        .await;
    assert_eq!(runs.load(Ordering::SeqCst), 5);
}

#[tokio::test]
async fn a_burst_and_a_quota_in_memory() {
    a_burst_and_a_quota(&Limiter::in_memory()).await;
}

#[tokio::test]
async fn a_burst_and_a_quota_on_redis() {
    let server = RedisServer::start();
    a_burst_and_a_quota(&server.limiter()).await;
    // Two limits, at most one script call per call (fewer: the deny cache answers some refusals).
    assert!(server.calls("evalsha") + server.calls("eval") <= 13);
}

fn rule(prefix: &str, name: &'static str, algorithm: Algorithm, max: u64, wait: bool) -> Rule {
    let rule = Rule::new()
        .prefix(prefix.to_owned())
        .policy(name)
        .algorithm(algorithm)
        .max(max)
        .window(Duration::from_secs(3_600));
    match algorithm {
        // Slots within the hour: a leaky bucket admits `max` calls at once (they wait for their slots).
        Algorithm::LeakyBucket if wait => rule.wait(),
        _ => rule,
    }
}

/// For every pair of algorithms (either order) and costs: a call the second limit refuses is charged to the
/// first not at all, and its state says so; the first keeps its room for calls of its own.
async fn a_refused_call_is_charged_to_none(limiter: &Limiter, tag: &str) {
    for first in ALGORITHMS {
        for second in ALGORITHMS {
            for cost in [1, 2] {
                let prefix = |name: &str| format!("{tag}:{first}:{second}:{cost}:{name}:");
                let roomy = rule(&prefix("roomy"), "roomy", first, 10, true);
                let tight = rule(&prefix("tight"), "tight", second, 2, false);
                let name = format!("{first} then {second}, cost {cost}");
                // The tight limit admits a call or two, then refuses.
                let both = [(&roomy, "k", cost), (&tight, "k", cost)];
                let [a, b] = limiter.all(both).check().await;
                assert!(a.allowed && b.allowed, "{name}");
                // Bounded: the tight limit admits 2 units an hour at most, so a third admission fails here.
                let mut admitted = 1;
                while limiter.all(both).check().await.iter().all(|d| d.allowed) {
                    admitted += 1;
                    assert!(
                        admitted * cost <= 2,
                        "{name}: the tight limit admitted {admitted} calls"
                    );
                }
                let before = limiter.check(&roomy, "k").cost(0).await.remaining;
                // (Checked, not enforced: an enforced call would wait for its leaky-bucket slot.)
                for _ in 0..3 {
                    let [a, b] = limiter.all(both).check().await;
                    assert!(
                        a.allowed && !b.allowed,
                        "{name}: only the second limit refuses"
                    );
                }
                let refused = limiter.all(both).enforce().await.unwrap_err();
                assert_eq!(refused.prefix(), prefix("tight"), "{name}");
                assert_eq!(refused.reason(), Reason::Limited);
                let (policy, state) = refused.limits().next().unwrap();
                assert_eq!((policy, state.allowed), ("roomy", true), "{name}");
                assert_eq!(
                    limiter.check(&roomy, "k").cost(0).await.remaining,
                    before,
                    "{name}: refused calls charged the first limit"
                );
            }
        }
    }
}

#[tokio::test]
async fn a_refused_call_is_charged_to_none_in_memory() {
    a_refused_call_is_charged_to_none(&Limiter::in_memory(), "memory").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_call_is_charged_to_none_on_redis() {
    let server = RedisServer::start();
    // Every call to Redis: the deny cache would answer the refusals of the same call itself.
    let limiter = Limiter::builder()
        .redis(server.url())
        .deny_cache(false)
        .build()
        .unwrap();
    a_refused_call_is_charged_to_none(&limiter, "redis").await;
}

/// On a cluster, limits whose keys live in other slots are decided slot by slot, and a refused call gives back
/// what the admitting slots charged before it returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_a_refused_call_is_given_back_before_it_returns() {
    let cluster = RedisCluster::start();
    let limiter = cluster.limiter();
    // `{x}` hash tags put the two limits' keys in two different slots.
    let roomy = Rule::new()
        .prefix("{one}:roomy:")
        .max(10)
        .window(Duration::from_secs(3_600));
    let tight = Rule::new()
        .prefix("{two}:tight:")
        .max(1)
        .window(Duration::from_secs(3_600));
    for algorithm in ALGORITHMS {
        let (roomy, tight) = (
            roomy.clone().algorithm(algorithm),
            tight.clone().algorithm(algorithm),
        );
        let (roomy, tight) = match algorithm {
            Algorithm::LeakyBucket => (roomy.wait(), tight),
            _ => (roomy, tight),
        };
        let key = format!("{algorithm}");
        assert!(limiter
            .all([(&roomy, &key), (&tight, &key)])
            .enforce()
            .await
            .is_ok());
        let before = limiter.check(&roomy, &key).cost(0).await;
        assert!(!before.degraded);
        for _ in 0..3 {
            let refused = limiter
                .all([(&roomy, &key), (&tight, &key)])
                .enforce()
                .await
                .unwrap_err();
            assert_eq!(refused.prefix(), "{two}:tight:");
        }
        let after = limiter.check(&roomy, &key).cost(0).await;
        assert_eq!(
            after.remaining, before.remaining,
            "{algorithm}: given back before the calls returned"
        );
    }
}

/// On a cluster, 64 calls at once from two nodes, on limits in two slots: never more admitted than the tight
/// limit allows, and each limit charged for exactly the calls admitted (every refused call's charge given back),
/// whatever the interleaving of the slots' decisions (refused calls are given back in any order).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_calls_at_once_across_slots_never_over_admit() {
    let cluster = RedisCluster::start();
    let nodes = [cluster.limiter(), cluster.limiter()];
    for algorithm in ALGORITHMS
        .into_iter()
        .filter(|a| *a != Algorithm::LeakyBucket)
    {
        let roomy = Rule::new()
            .prefix(format!("{{one}}:roomy:{algorithm}:"))
            .algorithm(algorithm)
            .max(40)
            .window(Duration::from_secs(3_600));
        let tight = Rule::new()
            .prefix(format!("{{two}}:tight:{algorithm}:"))
            .algorithm(algorithm)
            .max(10)
            .window(Duration::from_secs(3_600));
        let calls = (0..64).map(|i| {
            let (limiter, roomy, tight) = (nodes[i % 2].clone(), roomy.clone(), tight.clone());
            tokio::spawn(async move {
                let decisions = limiter.all([(&roomy, "k"), (&tight, "k")]).check().await;
                assert!(decisions.iter().all(|d| !d.degraded), "{decisions:?}");
                decisions.iter().all(|d| d.allowed)
            })
        });
        let mut admitted = 0;
        for call in calls.collect::<Vec<_>>() {
            admitted += u64::from(call.await.unwrap());
        }
        let used = |rule: &Rule, max: u64| {
            let (limiter, rule) = (nodes[0].clone(), rule.clone());
            async move { max - limiter.check(&rule, "k").cost(0).await.remaining }
        };
        // None at all may be: the slots decide apart, so the calls the tight limit admitted may each have
        // been refused by the roomy one (its 40 went to others), and every charge then goes back.
        assert!(admitted <= 10, "{algorithm}: {admitted} admitted");
        let (roomy_used, tight_used) = (used(&roomy, 40).await, used(&tight, 10).await);
        assert_eq!(roomy_used, admitted, "{algorithm}: roomy charged");
        assert_eq!(tight_used, admitted, "{algorithm}: tight charged");
    }
}

#[rate_limit(prefix = "shadowed:", max = 1, window = 3600, shadow = true)]
#[rate_limit(prefix = "real:", max = 3, window = 3600)]
async fn shadowed() -> Result<(), RateLimited> {
    Ok(())
}

/// A shadow limit in a stack never refuses, and does not stop the others from charging.
#[tokio::test]
async fn a_shadow_limit_never_refuses_the_stack() {
    let limiter = Limiter::in_memory();
    limiter
        .scope(async {
            for _ in 0..3 {
                assert!(shadowed().await.is_ok());
            }
            let error = shadowed().await.unwrap_err();
            assert_eq!(error.prefix(), "real:");
        })
        .await;
    assert_eq!(limiter.stats().shadowed, 2);
}

#[rate_limit(prefix = "shaped:", algorithm = leaky_bucket, max = 10, window = 1, mode = wait, max_wait = "1s")]
#[rate_limit(prefix = "counted:", algorithm = fixed_window, max = 3, window = 3600)]
async fn shaped() -> Result<(), RateLimited> {
    Ok(())
}

/// With a leaky bucket in wait mode in the stack, an admitted call waits for its slot; once the other limit
/// refuses, no slot is taken (the bucket's queue does not grow).
#[tokio::test]
async fn wait_mode_in_a_stack_waits_and_a_refusal_takes_no_slot() {
    let limiter = Limiter::in_memory();
    limiter
        .scope(async {
            let started = std::time::Instant::now();
            for _ in 0..3 {
                shaped().await.unwrap();
            }
            // Slots 100 ms apart: the third waited about 200 ms.
            assert!(
                started.elapsed() >= Duration::from_millis(190),
                "{:?}",
                started.elapsed()
            );
            for _ in 0..5 {
                assert_eq!(shaped().await.unwrap_err().prefix(), "counted:");
            }
        })
        .await;
    let shaping = Rule::new()
        .prefix("shaped:")
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1))
        .max_wait(Duration::from_secs(1));
    let next = limiter.check(&shaping, "tests::stacked::shaped").await;
    assert!(
        next.delay <= Duration::from_millis(300),
        "refused calls took slots: {:?}",
        next.delay
    );
}

/// Stacked limits in memory and on Redis, driven by the same fake time: the same decisions.
#[tokio::test]
async fn the_plain_api_decides_a_list_of_limits_as_one() {
    let server = RedisServer::start();
    let (memory_clock, redis_clock) = (FakeClock::new(), FakeClock::new());
    let memory = Limiter::builder()
        .clock(memory_clock.clone())
        .build()
        .unwrap();
    // Without the deny cache: a cached answer's remaining is as Redis last said it.
    let redis = Limiter::builder()
        .redis(server.url())
        .clock(redis_clock.clone())
        .deny_cache(false)
        .build()
        .unwrap();
    let burst = Rule::new()
        .prefix("burst:")
        .max(2)
        .window(Duration::from_secs(1));
    let quota = Rule::new()
        .prefix("quota:")
        .algorithm(Algorithm::TokenBucket)
        .max(5)
        .window(Duration::from_secs(60));
    for step in 0..40 {
        for clock in [&memory_clock, &redis_clock] {
            clock.advance(Duration::from_millis(300));
        }
        let in_memory = memory.all([(&burst, "u"), (&quota, "u")]).check().await;
        let in_redis = redis.all([(&burst, "u"), (&quota, "u")]).check().await;
        let seen =
            |d: &[limiter_runtime::Decision; 2]| d.map(|d| (d.allowed, d.remaining, d.retry_after));
        assert_eq!(seen(&in_memory), seen(&in_redis), "step {step}");
    }
}
