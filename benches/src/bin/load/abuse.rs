//! The abusive key: 64 tasks on one key with a low limit, almost every call denied, to measure the deny cache.

use std::time::Duration;

use limiter_runtime::Algorithm;

use crate::contender::{Caller, Contender, Scenario, ABUSE_WINDOW};
use crate::report::Abused;
use crate::server::{self, Counters};
use crate::{cli, run, Context};

/// The tasks hammering the abusive key.
pub(crate) const TASKS: usize = 64;
/// The contenders, in the report's order.
pub(crate) const CONTENDERS: [Contender; 4] = [
    Contender::Annotated,
    Contender::Plain,
    Contender::PlainNoCache,
    Contender::Baseline,
];

/// Every algorithm's runs, contenders alternating.
pub(crate) async fn measure(
    cx: &Context<'_>,
    connection: &mut redis::Connection,
    seed: &mut u64,
) -> Vec<Abused> {
    let options = cx.options;
    let mut abused = Vec::new();
    for &algorithm in &options.algorithms {
        for round in 0..options.rounds {
            let mut order = CONTENDERS;
            order.rotate_left(round % CONTENDERS.len());
            for contender in order {
                *seed += 1;
                let run = measure_run(cx, connection, contender, algorithm, round, *seed).await;
                eprintln!(
                    "[{:>5.0}s] abusive key  {:<14} round {}/{}  {:<26} {:>10.0} decisions/s  {:>6} Redis calls",
                    cx.started.elapsed().as_secs_f64(),
                    cli::name(algorithm),
                    round + 1,
                    options.rounds,
                    contender.label(),
                    run.rps,
                    run.redis_calls,
                );
                abused.push(run);
            }
        }
    }
    abused
}

async fn measure_run(
    cx: &Context<'_>,
    connection: &mut redis::Connection,
    contender: Contender,
    algorithm: Algorithm,
    round: usize,
    seed: u64,
) -> Abused {
    let options = cx.options;
    let caller = Caller::new(contender, algorithm, Scenario::Abuse, cx.url).await;
    // Connect and load the script on another key; the abusive key (0) starts unknown to Redis and to the node.
    caller.warm(1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    server::flush(connection);
    let degraded_before = caller.degraded();
    // First contact: every task's first call is in flight before Redis has said anything. Measured apart,
    // then the steady state.
    let first = Counters::read(connection);
    let warmup = options.warmup.max(ABUSE_WINDOW);
    run::drive(&caller, TASKS, 1, warmup, false, seed ^ 0xbeef).await;
    let before = Counters::read(connection);
    let tally = run::drive(&caller, TASKS, 1, options.abuse_duration, false, seed).await;
    let redis = Counters::read(connection).since(&before);
    let degraded = caller.degraded() - degraded_before;
    let mut abused = Abused::from_run(
        contender,
        algorithm,
        round,
        options.abuse_duration,
        &tally,
        &redis,
        degraded,
    );
    abused.warmup_calls = before.since(&first).script_calls;
    abused
}
