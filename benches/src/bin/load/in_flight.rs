//! Limits in flight (`load --in-flight`): what a permit costs Redis in commands, and decisions per second of
//! `acquire` + release beside a sliding log's `check`, in one run, rounds alternating.
//!
//! - Commands, seen by `MONITOR`: a permit taken and given back one after another, alone and stacked
//!   with a rate; then 64 tasks at once on 10 000 keys and on one key, where releases share commands.
//! - Decisions per second at 64 tasks, on 10 000 random keys and on one hot key: a sliding log's `check`
//!   (the common call), an in-flight limit's `acquire` with the permit given back at once, and both stacked.

use std::fmt::Write as _;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, Rule};
use test_support::{Monitor, RedisServer};

/// What a run of `load --in-flight` measures.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) duration: Duration,
    pub(crate) rounds: usize,
    pub(crate) keys: u32,
    pub(crate) workers: usize,
}

const TASKS: usize = 64;

/// Measures everything the plan says, and writes it as markdown.
pub(crate) fn run(plan: &Plan) -> Result<String, String> {
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(plan.workers)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let rules = Rules::new();
    let mut text = String::from("## Limits in flight\n\n");
    runtime.block_on(async {
        let limiter = Limiter::builder()
            .redis(server.url().as_str())
            .deadline(Duration::from_secs(1))
            .heartbeat_every(Duration::from_secs(3_600))
            .connect()
            .await
            .map_err(|e| e.to_string())?;
        commands(&server, &limiter, &rules, plan, &mut text).await?;
        throughput(&limiter, &rules, plan, &mut text).await
    })?;
    Ok(text)
}

/// The rules measured: a sliding log that admits every call, an in-flight limit no call reaches.
struct Rules {
    log: Rule,
    in_flight: Rule,
}

impl Rules {
    fn new() -> Rules {
        Rules {
            log: Rule::new()
                .prefix("bench:log:")
                .max(1_000_000_000)
                .window(Duration::from_secs(10)),
            in_flight: Rule::new().prefix("bench:in_flight:").in_flight(1_000_000),
        }
    }
}

/// Commands per permit, seen by `MONITOR` (not a script's own).
async fn commands(
    server: &RedisServer,
    limiter: &Limiter,
    rules: &Rules,
    plan: &Plan,
    text: &mut String,
) -> Result<(), String> {
    let calls = 1_000u32;
    let monitor = Monitor::start(server.port());
    for i in 0..calls {
        let permit = limiter
            .acquire(&rules.in_flight, i)
            .await
            .map_err(|e| e.to_string())?;
        permit.settle(limiter_runtime::AsCharged).await;
    }
    let alone = monitor.take().len() as f64 / f64::from(calls);
    for i in 0..calls {
        let permit = limiter
            .all([(&rules.in_flight, i), (&rules.log, i)])
            .acquire()
            .await
            .map_err(|e| e.to_string())?;
        permit.settle(limiter_runtime::AsCharged).await;
    }
    let stacked = monitor.take().len() as f64 / f64::from(calls);
    // 64 tasks at once, each taking and giving back permits one after another.
    let mut at_once = Vec::new();
    for keys in [plan.keys, 1] {
        let made = run_tasks(Duration::from_millis(500), keys, {
            let (limiter, rule) = (limiter.clone(), rules.in_flight.clone());
            move |key| {
                let (limiter, rule) = (limiter.clone(), rule.clone());
                async move {
                    if let Ok(permit) = limiter.acquire(&rule, key).await {
                        permit.settle(limiter_runtime::AsCharged).await;
                    }
                }
            }
        })
        .await;
        at_once.push(monitor.take().len() as f64 / made.max(1) as f64);
    }
    let _ = write!(
        text,
        "### Commands per permit\n\nCommands sent to Redis (seen by `MONITOR`) per permit taken and given back: the \
         script call that takes it, and the release. Releases that happen together share a command.\n\n\
         | one at a time | stacked with a rate | {TASKS} tasks, {} keys | {TASKS} tasks, one key |\n\
         |---|---|---|---|\n| {alone:.2} | {stacked:.2} | {:.2} | {:.2} |\n\n",
        plan.keys, at_once[0], at_once[1]
    );
    Ok(())
}

/// Decisions per second of each contender, rounds alternating.
async fn throughput(
    limiter: &Limiter,
    rules: &Rules,
    plan: &Plan,
    text: &mut String,
) -> Result<(), String> {
    let _ = write!(
        text,
        "### Decisions per second\n\n{TASKS} tasks, {} s a run, {} rounds alternating (median): a sliding log's \
         `check`; an in-flight limit's `acquire`, its permit given back at once (`release`, awaited); both \
         stacked in one `acquire_all`.\n\n| keys | sliding log `check` | in flight, acquire + release | stacked \
         | in flight / sliding log |\n|---|---|---|---|---|\n",
        plan.duration.as_secs_f64(),
        plan.rounds
    );
    for keys in [plan.keys, 1] {
        let mut each: [Vec<f64>; 3] = Default::default();
        for _ in 0..plan.rounds {
            let (l, r) = (limiter.clone(), rules.log.clone());
            let made = run_tasks(plan.duration, keys, move |key| {
                let (l, r) = (l.clone(), r.clone());
                async move {
                    l.check(&r, key).await;
                }
            })
            .await;
            each[0].push(made as f64 / plan.duration.as_secs_f64());
            let (l, r) = (limiter.clone(), rules.in_flight.clone());
            let made = run_tasks(plan.duration, keys, move |key| {
                let (l, r) = (l.clone(), r.clone());
                async move {
                    if let Ok(permit) = l.acquire(&r, key).await {
                        permit.settle(limiter_runtime::AsCharged).await;
                    }
                }
            })
            .await;
            each[1].push(made as f64 / plan.duration.as_secs_f64());
            let (l, f, r) = (limiter.clone(), rules.in_flight.clone(), rules.log.clone());
            let made = run_tasks(plan.duration, keys, move |key| {
                let (l, f, r) = (l.clone(), f.clone(), r.clone());
                async move {
                    if let Ok(permit) = l.all([(&f, key), (&r, key)]).acquire().await {
                        permit.settle(limiter_runtime::AsCharged).await;
                    }
                }
            })
            .await;
            each[2].push(made as f64 / plan.duration.as_secs_f64());
        }
        let [log, in_flight, stacked] = each.map(median);
        let _ = writeln!(
            text,
            "| {keys} | {log:.0} | {in_flight:.0} | {stacked:.0} | {:.2}× |",
            in_flight / log
        );
    }
    Ok(())
}

/// Runs `TASKS` tasks calling `call` on random keys among `keys` for `duration`: the calls made.
async fn run_tasks<F, Fut>(duration: Duration, keys: u32, call: F) -> u64
where
    F: Fn(u32) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let made = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + duration;
    let tasks: Vec<_> = (0..TASKS as u64)
        .map(|task| {
            let (call, made) = (call.clone(), Arc::clone(&made));
            tokio::spawn(async move {
                let mut seed = task.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut count = 0;
                while Instant::now() < until {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    call((seed % u64::from(keys)) as u32).await;
                    count += 1;
                }
                made.fetch_add(count, Ordering::Relaxed);
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    made.load(Ordering::Relaxed)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}
