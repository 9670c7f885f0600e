//! Degraded mode under real faults: Redis killed with SIGKILL, paused, flushed of its scripts, restarted
//! empty, while many callers keep calling. Every test is bounded in time and stays on loopback.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use limiter_runtime::{
    rate_limit, Algorithm, Decision, Limiter, OnError, RateLimited, Reason, Rule,
};
use tests::{until_redis_decides, RedisServer};

/// Long enough that a call costing two deadlines cannot hide in the margin below.
const DEADLINE: Duration = Duration::from_millis(250);
/// Scheduling slack on a shared two-core machine: under one deadline, so "at most one deadline" is what is
/// tested, not two.
const MARGIN: Duration = Duration::from_millis(100);

fn limiter(server: &RedisServer, on_error: OnError) -> Limiter {
    Limiter::builder()
        .redis(server.url())
        .deadline(DEADLINE)
        .on_error(on_error)
        .heartbeat_every(Duration::from_millis(100))
        .build()
        .unwrap()
}

/// Decisions of 16 tasks calling for `run_for`, each with how long it took.
async fn load(limiter: &Limiter, rule: &Rule, run_for: Duration) -> Vec<(Decision, Duration)> {
    let tasks = (0..16).map(|task| {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let mut decisions = Vec::new();
            while started.elapsed() < run_for {
                let call = Instant::now();
                let decision = limiter.check(&rule, format!("user{}", task % 4)).await;
                decisions.push((decision, call.elapsed()));
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            decisions
        })
    });
    join_all(tasks)
        .await
        .into_iter()
        .flat_map(Result::unwrap)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_mid_load_costs_no_latency_in_every_mode_and_heals_by_itself() {
    for on_error in [OnError::Open, OnError::Closed, OnError::Local] {
        let mut server = RedisServer::start();
        let limiter = limiter(&server, on_error);
        let rule = Rule::new().max(1_000).window(Duration::from_secs(60));
        assert!(!limiter.check(&rule, "warm").await.degraded);

        let killer = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            server.kill();
        };
        let (decisions, ()) =
            tokio::join!(load(&limiter, &rule, Duration::from_millis(1_000)), killer);

        let worst = decisions.iter().map(|(_, took)| *took).max().unwrap();
        assert!(
            worst < DEADLINE + MARGIN,
            "{on_error:?}: worst call took {worst:?}"
        );
        let degraded: Vec<&Decision> = decisions
            .iter()
            .map(|(d, _)| d)
            .filter(|d| d.degraded)
            .collect();
        assert!(
            degraded.len() > 100,
            "{on_error:?}: {} degraded decisions",
            degraded.len()
        );
        match on_error {
            OnError::Open => assert!(degraded.iter().all(|d| d.allowed)),
            OnError::Closed => assert!(degraded.iter().all(|d| !d.allowed)),
            // This node alone: its share is the whole limit, counted in memory.
            _ => assert!(degraded.iter().all(|d| d.allowed && d.limit == 1_000)),
        }
        assert!(limiter.stats().breaker_open);
        assert!(limiter.stats().degraded >= degraded.len() as u64);

        server.restart();
        let back = until_redis_decides(&limiter, &rule).await;
        assert!(
            back < Duration::from_secs(1),
            "{on_error:?}: Redis decided again only after {back:?}"
        );
        assert!(!limiter.stats().breaker_open);
    }
}

#[rate_limit(key = id, max = 5, on_error = closed, message = "slow down")]
async fn guarded(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(key = id, max = 5, on_error = open)]
async fn relaxed(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::test]
async fn on_error_on_the_attribute_wins_over_the_limiter() {
    let mut server = RedisServer::start();
    let limiter = limiter(&server, OnError::Local);
    limiter
        .scope(async {
            assert!(guarded(1).await.is_ok());
            server.kill();
            let error = guarded(1).await.unwrap_err();
            assert_eq!(
                error.reason(),
                Reason::Unavailable,
                "distinguishable from a real limit"
            );
            assert_ne!(error.to_string(), "slow down");
            assert!(error.decision().degraded);
            assert!(relaxed(1).await.is_ok());
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_lets_every_call_through_once_a_cached_denial_runs_out_while_redis_is_down() {
    let window = Duration::from_millis(200);
    let rule = |algorithm: Algorithm| {
        Rule::new()
            .prefix(format!("open:{algorithm}:"))
            .algorithm(algorithm)
            .max(1)
            .window(window)
    };
    for frozen in [false, true] {
        let mut server = RedisServer::start();
        let limiter = limiter(&server, OnError::Open);
        for algorithm in Algorithm::ALL {
            assert!(limiter.check(&rule(algorithm), "k").await.allowed);
            // A fixed window may open its next window between two calls (on a loaded machine): the calls go
            // on until Redis refuses one, which the deny cache then holds.
            let mut calls = 1;
            let denied = loop {
                let decision = limiter.check(&rule(algorithm), "k").await;
                if !decision.allowed || calls == 10 {
                    break decision;
                }
                calls += 1;
            };
            assert!(
                !denied.allowed && !denied.degraded,
                "{algorithm}: Redis said no"
            );
        }
        if frozen {
            server.pause();
        } else {
            server.kill();
        }
        // Every denial ran out (the sliding window's estimate within two windows).
        tokio::time::sleep(2 * window + Duration::from_millis(50)).await;
        for algorithm in Algorithm::ALL {
            for call in 0..20 {
                let decision = limiter.check(&rule(algorithm), "k").await;
                assert!(
                    decision.allowed && decision.degraded,
                    "{algorithm}, call {call}, Redis {}: {decision:?}",
                    if frozen { "frozen" } else { "dead" }
                );
            }
        }
        if frozen {
            server.resume();
        }
    }
}

#[rate_limit(key = id, max = 2, window = 60, on_error = local, message = "slow down", policy = "per-id")]
async fn shared(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::test]
async fn a_local_decision_over_the_share_is_a_reached_limit_not_an_outage() {
    let mut server = RedisServer::start();
    let limiter = limiter(&server, OnError::Open);
    limiter
        .scope(async {
            assert!(shared(1).await.is_ok());
            server.kill();
            // This node alone is live: its share is the whole limit, counted in this process from now on.
            let admitted = [shared(2).await, shared(2).await];
            assert!(admitted.iter().all(Result::is_ok), "{admitted:?}");
            let error = shared(2).await.unwrap_err();
            assert!(error.decision().degraded, "decided without Redis");
            assert_eq!(error.reason(), Reason::Limited, "a limit, not an outage");
            assert_eq!(error.to_string(), "slow down", "the limit's own message");
            assert_eq!(error.policy(), "per-id");
            assert_eq!((error.limit(), error.remaining()), (2, 0));
            assert!(error.retry_after() > Duration::ZERO);
            assert_eq!(error.status(), axum::http::StatusCode::TOO_MANY_REQUESTS);
            let headers = error.headers();
            for header in ["ratelimit-policy", "ratelimit", "retry-after"] {
                assert!(
                    headers.contains_key(header),
                    "{header} missing: {headers:?}"
                );
            }
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_redis_costs_one_deadline_then_the_breaker_opens_and_closes() {
    let server = RedisServer::start();
    let limiter = limiter(&server, OnError::Open);
    let rule = Rule::new().max(1_000);
    assert!(!limiter.check(&rule, "warm").await.degraded);

    // Redis stops answering every client for 1.2 s.
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1_200)
        .arg("ALL")
        .query(&mut server.connection())
        .unwrap();
    let paused = Instant::now();
    let decisions = load(&limiter, &rule, Duration::from_millis(800)).await;
    let worst = decisions.iter().map(|(_, took)| *took).max().unwrap();
    assert!(worst < DEADLINE + MARGIN, "worst call took {worst:?}");
    assert!(decisions.iter().all(|(d, _)| d.degraded && d.allowed));
    // After a few deadlines the breaker opened: most calls did not wait at all.
    let instant = decisions
        .iter()
        .filter(|(_, took)| *took < Duration::from_millis(5))
        .count();
    assert!(
        instant > decisions.len() * 3 / 4,
        "{instant} of {} answered at once",
        decisions.len()
    );
    assert!(limiter.stats().breaker_open);

    let back = until_redis_decides(&limiter, &rule).await;
    assert!(
        paused.elapsed() < Duration::from_millis(1_200) + Duration::from_secs(1),
        "back after {back:?}"
    );
    assert!(!limiter.stats().breaker_open);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn script_flush_under_load_fails_no_decision_and_counts_each_call_once() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new().max(200).window(Duration::from_secs(60));
    let flushing = Arc::new(AtomicBool::new(true));
    let flusher = {
        let (flushing, url) = (flushing.clone(), server.url());
        tokio::task::spawn_blocking(move || {
            let mut redis = redis::Client::open(url).unwrap().get_connection().unwrap();
            let mut flushes = 0;
            while flushing.load(Ordering::Relaxed) {
                let _: () = redis::cmd("SCRIPT").arg("FLUSH").query(&mut redis).unwrap();
                flushes += 1;
                std::thread::sleep(Duration::from_millis(2));
            }
            flushes
        })
    };
    let calls = (0..400).map(|_| {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(fastrand_ms())).await;
            limiter.check(&rule, "hot").await
        })
    });
    let decisions: Vec<Decision> = join_all(calls)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    flushing.store(false, Ordering::Relaxed);
    assert!(
        flusher.await.unwrap() > 10,
        "the scripts were flushed repeatedly"
    );

    assert!(decisions.iter().all(|d| !d.degraded), "no failed decision");
    assert_eq!(
        decisions.iter().filter(|d| d.allowed).count(),
        200,
        "exactly max admitted"
    );
    let members = tests::logged_calls(&mut server.connection(), "rate_limit:hot");
    assert_eq!(members, 200, "no call counted twice");
}

/// Spreads calls over about 200 ms without a random-number crate.
fn fastrand_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        % 200
}

#[tokio::test]
async fn redis_restarted_empty_forgets_the_counts_and_keeps_working() {
    let mut server = RedisServer::start();
    let limiter = limiter(&server, OnError::Open);
    let rule = Rule::new().max(3);
    for _ in 0..3 {
        assert!(limiter.check(&rule, "k").await.allowed);
    }
    assert!(!limiter.check(&rule, "k").await.allowed);
    server.restart();
    until_redis_decides(&limiter, &rule).await;
    // The known consequence of a Redis that keeps nothing: the limit starts over, for every node that asks...
    let other_node = self::limiter(&server, OnError::Open);
    let decision = other_node.check(&rule, "k").await;
    assert!(decision.allowed && !decision.degraded);
    assert_eq!(decision.remaining, 2);
    // ...while this node's deny cache holds what Redis said of "k" until its retry_after runs out: it never
    // admits more than before the restart.
    assert!(!limiter.check(&rule, "k").await.allowed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_mode_gives_each_of_three_runtimes_a_third_of_the_limit() {
    let mut server = RedisServer::start();
    // Counted by being there: none of them has decided anything yet.
    let nodes: Vec<Limiter> = (0..3).map(|_| limiter(&server, OnError::Local)).collect();
    let started = Instant::now();
    while nodes.iter().any(|node| node.stats().instances != 3) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "heartbeats: {:?}",
            nodes
                .iter()
                .map(|n| n.stats().instances)
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    let rule = Rule::new().max(90).window(Duration::from_secs(60));
    for node in &nodes {
        let mut admitted = 0;
        for _ in 0..100 {
            let decision = node.check(&rule, "shared").await;
            assert!(decision.degraded);
            admitted += usize::from(decision.allowed);
        }
        assert_eq!(admitted, 30, "each node takes ceil(90 / 3)");
    }
}

/// What the `local` fallback decided stays in memory no longer than it matters: once Redis decides again for
/// a minute, every key goes (and keys whose limit is full again go sooner).
#[tokio::test]
async fn the_local_fallback_forgets_its_keys_once_redis_decides_again() {
    let mut server = RedisServer::start();
    let clock = limiter_runtime::FakeClock::new();
    let limiter = Limiter::builder()
        .redis(server.url())
        .deadline(DEADLINE)
        .on_error(OnError::Local)
        .heartbeat_every(Duration::from_millis(20))
        .breaker(1, Duration::from_millis(20))
        .local_clock(clock.clone())
        .build()
        .unwrap();
    let rule = Rule::new().max(10).window(Duration::from_secs(3_600));
    assert!(!limiter.check(&rule, "warm").await.degraded);
    server.kill();
    for i in 0..1_000 {
        assert!(limiter.check(&rule, format!("k{i}")).await.degraded);
    }
    assert_eq!(limiter.stats().keys, 1_000);
    server.restart();
    until_redis_decides(&limiter, &rule).await;
    // Kept a while, in case Redis fails again at once: an hour's window is not full again yet.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(limiter.stats().keys >= 1_000, "{:?}", limiter.stats());
    clock.advance(Duration::from_secs(61));
    let started = Instant::now();
    while limiter.stats().keys > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{} keys kept",
            limiter.stats().keys
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn local_mode_across_three_processes() {
    let mut server = RedisServer::start();
    let mut nodes: Vec<_> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_limiter_node"))
                .args([server.url(), "3".into()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("limiter_node runs")
        })
        .collect();
    let mut outputs: Vec<_> = nodes
        .iter_mut()
        .map(|n| BufReader::new(n.stdout.take().unwrap()).lines())
        .collect();
    for output in &mut outputs {
        assert_eq!(output.next().unwrap().unwrap(), "ready");
    }
    server.kill();
    for node in &mut nodes {
        writeln!(node.stdin.as_mut().unwrap(), "check shared 90 100").unwrap();
    }
    for output in &mut outputs {
        assert_eq!(output.next().unwrap().unwrap(), "admitted 30 degraded 100");
    }
    for mut node in nodes {
        drop(node.stdin.take());
        assert!(node.wait().unwrap().success());
    }
}

#[rate_limit(key = id, max = 1)]
async fn switched(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::test]
async fn switched_off_the_limiter_sends_nothing_to_redis() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    limiter
        .scope(async {
            assert!(switched(1).await.is_ok());
            assert!(switched(1).await.is_err());
            limiter.set_enabled_here(false);
            let before = server.calls("evalsha");
            for _ in 0..50 {
                assert_eq!(switched(1).await.unwrap(), 1);
            }
            assert!(limiter.check(&Rule::new().max(1), "plain").await.allowed);
            assert_eq!(
                server.calls("evalsha"),
                before,
                "no Redis command while switched off"
            );
            limiter.set_enabled_here(true);
            assert!(switched(1).await.is_err());
            assert!(switched(2).await.is_ok() && switched(2).await.is_err());
            assert!(server.calls("evalsha") > before);
        })
        .await;
}
