//! The load benchmark: limiter on Redis under concurrency, side by side with what a user writes without it.
//!
//! It starts its own `redis-server` on a free loopback port (`test_support`), then, for every
//! algorithm and concurrency, alternates three contenders over 10 000 random keys, a fresh one each run:
//!
//! - the annotated function (`#[rate_limit]`),
//! - the plain API (`Limiter::check`),
//! - the baseline: a hand-written `redis::Script` (the library's own Lua file, the same arguments) on a
//!   `ConnectionManager`,
//!
//! and, at 64 tasks, `redis-benchmark` calling the same script (Redis's own ceiling). Each run reports
//! decisions per second, latency percentiles, and what Redis spent (`INFO`). Then an abusive key: 64 tasks on
//! one key with a low limit, to measure the deny cache. The report is markdown, on stdout. See BENCHMARKS.md.
//!
//! By default (`--pinned`, when there are 2 CPUs or more and `taskset`), Redis runs on one CPU of its own and
//! every client (this process, redis-benchmark) on the others; see `pinning`.

mod ceiling;
mod cli;
mod pinning;
mod plot;
mod report;
mod run;
mod server;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use limiter_runtime::Algorithm;
use test_support::RedisServer;

use crate::cli::Options;
use crate::pinning::Layout;
use crate::report::{Abused, Machine, Measured, Report};
use crate::run::{Caller, Contender, Scenario};
use crate::server::Counters;

/// The tasks hammering the abusive key.
const ABUSE_TASKS: usize = 64;
/// The concurrency at which `redis-benchmark`'s ceiling is compared.
const CEILING_CONCURRENCY: usize = 64;

fn main() {
    let mut options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    if cfg!(debug_assertions) && !options.smoke {
        eprintln!("load: this is a debug build; its numbers mean little. Build with --release (scripts/bench does).");
    }
    // First, while this process has a single thread: pinned, every thread it starts later (the watchdog,
    // Tokio's workers and blocking pool) inherits the client CPUs.
    let layout = match Layout::choose(options.pinned) {
        Ok(layout) => layout,
        Err(error) => {
            eprintln!("load: {error}");
            std::process::exit(2);
        }
    };
    let workers = *options.workers.get_or_insert(layout.client_cpus());
    eprintln!("load: {} Tokio workers: {workers}.", layout.describe());
    let server = RedisServer::start();
    if let Err(error) = server.pid().map_or(Ok(()), |pid| layout.pin_redis(pid)) {
        eprintln!("load: {error}");
        std::process::exit(2);
    }
    let server = Arc::new(Mutex::new(Some(server)));
    watchdog(&options, Arc::clone(&server));

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let report = runtime.block_on(async {
        let on_signal = Arc::clone(&server);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("load: interrupted; stopping redis-server");
                drop(on_signal.lock().unwrap().take());
                std::process::exit(130);
            }
        });
        let (url, port, connection) = {
            let guard = server.lock().unwrap();
            let server = guard.as_ref().expect("redis-server is running");
            (server.url(), server.port(), server.connection())
        };
        measure(&options, &layout, &url, port, connection).await
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    drop(server.lock().unwrap().take());

    let text = report.markdown();
    println!("{text}");
    if let Some(path) = &options.out {
        if let Err(error) = std::fs::write(path, &text) {
            eprintln!("load: cannot write {}: {error}", path.display());
        }
    }
    if let Some(path) = &options.plot {
        match plot::draw(&report, path) {
            Ok(()) => eprintln!("load: plot in {}", path.display()),
            Err(error) => eprintln!("load: no plot: {error}"),
        }
    }
    let problems = report.problems();
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("load: {problem}");
        }
        if options.smoke {
            std::process::exit(1);
        }
    }
}

/// Ends the process (and its redis-server) if the run takes far longer than its options say it should.
fn watchdog(options: &Options, server: Arc<Mutex<Option<RedisServer>>>) {
    let contenders = if options.ablation { 6 } else { 4 };
    let runs = options.algorithms.len() * options.concurrency.len() * options.rounds * contenders;
    let per_run = options.duration + options.warmup + Duration::from_secs(3);
    let abuse =
        options.algorithms.len() as u32 * 4 * (options.abuse_duration + Duration::from_secs(2));
    let bound = per_run * runs as u32 * 2 + abuse * 2 + Duration::from_secs(120);
    std::thread::spawn(move || {
        std::thread::sleep(bound);
        eprintln!("load: still running after {bound:?}, far longer than planned; giving up");
        drop(server.lock().unwrap().take());
        std::process::exit(3);
    });
}

async fn measure(
    options: &Options,
    layout: &Layout,
    url: &str,
    port: u16,
    mut connection: redis::Connection,
) -> Report {
    let machine = Machine::probe(&mut connection, options, layout);
    let ceiling_binary = if options.ceiling {
        ceiling::binary()
    } else {
        None
    };
    let ceiling_at = if options.concurrency.contains(&CEILING_CONCURRENCY) {
        CEILING_CONCURRENCY
    } else {
        options
            .concurrency
            .iter()
            .copied()
            .max()
            .unwrap_or(CEILING_CONCURRENCY)
    };
    let mut report = Report {
        machine,
        options: options.clone(),
        ceiling_note: match (&ceiling_binary, options.ceiling) {
            (_, false) => Some("skipped (--no-ceiling)".to_owned()),
            (None, true) => Some(
                "skipped: redis-benchmark is not installed (Debian package redis-tools)".to_owned(),
            ),
            (Some(_), true) => None,
        },
        ceiling_at,
        measured: Vec::new(),
        abused: Vec::new(),
    };
    let started = Instant::now();
    let mut seed = 1;

    for &algorithm in &options.algorithms {
        for &concurrency in &options.concurrency {
            let mut contenders = vec![Contender::Baseline, Contender::Plain, Contender::Annotated];
            if options.ablation {
                contenders.extend([Contender::BaselineTimeout, Contender::BaselineClone]);
            }
            if concurrency == ceiling_at && ceiling_binary.is_some() {
                contenders.push(Contender::Ceiling);
            }
            for round in 0..options.rounds {
                // Alternate who goes first, so that drift (the other load on the machine) spreads evenly.
                let mut order = contenders.clone();
                order.rotate_left(round % contenders.len());
                for contender in order {
                    seed += 1;
                    let measured = match (contender, &ceiling_binary) {
                        (Contender::Ceiling, Some(binary)) => {
                            measure_ceiling(
                                options,
                                layout,
                                binary,
                                port,
                                &mut connection,
                                algorithm,
                                concurrency,
                                round,
                            )
                            .await
                        }
                        _ => {
                            let caller =
                                Caller::new(contender, algorithm, Scenario::Spread, url).await;
                            measure_spread(
                                options,
                                &caller,
                                &mut connection,
                                contender,
                                algorithm,
                                concurrency,
                                round,
                                seed,
                            )
                            .await
                        }
                    };
                    eprintln!(
                        "[{:>5.0}s] {:<14} {:>3} tasks  round {}/{}  {:<26} {:>9.0} decisions/s  p99 {:>7.0} µs",
                        started.elapsed().as_secs_f64(),
                        cli::name(algorithm),
                        concurrency,
                        round + 1,
                        options.rounds,
                        contender.label(),
                        measured.rps,
                        measured.p99_us,
                    );
                    report.measured.push(measured);
                }
            }
        }
    }

    if options.abuse {
        let contenders = [
            Contender::Baseline,
            Contender::Plain,
            Contender::Annotated,
            Contender::PlainNoCache,
        ];
        for &algorithm in &options.algorithms {
            for round in 0..options.rounds {
                let mut order = contenders;
                order.rotate_left(round % contenders.len());
                for contender in order {
                    seed += 1;
                    let abused = measure_abuse(
                        options,
                        url,
                        &mut connection,
                        contender,
                        algorithm,
                        round,
                        seed,
                    )
                    .await;
                    eprintln!(
                        "[{:>5.0}s] abusive key  {:<14} round {}/{}  {:<26} {:>10.0} decisions/s  {:>6} Redis calls",
                        started.elapsed().as_secs_f64(),
                        cli::name(algorithm),
                        round + 1,
                        options.rounds,
                        contender.label(),
                        abused.rps,
                        abused.redis_calls,
                    );
                    report.abused.push(abused);
                }
            }
        }
    }
    report
}

#[allow(clippy::too_many_arguments)]
async fn measure_spread(
    options: &Options,
    caller: &Caller,
    connection: &mut redis::Connection,
    contender: Contender,
    algorithm: Algorithm,
    concurrency: usize,
    round: usize,
    seed: u64,
) -> Measured {
    // Warm: connected, script loaded, caches and allocators in their steady state. Then start from an empty
    // Redis, so that every run sees the same key sizes.
    run::drive(
        caller,
        concurrency,
        options.keys,
        options.warmup,
        false,
        seed ^ 0xdead,
    )
    .await;
    server::flush(connection);
    let degraded_before = caller.limiter().map_or(0, |l| l.stats().degraded);
    let before = Counters::read(connection);
    let client_before = run::client_cpu_us();
    let mut tally = run::drive(
        caller,
        concurrency,
        options.keys,
        options.duration,
        true,
        seed,
    )
    .await;
    let client_cpu = run::client_cpu_us() - client_before;
    tally.latencies.sort_unstable();
    let redis = Counters::read(connection).since(&before);
    let degraded = caller.limiter().map_or(0, |l| l.stats().degraded) - degraded_before;
    Measured::from_run(
        contender,
        algorithm,
        concurrency,
        round,
        options.duration,
        &tally,
        &redis,
        client_cpu,
        degraded,
    )
}

#[allow(clippy::too_many_arguments)]
async fn measure_ceiling(
    options: &Options,
    layout: &Layout,
    binary: &std::path::Path,
    port: u16,
    connection: &mut redis::Connection,
    algorithm: Algorithm,
    concurrency: usize,
    round: usize,
) -> Measured {
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(run::LIBRARY_SCRIPT)
        .query(connection)
        .expect("SCRIPT LOAD answers");
    let args = Scenario::Spread.library_args(algorithm);
    // About one run's duration at ~150 000 calls/s.
    let requests = ((options.duration.as_secs_f64() * 150_000.0) as u64).max(10_000);
    // Warm, then measure from an empty Redis, like the other contenders.
    let warm = ((options.warmup.as_secs_f64() * 150_000.0) as u64).max(1_000);
    let run = |requests| {
        ceiling::run(
            layout,
            binary,
            port,
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
        Ok(rps) => Measured::from_ceiling(algorithm, concurrency, round, rps, requests, &redis),
        Err(error) => {
            eprintln!("load: {error}");
            Measured::failed(Contender::Ceiling, algorithm, concurrency, round, error)
        }
    }
}

async fn measure_abuse(
    options: &Options,
    url: &str,
    connection: &mut redis::Connection,
    contender: Contender,
    algorithm: Algorithm,
    round: usize,
    seed: u64,
) -> Abused {
    let caller = Caller::new(contender, algorithm, Scenario::Abuse, url).await;
    // Connect and load the script on another key; the abusive key (0) starts unknown to Redis and to the node.
    caller.warm(1).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    server::flush(connection);
    let degraded_before = caller.limiter().map_or(0, |l| l.stats().degraded);
    // First contact: every task's first call is in flight before Redis has said anything. Measured apart,
    // then the steady state.
    let first = Counters::read(connection);
    let warmup = options.warmup.max(run::ABUSE_WINDOW);
    run::drive(&caller, ABUSE_TASKS, 1, warmup, false, seed ^ 0xbeef).await;
    let before = Counters::read(connection);
    let tally = run::drive(&caller, ABUSE_TASKS, 1, options.abuse_duration, false, seed).await;
    let redis = Counters::read(connection).since(&before);
    let degraded = caller.limiter().map_or(0, |l| l.stats().degraded) - degraded_before;
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
