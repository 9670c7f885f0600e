//! Worker mode: this binary run again (`load --hot-worker ...`) as one more process on the hot key, and the
//! parent's side of it. A worker connects and warms up, says `ready`, waits for `go` on its stdin, runs its
//! tasks for the run's duration, and answers its share on one line:
//! `share <decisions> <admitted> <failed> <late> <degraded> <p99 µs>`.

use std::process::Stdio;
use std::time::Duration;

use limiter_runtime::Algorithm;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use super::Share;
use crate::contender::{Caller, Contender, Scenario};
use crate::pinning::Layout;
use crate::run;

/// The flag that starts worker mode; the job's options follow it.
pub(crate) const FLAG: &str = "--hot-worker";

/// What a worker is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub(crate) url: String,
    pub(crate) contender: Contender,
    pub(crate) algorithm: Algorithm,
    pub(crate) tasks: usize,
    pub(crate) warmup: Duration,
    pub(crate) duration: Duration,
    pub(crate) seed: u64,
    /// Tokio worker threads.
    pub(crate) workers: usize,
}

impl Job {
    /// The job as the options that follow `FLAG`.
    fn args(&self) -> Vec<String> {
        [
            ("--url", self.url.clone()),
            ("--contender", self.contender.name().to_owned()),
            ("--algorithm", self.algorithm.name().to_owned()),
            ("--tasks", self.tasks.to_string()),
            ("--warmup", self.warmup.as_secs_f64().to_string()),
            ("--duration", self.duration.as_secs_f64().to_string()),
            ("--seed", self.seed.to_string()),
            ("--workers", self.workers.to_string()),
        ]
        .into_iter()
        .flat_map(|(flag, value)| [flag.to_owned(), value])
        .collect()
    }

    /// The job the options after `FLAG` describe.
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Job, String> {
        let (mut url, mut contender, mut algorithm) = (None, None, None);
        let (mut tasks, mut warmup, mut duration, mut seed, mut workers) =
            (None, None, None, None, None);
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
            let bad = |what: &str| format!("{flag} {value:?} is not {what}");
            let seconds = || {
                value
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .map(Duration::from_secs_f64)
                    .ok_or_else(|| bad("a number of seconds"))
            };
            match flag.as_str() {
                "--url" => url = Some(value.clone()),
                "--contender" => {
                    contender = Some(Contender::driven(&value).ok_or_else(|| bad("a contender"))?)
                }
                "--algorithm" => algorithm = Some(value.parse().map_err(|_| bad("an algorithm"))?),
                "--tasks" => tasks = Some(value.parse().map_err(|_| bad("a number"))?),
                "--warmup" => warmup = Some(seconds()?),
                "--duration" => duration = Some(seconds()?),
                "--seed" => seed = Some(value.parse().map_err(|_| bad("a number"))?),
                "--workers" => workers = Some(value.parse().map_err(|_| bad("a number"))?),
                other => return Err(format!("unknown worker option {other:?}")),
            }
        }
        let missing = |flag: &str| format!("{FLAG} needs {flag}");
        Ok(Job {
            url: url.ok_or_else(|| missing("--url"))?,
            contender: contender.ok_or_else(|| missing("--contender"))?,
            algorithm: algorithm.ok_or_else(|| missing("--algorithm"))?,
            tasks: tasks.ok_or_else(|| missing("--tasks"))?,
            warmup: warmup.ok_or_else(|| missing("--warmup"))?,
            duration: duration.ok_or_else(|| missing("--duration"))?,
            seed: seed.ok_or_else(|| missing("--seed"))?,
            workers: workers.ok_or_else(|| missing("--workers"))?,
        })
    }
}

impl Share {
    fn line(&self) -> String {
        format!(
            "share {} {} {} {} {} {}",
            self.decisions, self.admitted, self.failed, self.late, self.degraded, self.p99_us
        )
    }

    fn parse(line: &str) -> Result<Share, String> {
        let bad = || format!("a worker answered {line:?}, not its share");
        let fields: Vec<&str> = line.split_whitespace().collect();
        let ["share", decisions, admitted, failed, late, degraded, p99_us] = fields[..] else {
            return Err(bad());
        };
        let count = |text: &str| text.parse::<u64>().map_err(|_| bad());
        Ok(Share {
            decisions: count(decisions)?,
            admitted: count(admitted)?,
            failed: count(failed)?,
            late: count(late)?,
            degraded: count(degraded)?,
            // "NaN" (no decision) parses too.
            p99_us: p99_us.parse().map_err(|_| bad())?,
        })
    }
}

/// Worker mode: runs the job the arguments after `FLAG` describe, answering on stdout; exits.
pub(crate) fn main(args: impl Iterator<Item = String>) -> ! {
    let job = match Job::parse(args) {
        Ok(job) => job,
        Err(error) => {
            eprintln!("load {FLAG}: {error}");
            std::process::exit(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(job.workers)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let caller = runtime.block_on(async {
        let caller = Caller::new(job.contender, job.algorithm, Scenario::Hot, &job.url).await;
        run::drive(&caller, job.tasks, 1, job.warmup, false, job.seed ^ 0xfeed).await;
        caller
    });
    println!("ready");
    let mut line = String::new();
    if std::io::stdin().read_line(&mut line).is_err() || line.trim() != "go" {
        eprintln!("load {FLAG}: expected \"go\" on stdin, got {line:?}");
        std::process::exit(1);
    }
    let share = runtime.block_on(super::share(&caller, job.tasks, job.duration, job.seed));
    println!("{}", share.line());
    drop(caller);
    runtime.shutdown_timeout(Duration::from_secs(1));
    std::process::exit(0);
}

/// The parent's side: the worker processes of one run.
pub(crate) struct Workers {
    children: Vec<Worker>,
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Worker {
    /// The worker's next line, within `patience`.
    async fn line(&mut self, patience: Duration) -> Result<String, String> {
        match tokio::time::timeout(patience, self.stdout.next_line()).await {
            Err(_) => Err(format!("a worker did not answer within {patience:?}")),
            Ok(Err(error)) => Err(format!("cannot read a worker's answer: {error}")),
            Ok(Ok(None)) => {
                let status = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
                Err(format!(
                    "a worker ended without answering ({})",
                    match status {
                        Ok(Ok(status)) => status.to_string(),
                        _ => "its exit status unknown".to_owned(),
                    }
                ))
            }
            Ok(Ok(Some(line))) => Ok(line),
        }
    }
}

impl Workers {
    /// Starts `count` workers on `job`, each with a seed of its own; in `layout`, on the client CPUs. They are
    /// killed if dropped before they end.
    pub(crate) fn spawn(layout: &Layout, job: &Job, count: usize) -> Result<Workers, String> {
        let binary =
            std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
        let mut children = Vec::with_capacity(count);
        for index in 0..count {
            let job = Job {
                seed: job.seed.wrapping_mul(31).wrapping_add(index as u64 + 1),
                ..job.clone()
            };
            let mut child = layout
                .client_command(&binary)
                .arg(FLAG)
                .args(job.args())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("cannot start a worker: {e}"))?;
            let stdin = child.stdin.take().expect("piped");
            let stdout = BufReader::new(child.stdout.take().expect("piped")).lines();
            children.push(Worker {
                child,
                stdin,
                stdout,
            });
        }
        Ok(Workers { children })
    }

    /// Waits until every worker has warmed up.
    pub(crate) async fn ready(&mut self, patience: Duration) -> Result<(), String> {
        for worker in &mut self.children {
            let line = worker.line(patience).await?;
            if line != "ready" {
                return Err(format!("a worker said {line:?} instead of \"ready\""));
            }
        }
        Ok(())
    }

    /// Starts every worker's run.
    pub(crate) async fn go(&mut self) -> Result<(), String> {
        for worker in &mut self.children {
            worker
                .stdin
                .write_all(b"go\n")
                .await
                .map_err(|e| format!("cannot start a worker's run: {e}"))?;
        }
        Ok(())
    }

    /// Every worker's share, once its run is over; then waits for it to exit.
    pub(crate) async fn shares(mut self, patience: Duration) -> Result<Vec<Share>, String> {
        let mut shares = Vec::with_capacity(self.children.len());
        for worker in &mut self.children {
            shares.push(Share::parse(&worker.line(patience).await?)?);
        }
        for worker in &mut self.children {
            let _ = tokio::time::timeout(Duration::from_secs(5), worker.child.wait()).await;
        }
        Ok(shares)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_reads_back_as_written() {
        let job = Job {
            url: "redis://127.0.0.1:1/".to_owned(),
            contender: Contender::PlainLease,
            algorithm: Algorithm::FixedWindow,
            tasks: 64,
            warmup: Duration::from_millis(300),
            duration: Duration::from_millis(1500),
            seed: 42,
            workers: 1,
        };
        let back = Job::parse(job.args().into_iter()).unwrap();
        assert_eq!(back.contender, job.contender);
        assert_eq!(back.algorithm, job.algorithm);
        assert_eq!(
            (
                back.url,
                back.tasks,
                back.warmup,
                back.duration,
                back.seed,
                back.workers
            ),
            (job.url, 64, job.warmup, job.duration, 42, 1)
        );
    }

    #[test]
    fn a_share_reads_back_as_written_and_anything_else_is_an_error() {
        let share = Share {
            decisions: 10,
            admitted: 9,
            failed: 1,
            late: 2,
            degraded: 0,
            p99_us: 123.5,
        };
        assert_eq!(Share::parse(&share.line()), Ok(share));
        assert!(Share::parse("ready").is_err());
        assert!(Share::parse("share 1 2 3").is_err());
        assert!(Job::parse(["--tasks".to_owned()].into_iter()).is_err());
    }
}
