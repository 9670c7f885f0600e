//! Batches across keys against a real Redis ([`batch_across_keys`](limiter_runtime::LimiterBuilder::batch_across_keys)):
//! calls that arrive while their line is full go to Redis together, whatever their keys, as one script call
//! (by default; with it off, only calls on the same keys do); at one task every decision is its own script call (nothing waits
//! when idle). Faults mid-batch stay per call: Redis paused (`SIGSTOP`) or killed under a flood decides each
//! call by its own `on_error` within its deadline, and what Redis ran of a refused call is given back, so
//! nothing is over-admitted after; `SCRIPT FLUSH` under a flood fails no decision and reloads the script once
//! per script call in flight, never sending a batch twice.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use limiter_runtime::{Decision, FakeClock, Limiter, OnError, Rule};
use tests::{RedisServer, Rng};

/// `tasks` tasks, each making `calls` calls under `rule` on keys drawn from `keys`, all at once: each call's
/// decision and how long it took.
async fn flood(
    limiter: &Limiter,
    rule: &Rule,
    keys: u64,
    tasks: usize,
    calls: usize,
) -> Vec<(String, Decision, Duration)> {
    let workers: Vec<_> = (0..tasks)
        .map(|task| {
            let (limiter, rule) = (limiter.clone(), rule.clone());
            tokio::spawn(async move {
                let mut rng = Rng::new(task as u64 + 1);
                let mut decided = Vec::with_capacity(calls);
                for _ in 0..calls {
                    let key = format!("k{}", rng.below(keys));
                    let started = Instant::now();
                    let decision = limiter.check(&rule, &key).await;
                    decided.push((key, decision, started.elapsed()));
                }
                decided
            })
        })
        .collect();
    let mut all = Vec::new();
    for worker in workers {
        all.extend(worker.await.unwrap());
    }
    all
}

fn scripts(server: &RedisServer) -> u64 {
    server.calls("evalsha") + server.calls("eval")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_task_sends_each_call_alone_and_64_share_script_calls_across_keys() {
    let server = RedisServer::start();
    // Batches across keys by default.
    let limiter = Limiter::builder()
        .redis(server.url())
        .deadline(tests::PATIENT)
        .build()
        .unwrap();
    let rule = Rule::new()
        .prefix("spread:")
        .max(1_000)
        .window(Duration::from_secs(10));
    // Connected, and the scripts loaded, before counting.
    assert!(limiter.check(&rule, "warm").await.allowed);

    let before = scripts(&server);
    let alone = flood(&limiter, &rule, 10_000, 1, 300).await;
    assert_eq!(
        scripts(&server) - before,
        300,
        "one script call per decision"
    );
    assert!(alone.iter().all(|(_, d, _)| d.allowed && !d.degraded));

    let before = scripts(&server);
    let together = flood(&limiter, &rule, 10_000, 64, 100).await;
    let calls = scripts(&server) - before;
    assert!(together.iter().all(|(_, d, _)| d.allowed && !d.degraded));
    assert!(
        calls * 4 <= together.len() as u64,
        "{calls} script calls for {} decisions on 10,000 keys",
        together.len()
    );
    // Each admitted call weighs in its own key's log.
    let mut redis = server.connection();
    let mut members = 0;
    for key in server
        .limit_keys()
        .iter()
        .filter(|k| k.starts_with("spread:"))
    {
        members += tests::logged_calls(&mut redis, key);
    }
    assert_eq!(members, 1 + 300 + together.len());

    // Off, calls on different keys each go in a script call of their own (same-key calls still share one).
    let apart = Limiter::builder()
        .redis(server.url())
        .batch_across_keys(false)
        .deadline(tests::PATIENT)
        .build()
        .unwrap();
    let rule = rule.prefix("apart:");
    assert!(apart.check(&rule, "warm").await.allowed);
    let before = scripts(&server);
    let decided = flood(&apart, &rule, 10_000, 64, 100).await;
    let calls = scripts(&server) - before;
    assert!(
        calls * 10 >= decided.len() as u64 * 9,
        "{calls} script calls for {} decisions on 10,000 keys",
        decided.len()
    );
}

/// Two rules on the same keys, one `closed`, one `open`, flooded by 64 tasks while Redis is paused mid-flood:
/// every call is decided within its deadline by its own rule's `on_error`; once Redis runs again, what it ran
/// late of a `closed` call refused meanwhile is given back, so its count is exactly what callers were told was
/// admitted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_redis_degrades_each_call_of_a_batch_by_its_own_policy_in_time() {
    let server = RedisServer::start();
    let deadline = Duration::from_millis(250);
    let limiter = Limiter::builder()
        .redis(server.url())
        .batch_across_keys(true)
        .deadline(deadline)
        .deny_cache(false)
        .build()
        .unwrap();
    let rule = |name: &str, on_error| {
        Rule::new()
            .prefix(format!("{name}:"))
            .max(1_000_000)
            .window(Duration::from_secs(3_600))
            .on_error(on_error)
    };
    let (closed, open) = (rule("closed", OnError::Closed), rule("open", OnError::Open));
    assert!(limiter.check(&closed, "warm").await.allowed);

    let running = Arc::new(AtomicBool::new(true));
    let workers: Vec<_> = (0..64)
        .map(|task| {
            let (limiter, running) = (limiter.clone(), Arc::clone(&running));
            let rule = match task % 2 {
                0 => closed.clone(),
                _ => open.clone(),
            };
            tokio::spawn(async move {
                let mut rng = Rng::new(task + 1);
                let mut decided = Vec::new();
                while running.load(Ordering::Relaxed) {
                    let key = format!("k{}", rng.below(500));
                    let started = Instant::now();
                    let decision = limiter.check(&rule, &key).await;
                    decided.push((decision, started.elapsed()));
                }
                (task % 2 == 0, decided)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.pause();
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    server.resume();
    tokio::time::sleep(Duration::from_millis(300)).await;
    running.store(false, Ordering::Relaxed);

    let (mut admitted_closed, mut admitted_open, mut degraded) = (1, 0, 0);
    for worker in workers {
        let (is_closed, decided) = worker.await.unwrap();
        for (decision, took) in decided {
            assert!(
                took < deadline + Duration::from_millis(200),
                "a call took {took:?}, its deadline {deadline:?}"
            );
            if decision.degraded {
                degraded += 1;
                assert_eq!(decision.allowed, !is_closed, "its own policy");
            }
            match (is_closed, decision.allowed) {
                (true, true) => admitted_closed += 1,
                (false, true) => admitted_open += 1,
                _ => {}
            }
        }
    }
    assert!(degraded > 64, "{degraded} degraded decisions");
    // Late answers are reconciled once Redis answers them: wait (bounded) until the count settles.
    let count = |prefix: &str| {
        let mut redis = server.connection();
        let keys = server.limit_keys();
        keys.iter()
            .filter(|k| k.starts_with(prefix))
            .map(|k| tests::logged_calls(&mut redis, k))
            .sum::<usize>()
    };
    let settled = Instant::now();
    while count("closed:") != admitted_closed && settled.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        count("closed:"),
        admitted_closed,
        "closed: exact after the pause"
    );
    assert!(
        count("open:") <= admitted_open,
        "open: never above what was admitted"
    );
}

/// Redis killed under a flood, then restarted: every call is decided within its deadline (by `on_error`
/// while Redis is down), and decisions come back from Redis with nothing over its limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_redis_fails_each_call_in_time_and_decisions_come_back() {
    let mut server = RedisServer::start();
    let deadline = Duration::from_millis(250);
    let limiter = Limiter::builder()
        .redis(server.url())
        .batch_across_keys(true)
        .deadline(deadline)
        .breaker(5, Duration::from_millis(100))
        .build()
        .unwrap();
    let rule = Rule::new()
        .prefix("killed:")
        .max(20)
        .window(Duration::from_secs(3_600))
        .on_error(OnError::Closed);
    assert!(limiter.check(&rule, "warm").await.allowed);
    let running = Arc::new(AtomicBool::new(true));
    let workers: Vec<_> = (0..64)
        .map(|task| {
            let (limiter, rule, running) = (limiter.clone(), rule.clone(), Arc::clone(&running));
            tokio::spawn(async move {
                let mut rng = Rng::new(task + 1);
                let mut decided = Vec::new();
                while running.load(Ordering::Relaxed) {
                    let key = format!("k{}", rng.below(10_000));
                    let started = Instant::now();
                    let decision = limiter.check(&rule, &key).await;
                    decided.push((decision, started.elapsed()));
                }
                decided
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server.kill();
    tokio::time::sleep(Duration::from_millis(500)).await;
    running.store(false, Ordering::Relaxed);
    let mut decided = Vec::new();
    for worker in workers {
        decided.extend(worker.await.unwrap());
    }
    let slowest = decided.iter().map(|(_, took)| *took).max().unwrap();
    assert!(
        slowest < deadline + Duration::from_millis(200),
        "{slowest:?}"
    );
    assert!(decided.iter().any(|(d, _)| !d.degraded && d.allowed));
    assert!(decided.iter().any(|(d, _)| d.degraded && !d.allowed));
    assert!(
        decided.iter().all(|(d, _)| d.allowed != d.degraded),
        "closed"
    );

    server.restart();
    // Decided by Redis again (bounded wait), and a fresh key admits exactly its limit.
    let back = Instant::now();
    while limiter.check(&rule, "after").await.degraded {
        assert!(
            back.elapsed() < Duration::from_secs(10),
            "Redis never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A restarted Redis has no counts: a fresh key admits exactly its limit, batched.
    let after = flood(&limiter, &rule, 1, 64, 2).await;
    let admitted = after.iter().filter(|(_, d, _)| d.allowed).count();
    assert!(after.iter().all(|(_, d, _)| !d.degraded));
    assert_eq!(admitted, 20, "k0 admits exactly its 20");
}

/// `SCRIPT FLUSH` under a flood of batches: no decision fails, every key admits exactly its limit, and the
/// script is sent with its source once per script call that met NOSCRIPT (never a batch run twice: the
/// counts are exact).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_flush_under_a_flood_fails_nothing_and_runs_nothing_twice() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = Limiter::builder()
        .redis(server.url())
        .batch_across_keys(true)
        .deadline(tests::PATIENT)
        .clock(clock.clone())
        .deny_cache(false)
        .build()
        .unwrap();
    let rule = Rule::new()
        .prefix("flushed:")
        .max(30)
        .window(Duration::from_secs(3_600));
    assert!(limiter.check(&rule, "warm").await.allowed);
    let evals = server.calls("eval");
    let flooding = {
        let limiter = limiter.clone();
        let rule = rule.clone();
        tokio::spawn(async move { flood(&limiter, &rule, 40, 64, 60).await })
    };
    let mut redis = server.connection();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut redis).unwrap();
    }
    let decided = flooding.await.unwrap();
    assert!(
        decided.iter().all(|(_, d, _)| !d.degraded),
        "no decision failed"
    );
    let mut admitted = std::collections::HashMap::<String, usize>::new();
    let mut calls = std::collections::HashMap::<String, usize>::new();
    for (key, decision, _) in &decided {
        *calls.entry(key.clone()).or_default() += 1;
        *admitted.entry(key.clone()).or_default() += usize::from(decision.allowed);
    }
    for (key, calls) in calls {
        assert_eq!(admitted[&key], calls.min(30), "{key}: exactly its limit");
    }
    let reloads = server.calls("eval") - evals;
    assert!(
        (1..=5 * 16).contains(&reloads),
        "{reloads} script calls sent with their source"
    );
}

/// On a cluster a batch carries calls on the same keys (a slot being migrated would refuse a script call on
/// keys it holds only some of): 64 tasks on keys spread over many slots, and on two hot keys, admit exactly
/// each key's limit, the hot keys' calls sharing script calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_batches_calls_on_the_same_keys_and_every_key_stays_exact() {
    let cluster = tests::RedisCluster::start();
    let clock = FakeClock::new();
    let limiter = cluster
        .builder()
        .batch_across_keys(true)
        .clock(clock.clone())
        .deadline(tests::PATIENT)
        .deny_cache(false)
        .build()
        .unwrap();
    let rule = |prefix: &str| {
        Rule::new()
            .prefix(prefix.to_owned())
            .max(10)
            .window(Duration::from_secs(3_600))
    };
    let (spread, hot) = (rule("spread:"), rule("hot:"));
    assert!(limiter.check(&spread, "warm").await.allowed);
    assert!(limiter.check(&hot, "warm").await.allowed);
    let scripts = || cluster.calls_everywhere("evalsha") + cluster.calls_everywhere("eval");
    let spread_calls = flood(&limiter, &spread, 200, 64, 20).await;
    let before = scripts();
    let hot_calls = flood(&limiter, &hot, 2, 64, 20).await;
    let calls = scripts() - before;
    for decided in [&spread_calls, &hot_calls] {
        let mut admitted = std::collections::HashMap::<&str, (usize, usize)>::new();
        for (key, decision, _) in decided.iter() {
            assert!(!decision.degraded);
            let entry = admitted.entry(key.as_str()).or_default();
            entry.0 += 1;
            entry.1 += usize::from(decision.allowed);
        }
        for (key, (calls, admitted)) in admitted {
            assert_eq!(admitted, calls.min(10), "{key}: exactly its limit");
        }
    }
    assert!(
        calls * 4 < hot_calls.len() as u64,
        "{calls} script calls for {} decisions on two keys",
        hot_calls.len()
    );
}
