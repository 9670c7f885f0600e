//! The load benchmark: limiter on Redis under concurrency, side by side with what a user writes without it.
//!
//! It starts its own `redis-server` on a free loopback port (`test_support`), then measures three scenarios:
//!
//! - spread (`spread`): for every algorithm and concurrency, the annotated function (`#[rate_limit]`), the
//!   plain API (`Limiter::check`) and the baseline, a minimal hand-written script per algorithm called with
//!   `redis::Script` on a `ConnectionManager`, alternate over 10 000 random keys, a fresh contender each run;
//!   at 64 tasks `redis-benchmark` calls the library's script of one limit and the minimal one (Redis's own ceiling,
//!   and its CPU per call of each);
//! - abusive key (`abuse`): 64 tasks on one key with a low limit, to measure the deny cache;
//! - hot key (`hot`): one key every call of which is admitted, from one process and more (this binary again,
//!   in worker mode), to measure coalescing and leases.
//!
//! Each run reports decisions per second, latency percentiles, and what Redis spent (`INFO`). The report is
//! markdown, on stdout. See BENCHMARKS.md.
//!
//! The spread scenario runs in every CPU layout asked for (`--layouts`: Redis pinned to a CPU of its own, or
//! sharing them all), one after the other; the abusive and hot keys run in the first. See `pinning`.

mod abuse;
mod ceiling;
mod cli;
mod contender;
mod hot;
mod in_flight;
mod instructions;
mod pinning;
mod plot;
mod report;
mod run;
mod scripts;
mod server;
mod spread;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use test_support::RedisServer;

use crate::cli::Options;
use crate::pinning::Layout;
use crate::report::{Machine, Report};

/// Prints a mode's report (and writes it to `--out`), or its error, and exits.
fn finish(report: Result<String, String>, options: &Options) -> ! {
    match report {
        Ok(text) => {
            println!("{text}");
            if let Some(path) = &options.out {
                if let Err(error) = std::fs::write(path, &text) {
                    eprintln!("load: cannot write {}: {error}", path.display());
                    std::process::exit(1);
                }
            }
            std::process::exit(0);
        }
        Err(error) => {
            eprintln!("load: {error}");
            std::process::exit(1);
        }
    }
}

/// The concurrency at which `redis-benchmark`'s ceiling is compared.
const CEILING_CONCURRENCY: usize = 64;

/// What every scenario's runs need to know.
pub(crate) struct Context<'a> {
    pub(crate) options: &'a Options,
    pub(crate) layout: &'a Layout,
    /// The layout's index in the report.
    pub(crate) layout_index: usize,
    pub(crate) url: &'a str,
    pub(crate) port: u16,
    /// When the benchmark started, for its progress lines.
    pub(crate) started: Instant,
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some(hot::worker::FLAG) {
        args.next();
        hot::worker::main(args);
    }
    if args.peek().map(String::as_str) == Some(instructions::worker::FLAG) {
        args.next();
        instructions::worker::main(args);
    }
    let options = match Options::parse(args) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            std::process::exit(2);
        }
    };
    if options.instructions {
        let plan = instructions::Plan {
            calls: options.calls,
            algorithms: options.algorithms.clone(),
        };
        finish(instructions::run(&plan), &options);
    }
    if options.in_flight {
        let plan = in_flight::Plan {
            duration: options.duration,
            rounds: options.rounds,
            keys: options.keys,
            workers: options.workers.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
            }),
        };
        finish(in_flight::run(&plan), &options);
    }
    if cfg!(debug_assertions) && !options.smoke {
        eprintln!("load: this is a debug build; its numbers mean little. Build with --release (scripts/bench does).");
    }
    let layouts = match Layout::plan(options.layouts) {
        Ok(layouts) => layouts,
        Err(error) => {
            eprintln!("load: {error}");
            std::process::exit(2);
        }
    };
    let server = RedisServer::start();
    let redis_pid = server.pid();
    let (url, port, mut connection) = (server.url(), server.port(), server.connection());
    let server = Arc::new(Mutex::new(Some(server)));
    watchdog(&options, layouts.len(), Arc::clone(&server));
    stop_on_ctrl_c(Arc::clone(&server));

    let machine = Machine::probe(&mut connection, &options, &layouts);
    let ceiling_binary = options.ceiling.then(ceiling::binary).flatten();
    let mut report = Report {
        machine,
        options: options.clone(),
        ceiling_note: match (&ceiling_binary, options.ceiling) {
            _ if !options.spread => None,
            (_, false) => Some("skipped (--no-ceiling)".to_owned()),
            (None, true) => Some(
                "skipped: redis-benchmark is not installed (Debian package redis-tools)".to_owned(),
            ),
            (Some(_), true) => None,
        },
        ceiling_at: if options.concurrency.contains(&CEILING_CONCURRENCY) {
            CEILING_CONCURRENCY
        } else {
            options
                .concurrency
                .iter()
                .copied()
                .max()
                .unwrap_or(CEILING_CONCURRENCY)
        },
        measured: Vec::new(),
        abused: Vec::new(),
        hot: Vec::new(),
    };
    let started = Instant::now();
    let mut seed = 1;
    for (index, layout) in layouts.iter().enumerate() {
        if let Err(error) = layout.enter(redis_pid) {
            eprintln!("load: {error}");
            drop(server.lock().unwrap().take());
            std::process::exit(2);
        }
        let workers = report::workers(&options, layout);
        eprintln!("load: {} Tokio workers: {workers}.", layout.describe());
        // A runtime per layout: its worker threads start inside the layout's CPUs.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .expect("a Tokio runtime");
        let cx = Context {
            options: &options,
            layout,
            layout_index: index,
            url: &url,
            port,
            started,
        };
        runtime.block_on(async {
            if options.spread {
                let measured = spread::measure(
                    &cx,
                    &mut connection,
                    ceiling_binary.as_deref(),
                    report.ceiling_at,
                    &mut seed,
                )
                .await;
                report.measured.extend(measured);
            }
            if index == 0 && options.abuse {
                report.abused = abuse::measure(&cx, &mut connection, &mut seed).await;
            }
            if index == 0 && options.hot {
                report.hot = hot::measure(&cx, &mut connection, &mut seed).await;
            }
        });
        runtime.shutdown_timeout(Duration::from_secs(1));
    }
    drop(server.lock().unwrap().take());

    let text = report.markdown();
    println!("{text}");
    if let Some(path) = &options.out {
        if let Err(error) = std::fs::write(path, &text) {
            eprintln!("load: cannot write {}: {error}", path.display());
        }
    }
    if let Some(path) = &options.plot {
        // The plot is of the spread scenario.
        let drawn = if report.measured.is_empty() {
            Err("the spread scenario did not run".to_owned())
        } else {
            plot::draw(&report, path)
        };
        match drawn {
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

/// On Ctrl-C, stops redis-server and ends the process (its worker processes get the same signal). A thread of
/// its own, with a runtime of its own, so that it outlives each layout's runtime.
fn stop_on_ctrl_c(server: Arc<Mutex<Option<RedisServer>>>) {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a Tokio runtime");
        if runtime.block_on(tokio::signal::ctrl_c()).is_ok() {
            eprintln!("load: interrupted; stopping redis-server");
            drop(server.lock().unwrap().take());
            std::process::exit(130);
        }
    });
}

/// Ends the process (and its redis-server) if the run takes far longer than its options say it should.
fn watchdog(options: &Options, layouts: usize, server: Arc<Mutex<Option<RedisServer>>>) {
    let slack = Duration::from_secs(3);
    let contenders = if options.ablation { 7 } else { 5 } + usize::from(options.per_key);
    let spread = if options.spread {
        let runs =
            options.algorithms.len() * options.concurrency.len() * options.rounds * contenders;
        (options.duration + options.warmup + slack) * (runs * layouts) as u32
    } else {
        Duration::ZERO
    };
    let abuse = if options.abuse {
        let runs = options.algorithms.len() * options.rounds * abuse::CONTENDERS.len();
        (options.abuse_duration + options.warmup + slack) * runs as u32
    } else {
        Duration::ZERO
    };
    let hot = if options.hot {
        let runs = hot::ALGORITHMS.len()
            * options.hot_processes.len()
            * options.hot_concurrency.len()
            * options.hot_rounds
            * hot::CONTENDERS.len();
        (options.hot_duration + options.warmup + slack) * runs as u32
    } else {
        Duration::ZERO
    };
    let bound = (spread + abuse + hot) * 2 + Duration::from_secs(120);
    std::thread::spawn(move || {
        std::thread::sleep(bound);
        eprintln!("load: still running after {bound:?}, far longer than planned; giving up");
        drop(server.lock().unwrap().take());
        std::process::exit(3);
    });
}
