//! What each Redis failure costs the callers, measured under load: the slowest call, the decisions made
//! without Redis (degraded) and how long after the fault ends until Redis decides again. The guide's table
//! "What a failure costs" (`limiter_runtime::guide::failures`) quotes a run
//! (`cargo test -p tests --test failure_costs -- --nocapture`). (A test binary of its own: what it bounds is a
//! fault's cost, not the load of other tests beside it.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, OnError, Rule};
use tests::{until_redis_decides, RedisServer};

/// Long enough that a call costing two deadlines cannot hide in the margin below.
const DEADLINE: Duration = Duration::from_millis(250);
/// Scheduling slack on a shared two-core machine: under one deadline, so "at most one deadline" is what is
/// tested, not two.
const MARGIN: Duration = Duration::from_millis(100);
/// How long a hung or dead Redis stays so.
const OUTAGE: Duration = Duration::from_millis(1_000);

#[derive(Debug, Clone, Copy)]
enum Fault {
    /// SIGSTOP: connections stay open, nothing answers.
    Hung,
    /// SIGKILL, then started again (empty) after the outage.
    Dead,
    /// Killed and started again at once, empty.
    RestartedEmpty,
    /// `SCRIPT FLUSH`: the next call meets `NOSCRIPT`.
    ScriptsFlushed,
    /// `CLIENT KILL TYPE normal`: the limiter's connection is cut.
    ConnectionKilled,
}

impl Fault {
    /// Injects the fault; returns when it is over (the server back, or the one-off event done): for a cut,
    /// how many connections it cut.
    async fn inject(self, server: &mut RedisServer) -> u64 {
        let admin = |command: &str, args: &[&str]| {
            let mut command = redis::cmd(command);
            command.arg(args);
            command.query::<redis::Value>(&mut server.connection())
        };
        match self {
            Fault::Hung => {
                server.pause();
                tokio::time::sleep(OUTAGE).await;
                server.resume();
            }
            Fault::Dead => {
                server.kill();
                tokio::time::sleep(OUTAGE).await;
                server.restart();
            }
            Fault::RestartedEmpty => server.restart(),
            Fault::ScriptsFlushed => {
                admin("SCRIPT", &["FLUSH"]).unwrap();
            }
            Fault::ConnectionKilled => {
                // Every normal client but the one asking (`SKIPME yes`, the default): the limiter's.
                return match admin("CLIENT", &["KILL", "TYPE", "normal"]) {
                    Ok(redis::Value::Int(cut)) => cut as u64,
                    other => panic!("CLIENT KILL answered {other:?}"),
                };
            }
        }
        0
    }
}

/// The newest of the limiter's connections: the highest id among the clients whose last command was a
/// script call (the test's own connections run none).
fn newest_limiter_connection(server: &RedisServer) -> u64 {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("normal")
        .query(&mut server.connection())
        .unwrap();
    list.lines()
        .filter(|line| line.contains(" cmd=evalsha "))
        .filter_map(|line| line.strip_prefix("id=")?.split(' ').next()?.parse().ok())
        .max()
        .unwrap_or(0)
}

/// What one fault cost.
#[derive(Debug)]
struct Cost {
    calls: usize,
    degraded: usize,
    worst: Duration,
    recovered_in: Duration,
    /// Connections a cut cut.
    cut: u64,
    /// Whether the limiter decides on a connection made after the fault.
    reconnected: bool,
}

async fn measure(fault: Fault) -> Cost {
    let mut server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .deadline(DEADLINE)
        .on_error(OnError::Open)
        .build()
        .unwrap();
    let rule = Rule::new().prefix("cost:").max(1_000_000);
    until_redis_decides(&limiter, &rule).await;
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let (limiter, rule, stop) = (limiter.clone(), rule.clone(), Arc::clone(&stop));
            tokio::spawn(async move {
                let mut calls = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let call = Instant::now();
                    let decision = limiter.check(&rule, task).await;
                    calls.push((call.elapsed(), decision.degraded));
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                calls
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = newest_limiter_connection(&server);
    let cut = fault.inject(&mut server).await;
    let recovered_in = until_redis_decides(&limiter, &rule).await;
    let reconnected = newest_limiter_connection(&server) > before;
    tokio::time::sleep(Duration::from_millis(100)).await;
    stop.store(true, Ordering::Relaxed);
    let mut cost = Cost {
        calls: 0,
        degraded: 0,
        worst: Duration::ZERO,
        recovered_in,
        cut,
        reconnected,
    };
    for task in tasks {
        for (took, degraded) in task.await.unwrap() {
            cost.calls += 1;
            cost.degraded += usize::from(degraded);
            cost.worst = cost.worst.max(took);
        }
    }
    cost
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failure_costs_at_most_a_deadline_per_call_and_heals_by_itself() {
    println!("| fault | calls | degraded | slowest call | Redis decides again after |");
    println!("|---|---|---|---|---|");
    for fault in [
        Fault::Hung,
        Fault::Dead,
        Fault::RestartedEmpty,
        Fault::ScriptsFlushed,
        Fault::ConnectionKilled,
    ] {
        let cost = measure(fault).await;
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
        println!(
            "| {fault:?} | {} | {} | {} | {} |",
            cost.calls,
            cost.degraded,
            ms(cost.worst),
            ms(cost.recovered_in)
        );
        assert!(
            cost.worst < DEADLINE + MARGIN,
            "{fault:?}: a call took {:?}",
            cost.worst
        );
        assert!(
            cost.recovered_in < Duration::from_secs(2),
            "{fault:?}: Redis decided again only after {:?}",
            cost.recovered_in
        );
        match fault {
            // An outage, a restart's included, is decided without Redis, by the policy, until Redis answers.
            Fault::Hung | Fault::Dead | Fault::RestartedEmpty => {
                assert!(cost.degraded > 0, "{fault:?}: {cost:?}")
            }
            // A flushed script is loaded again within the same call: no decision is degraded.
            Fault::ScriptsFlushed => assert_eq!(cost.degraded, 0, "{fault:?}: {cost:?}"),
            // A cut connection fails the calls it carried, if any; when that opens the breaker, its next
            // probe (every 250 ms) finds the connection made again: Redis decides again within one probe
            // interval.
            Fault::ConnectionKilled => {
                // The cut reached the limiter: its connection was cut, and it decides on a new one.
                assert!(cost.cut >= 1, "{fault:?}: {cost:?}");
                assert!(cost.reconnected, "{fault:?}: {cost:?}");
                assert!(
                    cost.recovered_in < Duration::from_millis(250) + MARGIN,
                    "{fault:?}: {cost:?}"
                );
            }
        }
    }
}
