//! The client's side, counted: this binary run again under callgrind (`load --instructions-worker ...`),
//! making a given number of decisions with one contender on a single-threaded runtime (so that every
//! instruction of the decision, the runtime's and redis-rs's included, is on the counted thread), inside
//! [`limiter_bench_measured`]. It answers on one line: `decisions <n> scripts <script calls Redis ran>`.

use std::time::Duration;

use limiter_runtime::Algorithm;

use super::callgrind::limiter_bench_measured;
use crate::contender::{Caller, Contender, Scenario};

/// The flag that starts worker mode; the job's options follow it.
pub(crate) const FLAG: &str = "--instructions-worker";

/// What a counted client does.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) url: String,
    pub(crate) contender: Contender,
    pub(crate) algorithm: Algorithm,
    pub(crate) scenario: Scenario,
    pub(crate) calls: u64,
    pub(crate) tasks: u64,
}

impl Job {
    /// The job as the options that follow [`FLAG`].
    pub(crate) fn args(&self) -> Vec<String> {
        let scenario = match self.scenario {
            Scenario::Hot => "hot",
            _ => "spread",
        };
        vec![
            FLAG.to_owned(),
            self.url.clone(),
            self.contender.name().to_owned(),
            self.algorithm.name().to_owned(),
            scenario.to_owned(),
            self.calls.to_string(),
            self.tasks.to_string(),
        ]
    }

    fn parse(mut args: impl Iterator<Item = String>) -> Option<Job> {
        let url = args.next()?;
        let contender = Contender::driven(&args.next()?)?;
        // A limit in flight is no rate algorithm (`FromStr` names those), but a plain call of one takes a
        // permit and gives it back: what `acquire` and a release cost the client.
        let algorithm = match args.next()?.as_str() {
            "in_flight" => Algorithm::InFlight,
            rate => rate.parse().ok()?,
        };
        let scenario = match args.next()?.as_str() {
            "hot" => Scenario::Hot,
            _ => Scenario::Spread,
        };
        let calls = args.next()?.parse().ok()?;
        let tasks = args.next()?.parse().ok()?;
        Some(Job {
            url,
            contender,
            algorithm,
            scenario,
            calls,
            tasks,
        })
    }
}

/// Worker mode: runs the job described by `args`, then exits.
pub(crate) fn main(args: impl Iterator<Item = String>) -> ! {
    let Some(job) = Job::parse(args) else {
        eprintln!("load: {FLAG} <url> <contender> <algorithm> <spread|hot> <calls> <tasks>");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let caller = runtime.block_on(Caller::new(
        job.contender,
        job.algorithm,
        job.scenario,
        &job.url,
    ));
    let keys = match job.scenario {
        Scenario::Hot => 1,
        _ => 10_000,
    };
    // Connected, the script loaded, the rule resolved: what every later call finds done.
    runtime.block_on(calls(&caller, 1, 200, keys, 7));
    let mut redis = redis::Client::open(job.url.as_str())
        .and_then(|client| client.get_connection())
        .expect("the benchmark's redis-server accepts a connection");
    let before = scripts(&mut redis);
    let mut work = || runtime.block_on(calls(&caller, job.tasks, job.calls, keys, 11));
    limiter_bench_measured(&mut work);
    let after = scripts(&mut redis);
    if let Some(limiter) = caller.limiter() {
        let degraded = limiter.stats().degraded;
        if degraded > 0 {
            eprintln!("load: {degraded} decisions made without Redis while counting");
            std::process::exit(1);
        }
    }
    println!("decisions {} scripts {}", job.calls, after - before);
    std::process::exit(0);
}

/// `total` decisions from `tasks` tasks, on keys among `keys`.
pub(crate) async fn calls(caller: &Caller, tasks: u64, total: u64, keys: u32, seed: u64) {
    let per_task = total / tasks.max(1);
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let mut caller = caller.clone();
            // The annotated fn finds its limiter in the task's scope, as `run` gives it; the others need none.
            let limiter = match &caller {
                Caller::Annotated { limiter, .. } => Some(limiter.clone()),
                _ => None,
            };
            let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ task;
            let work = async move {
                for call in 0..per_task {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    caller.call((state % u64::from(keys)) as u32, call).await;
                }
            };
            tokio::spawn(async move {
                match limiter {
                    Some(limiter) => limiter.scope(work).await,
                    None => work.await,
                }
            })
        })
        .collect();
    for handle in handles {
        tokio::time::timeout(Duration::from_secs(600), handle)
            .await
            .expect("the counted calls finish")
            .expect("a counted task panicked");
    }
}

/// The script calls (`EVALSHA`, `EVAL`) Redis has run so far.
fn scripts(redis: &mut redis::Connection) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(redis)
        .expect("INFO answers");
    ["cmdstat_evalsha:calls=", "cmdstat_eval:calls="]
        .iter()
        .filter_map(|prefix| {
            let line = info.lines().find(|line| line.starts_with(prefix))?;
            line[prefix.len()..].split(',').next()?.parse::<u64>().ok()
        })
        .sum()
}
