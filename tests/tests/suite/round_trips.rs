//! "One round trip per decision", counted for every kind of call: the commands a limiter sends Redis, seen by
//! `MONITOR` (a script's own commands apart), one call after another on a connected limiter with its
//! heartbeat pushed out of the test.
//!
//! - a decision of one limit, for every algorithm, admitted or refused: one script call;
//! - several limits decided as one (`check_all`, stacked attributes): one;
//! - a call that gives back (`count = failures` whose body succeeds, an estimate settled or dropped): one
//!   more, for the give-back;
//! - a hot key's calls at once: fewer script calls than calls (coalescing), and a lease's: one per lease;
//! - a permit in flight: one more, for its release (see `in_flight.rs`).

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use limiter_runtime::{rate_limit, Algorithm, Limiter, RateLimited, Rule};
use tests::{Monitor, RedisServer};

async fn connected(server: &RedisServer) -> Limiter {
    server
        .builder()
        .deadline(Duration::from_secs(5))
        .heartbeat_every(Duration::from_secs(3_600))
        .connect()
        .await
        .unwrap()
}

/// The commands sent while `calls` ran, by name, and by the tasks they left (a give-back from a destructor):
/// once at least `expected` have come (within 5 s), with any more sent by then.
async fn sent<F: std::future::Future<Output = ()>>(
    monitor: &Monitor,
    expected: usize,
    calls: F,
) -> Vec<String> {
    monitor.take();
    calls.await;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut commands = monitor.take();
    while commands.len() < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
        commands.extend(monitor.take());
    }
    commands
}

#[tokio::test]
async fn a_decision_is_one_script_call_for_every_algorithm_admitted_or_refused() {
    let server = RedisServer::start();
    let limiter = connected(&server).await;
    let monitor = Monitor::start(server.port());
    for algorithm in Algorithm::ALL {
        let rule = Rule::new()
            .prefix(format!("{}:", algorithm.name()))
            .algorithm(algorithm)
            .max(3)
            .window(Duration::from_secs(60));
        let mut admitted = 0;
        let commands = sent(&monitor, 0, async {
            for key in 0..10 {
                // Some admitted, then refused (the deny cache answers some refusals without Redis).
                for _ in 0..5 {
                    admitted += usize::from(limiter.check(&rule, key).await.allowed);
                }
            }
        })
        .await;
        assert!(admitted >= 10, "{algorithm:?}: {admitted} admitted");
        assert!(
            commands.iter().all(|c| c == "EVALSHA") && (admitted..=50).contains(&commands.len()),
            "{algorithm:?}: 50 decisions, {admitted} admitted: {commands:?}"
        );
    }
}

#[tokio::test]
async fn limits_decided_as_one_are_one_script_call() {
    let server = RedisServer::start();
    let limiter = connected(&server).await;
    let monitor = Monitor::start(server.port());
    let burst = Rule::new()
        .prefix("burst:")
        .max(100)
        .window(Duration::from_secs(1));
    let hourly = Rule::new()
        .prefix("hourly:")
        .algorithm(Algorithm::TokenBucket)
        .max(1_000)
        .window(Duration::from_secs(3_600));
    let commands = sent(&monitor, 20, async {
        for key in 0..20 {
            let [a, b] = limiter.all([(&burst, key), (&hourly, key)]).check().await;
            assert!(a.allowed && b.allowed);
        }
    })
    .await;
    assert_eq!(commands, vec!["EVALSHA"; 20]);
}

#[derive(Debug)]
enum LoginError {
    Wrong,
    #[allow(dead_code)]
    Limited(RateLimited),
}

impl From<RateLimited> for LoginError {
    fn from(e: RateLimited) -> Self {
        LoginError::Limited(e)
    }
}

#[rate_limit(prefix = "trips_login:", key = user, max = 5, window = "15m", count = failures)]
async fn login(user: &str, ok: bool) -> Result<(), LoginError> {
    if ok {
        Ok(())
    } else {
        Err(LoginError::Wrong)
    }
}

#[tokio::test]
async fn a_give_back_is_one_more_and_a_kept_charge_none() {
    let server = RedisServer::start();
    let limiter = connected(&server).await;
    let monitor = Monitor::start(server.port());
    let commands = limiter
        .scope(sent(&monitor, 3, async {
            // A failure keeps its unit: one call. A success gives it back: one more.
            assert!(login("ada", false).await.is_err());
            assert!(login("ada", true).await.is_ok());
        }))
        .await;
    assert_eq!(
        commands,
        vec!["EVALSHA"; 3],
        "failure, success, its give-back"
    );

    let tokens = Rule::new()
        .prefix("tokens:")
        .algorithm(Algorithm::TokenBucket)
        .max(100_000)
        .window(Duration::from_secs(60));
    let commands = sent(&monitor, 5, async {
        let settled = limiter.estimate(&tokens, "acme").cost(1_000).await.unwrap();
        settled.settle(250).await;
        let whole = limiter.estimate(&tokens, "acme").cost(1_000).await.unwrap();
        whole.settle(1_000).await;
        let dropped = limiter.estimate(&tokens, "acme").cost(1_000).await.unwrap();
        drop(dropped);
    })
    .await;
    // Each estimate, its settling when something goes back, and the dropped one's give-back: five.
    assert_eq!(
        commands,
        vec!["EVALSHA"; 5],
        "three estimates, two give-backs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_keys_calls_share_script_calls_and_a_lease_spends_without_any() {
    let server = RedisServer::start();
    let limiter = connected(&server).await;
    let monitor = Monitor::start(server.port());
    let hot = Rule::new().prefix("hot:").max(1_000_000);
    let commands = sent(&monitor, 1, async {
        let calls = (0..64).map(|_| limiter.check(&hot, "k").into_future());
        assert!(futures::future::join_all(calls)
            .await
            .iter()
            .all(|d| d.allowed && !d.degraded));
    })
    .await;
    assert!(
        commands.iter().all(|c| c == "EVALSHA") && commands.len() <= 8,
        "64 calls at once: {commands:?}"
    );

    let leased = Rule::new()
        .prefix("leased:")
        .algorithm(Algorithm::TokenBucket)
        .max(1_000_000)
        .lease(100)
        .lease_ttl(Duration::from_secs(30));
    let commands = sent(&monitor, 1, async {
        for _ in 0..100 {
            assert!(limiter.check(&leased, "k").await.allowed);
        }
    })
    .await;
    assert_eq!(
        commands,
        vec!["EVALSHA"],
        "100 calls spend one lease of 100"
    );
}

/// `inspect` is one script call, and a read-only one: for every algorithm and a limit in flight, with state
/// to read, one `EVALSHA` and nothing else is sent, and no write command runs (commandstats counts the
/// script's own commands too).
#[tokio::test]
async fn an_inspection_is_one_read_only_script_call() {
    let server = RedisServer::start();
    let limiter = connected(&server).await;
    let writes = || {
        [
            "zadd",
            "zrem",
            "zremrangebyscore",
            "hset",
            "hincrby",
            "set",
            "del",
            "pexpire",
            "expire",
        ]
        .iter()
        .map(|command| server.calls(command))
        .sum::<u64>()
    };
    let monitor = Monitor::start(server.port());
    let rules = Algorithm::ALL
        .iter()
        .map(|&algorithm| {
            Rule::new()
                .prefix(format!("seen:{}:", algorithm.name()))
                .algorithm(algorithm)
                .max(3)
                .window(Duration::from_secs(60))
        })
        .chain([Rule::new().prefix("seen:in_flight:").in_flight(3)]);
    for rule in rules {
        // Some state to read: two calls admitted (a permit held).
        let held = limiter.acquire(&rule, "k").await;
        limiter.check(&rule, "k").await;
        let before = writes();
        monitor.take();
        let inspection = limiter.inspect(&rule, "k").await.unwrap();
        let sent = monitor.take();
        assert_eq!(sent, ["EVALSHA"], "{rule:?}");
        assert_eq!(writes(), before, "{rule:?}: inspecting wrote");
        assert!(inspection.used >= 1, "{rule:?}: {inspection:?}");
        drop(held);
    }
}
