//! The spread scenario: for every algorithm and concurrency, the contenders alternate over random keys, almost
//! every call admitted; at the ceiling's concurrency `redis-benchmark` calls the library's script of one limit and the
//! minimal one, for Redis's ceiling and its CPU per call of each.

use std::path::Path;

use limiter_runtime::Algorithm;

use crate::contender::{Caller, Contender, Scenario};
use crate::report::{Cell, Measured};
use crate::server::{self, Counters};
use crate::{ceiling, cli, run, scripts, Context};

/// The runs of every cell of the spread scenario in `cx`'s layout; `ceiling` is redis-benchmark, if it runs,
/// at `ceiling_at` tasks.
pub(crate) async fn measure(
    cx: &Context<'_>,
    connection: &mut redis::Connection,
    ceiling: Option<&Path>,
    ceiling_at: usize,
    seed: &mut u64,
) -> Vec<Measured> {
    let options = cx.options;
    let mut measured = Vec::new();
    for &algorithm in &options.algorithms {
        for &concurrency in &options.concurrency {
            let mut contenders = vec![Contender::Baseline, Contender::Plain, Contender::Annotated];
            if options.ablation {
                contenders.extend([Contender::BaselineTimeout, Contender::BaselineClone]);
            }
            if options.per_key {
                contenders.push(Contender::PlainPerKey);
            }
            if concurrency == ceiling_at && ceiling.is_some() {
                contenders.extend([Contender::Ceiling, Contender::CeilingMinimal]);
            }
            for round in 0..options.rounds {
                // Alternate who goes first, so that drift (the other load on the machine) spreads evenly.
                let mut order = contenders.clone();
                order.rotate_left(round % contenders.len());
                for contender in order {
                    *seed += 1;
                    let cell = Cell {
                        layout: cx.layout_index,
                        contender,
                        algorithm,
                        concurrency,
                        round,
                    };
                    let run = match (contender, ceiling) {
                        (Contender::Ceiling | Contender::CeilingMinimal, Some(binary)) => {
                            measure_ceiling(cx, binary, connection, cell).await
                        }
                        _ => {
                            let caller =
                                Caller::new(contender, algorithm, Scenario::Spread, cx.url).await;
                            measure_run(cx, &caller, connection, cell, *seed).await
                        }
                    };
                    eprintln!(
                        "[{:>5.0}s] {:<8} {:<14} {:>3} tasks  round {}/{}  {:<38} {:>9.0} decisions/s  p99 {:>7.0} µs",
                        cx.started.elapsed().as_secs_f64(),
                        cx.layout.name(),
                        cli::name(algorithm),
                        concurrency,
                        round + 1,
                        options.rounds,
                        contender.label(),
                        run.rps,
                        run.p99_us,
                    );
                    measured.push(run);
                }
            }
        }
    }
    measured
}

async fn measure_run(
    cx: &Context<'_>,
    caller: &Caller,
    connection: &mut redis::Connection,
    cell: Cell,
    seed: u64,
) -> Measured {
    let options = cx.options;
    // Warm: connected, script loaded, caches and allocators in their steady state. Then start from an empty
    // Redis, so that every run sees the same key sizes.
    run::drive(
        caller,
        cell.concurrency,
        options.keys,
        options.warmup,
        false,
        seed ^ 0xdead,
    )
    .await;
    server::flush(connection);
    let degraded_before = caller.degraded();
    let before = Counters::read(connection);
    let client_before = run::client_cpu_us();
    let mut tally = run::drive(
        caller,
        cell.concurrency,
        options.keys,
        options.duration,
        true,
        seed,
    )
    .await;
    let client_cpu = run::client_cpu_us() - client_before;
    tally.latencies.sort_unstable();
    let redis = Counters::read(connection).since(&before);
    let degraded = caller.degraded() - degraded_before;
    Measured::from_run(cell, options.duration, &tally, &redis, client_cpu, degraded)
}

/// `redis-benchmark` calling the library's script of one limit of the cell's algorithm (`Contender::Ceiling`) or the
/// minimal one (`Contender::CeilingMinimal`).
async fn measure_ceiling(
    cx: &Context<'_>,
    binary: &Path,
    connection: &mut redis::Connection,
    cell: Cell,
) -> Measured {
    let options = cx.options;
    let (source, args) = ceiling_script(cell.contender, cell.algorithm);
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(source)
        .query(connection)
        .expect("SCRIPT LOAD answers");
    // About one run's duration at ~150 000 calls/s.
    let requests = ((options.duration.as_secs_f64() * 150_000.0) as u64).max(10_000);
    // Warm, then measure from an empty Redis, like the other contenders.
    let warm = ((options.warmup.as_secs_f64() * 150_000.0) as u64).max(1_000);
    let run = |requests| {
        ceiling::run(
            cx.layout,
            binary,
            cx.port,
            &sha,
            "bench:ceil:",
            options.keys,
            &args,
            requests,
        )
    };
    let _ = run(warm).await;
    server::flush(connection);
    let before = Counters::read(connection);
    let result = run(requests).await;
    let redis = Counters::read(connection).since(&before);
    match result {
        Ok(rps) => Measured::from_ceiling(cell, rps, requests, &redis),
        Err(error) => {
            eprintln!("load: {error}");
            Measured::failed(cell, error)
        }
    }
}

/// The script `contender` (a ceiling) calls, and its arguments for one call of the spread scenario's limit.
fn ceiling_script(contender: Contender, algorithm: Algorithm) -> (&'static str, Vec<String>) {
    let limit = Scenario::Spread.limit();
    match contender {
        Contender::CeilingMinimal => (
            scripts::minimal_source(algorithm),
            scripts::minimal_ceiling_args(algorithm, limit),
        ),
        _ => (
            scripts::library_source(algorithm),
            scripts::library_ceiling_args(algorithm, limit),
        ),
    }
}
