//! The hot key: every task of one or more processes on one key, with a limit no call reaches (every call
//! admitted), to measure what coalescing and leases save Redis. The extra processes are this binary again in
//! worker mode (`worker`), on the same key, started together; their decisions add up, and the worst p99 of
//! them is the run's.

pub(crate) mod report;
pub(crate) mod worker;

use std::time::{Duration, Instant};

use limiter_runtime::Algorithm;

use crate::contender::{Caller, Contender, Scenario};
use crate::server::{self, Counters};
use crate::{cli, run, Context};

use self::worker::{Job, Workers};

/// The algorithms the hot key runs on: those a lease serves, and the sliding log (its coalesced calls one
/// member; no lease).
pub(crate) const ALGORITHMS: [Algorithm; 3] = [
    Algorithm::TokenBucket,
    Algorithm::FixedWindow,
    Algorithm::SlidingLog,
];
/// The contenders, in the report's order.
pub(crate) const CONTENDERS: [Contender; 5] = [
    Contender::Baseline,
    Contender::Plain,
    Contender::Annotated,
    Contender::PlainNoCoalesce,
    Contender::PlainLease,
];
/// How long a worker may take to connect and warm up, and to report once its run is over.
const WORKER_PATIENCE: Duration = Duration::from_secs(60);

/// What one process did in a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Share {
    pub(crate) decisions: u64,
    pub(crate) admitted: u64,
    pub(crate) failed: u64,
    /// Calls in flight at the deadline: Redis ran them, they are not counted as decisions.
    pub(crate) late: u64,
    pub(crate) degraded: u64,
    pub(crate) p99_us: f64,
}

/// One process's tasks on the hot key for `duration`, every call timed.
pub(crate) async fn share(caller: &Caller, tasks: usize, duration: Duration, seed: u64) -> Share {
    let degraded = caller.degraded();
    let mut tally = run::drive(caller, tasks, 1, duration, true, seed).await;
    tally.latencies.sort_unstable();
    Share {
        decisions: tally.decisions,
        admitted: tally.admitted,
        failed: tally.failed,
        late: tally.late,
        degraded: caller.degraded() - degraded,
        p99_us: tally.percentile_us(0.99),
    }
}

/// One run of the hot key: every process's share together.
#[derive(Debug, Clone)]
pub(crate) struct HotRun {
    pub(crate) contender: Contender,
    pub(crate) algorithm: Algorithm,
    pub(crate) processes: usize,
    /// Tasks in each process.
    pub(crate) tasks: usize,
    pub(crate) round: usize,
    /// The measured time of each process, s.
    pub(crate) seconds: f64,
    /// The shares added up; `p99_us` is the worst process's.
    pub(crate) total: Share,
    /// What Redis did from just before the processes started to just after the last one reported.
    pub(crate) redis: Counters,
    /// The wall time between those two readings, s.
    pub(crate) elapsed: f64,
    pub(crate) error: Option<String>,
}

impl HotRun {
    /// Decisions per second, every process together.
    pub(crate) fn rps(&self) -> f64 {
        self.total.decisions as f64 / self.seconds
    }

    fn executed(&self) -> f64 {
        (self.total.decisions + self.total.late).max(1) as f64
    }

    /// Script calls Redis ran per decision.
    pub(crate) fn calls_per_decision(&self) -> f64 {
        self.redis.script_calls as f64 / self.executed()
    }

    /// Redis's execution time per script call, µs (commandstats).
    pub(crate) fn script_us_per_call(&self) -> f64 {
        self.redis.script_us as f64 / self.redis.script_calls.max(1) as f64
    }

    /// Redis's whole-process CPU per decision, µs.
    pub(crate) fn cpu_us_per_decision(&self) -> f64 {
        self.redis.cpu_us / self.executed()
    }

    /// Redis's CPU over the run, as a share of one core.
    pub(crate) fn redis_core_share(&self) -> f64 {
        self.redis.cpu_us / (self.elapsed * 1e6)
    }
}

/// Every cell of the hot key (algorithm × processes × tasks), contenders alternating over the rounds.
pub(crate) async fn measure(
    cx: &Context<'_>,
    connection: &mut redis::Connection,
    seed: &mut u64,
) -> Vec<HotRun> {
    let options = cx.options;
    let mut runs = Vec::new();
    let algorithms = ALGORITHMS
        .into_iter()
        .filter(|a| options.algorithms.contains(a));
    for algorithm in algorithms {
        for &processes in &options.hot_processes {
            for &tasks in &options.hot_concurrency {
                for round in 0..options.hot_rounds {
                    let mut order = CONTENDERS;
                    order.rotate_left(round % CONTENDERS.len());
                    for contender in order {
                        if contender == Contender::PlainLease && algorithm == Algorithm::SlidingLog
                        {
                            continue;
                        }
                        *seed += 1;
                        let job = Job {
                            url: cx.url.to_owned(),
                            contender,
                            algorithm,
                            tasks,
                            warmup: options.warmup,
                            duration: options.hot_duration,
                            seed: *seed,
                            workers: crate::report::workers(options, cx.layout),
                        };
                        let run = measure_run(cx, connection, &job, processes, round).await;
                        eprintln!(
                            "[{:>5.0}s] hot key  {:<14} {} process(es) × {:>3} tasks  round {}/{}  {:<30} {:>9.0} decisions/s  p99 {:>7.0} µs  {:.3} script calls/decision",
                            cx.started.elapsed().as_secs_f64(),
                            cli::name(algorithm),
                            processes,
                            tasks,
                            round + 1,
                            options.hot_rounds,
                            contender.label(),
                            run.rps(),
                            run.total.p99_us,
                            run.calls_per_decision(),
                        );
                        runs.push(run);
                    }
                }
            }
        }
    }
    runs
}

/// One run: `processes - 1` workers and this process, each with `job.tasks` tasks on the hot key, from an
/// empty Redis, started together once every one has warmed up.
async fn measure_run(
    cx: &Context<'_>,
    connection: &mut redis::Connection,
    job: &Job,
    processes: usize,
    round: usize,
) -> HotRun {
    let mut run = HotRun {
        contender: job.contender,
        algorithm: job.algorithm,
        processes,
        tasks: job.tasks,
        round,
        seconds: job.duration.as_secs_f64(),
        total: Share::default(),
        redis: Counters::default(),
        elapsed: f64::NAN,
        error: None,
    };
    server::flush(connection);
    let result = async {
        let mut workers = Workers::spawn(cx.layout, job, processes - 1)?;
        let caller = Caller::new(job.contender, job.algorithm, Scenario::Hot, &job.url).await;
        run::drive(&caller, job.tasks, 1, job.warmup, false, job.seed ^ 0xfeed).await;
        workers.ready(WORKER_PATIENCE).await?;
        let before = Counters::read(connection);
        let start = Instant::now();
        workers.go().await?;
        let own = share(&caller, job.tasks, job.duration, job.seed).await;
        let mut shares = workers.shares(job.duration + WORKER_PATIENCE).await?;
        run.redis = Counters::read(connection).since(&before);
        run.elapsed = start.elapsed().as_secs_f64();
        shares.push(own);
        Ok::<_, String>(shares)
    }
    .await;
    match result {
        Ok(shares) => {
            for s in shares {
                let t = &mut run.total;
                t.decisions += s.decisions;
                t.admitted += s.admitted;
                t.failed += s.failed;
                t.late += s.late;
                t.degraded += s.degraded;
                t.p99_us = t.p99_us.max(s.p99_us);
            }
        }
        Err(error) => {
            eprintln!("load: hot key: {error}");
            run.error = Some(error);
        }
    }
    run
}
