//! The load binary's command line.

use std::path::PathBuf;
use std::time::Duration;

use limiter_runtime::Algorithm;

pub(crate) const USAGE: &str = "\
usage: load [options]

Measures limiter on Redis against a hand-written redis::Script baseline, and prints a markdown report.

  --duration <s>        measured time per run (default 2)
  --warmup <s>          unmeasured time before each run (default 0.3)
  --rounds <n>          runs per contender and cell, contenders alternating (default 3)
  --concurrency <list>  tasks, comma-separated (default 1,16,64,256)
  --algorithms <list>   comma-separated (default sliding_log,fixed_window,sliding_window,token_bucket,leaky_bucket)
  --keys <n>            random keys of the spread scenario (default 10000)
  --abuse-duration <s>  time per run of the abusive-key scenario (default 3)
  --pinned              Redis on one CPU of its own (the first this process may use), every client (this
                        binary's threads, redis-benchmark) on the others, with `taskset`: the ceiling ratio
                        then compares clients against Redis's ceiling, not against each other's CPU cost.
                        The default when there are at least 2 CPUs and `taskset` is installed; without them,
                        the default falls back to unpinned (the report says so), and --pinned is an error
  --no-pinned           Redis and the clients share every CPU
  --workers <n>         Tokio worker threads (default: the CPUs this binary runs on: all of them unpinned,
                        all but Redis's pinned; 1 when pinned on 2 cores)
  --no-ceiling          skip redis-benchmark
  --no-abuse            skip the abusive-key scenario
  --ablation            add two variants of the baseline, each with one thing the library does per call
                        (a tokio timeout; a connection clone), to see what the library's overhead is made of
  --out <file>          also write the report to this file
  --plot <file.png>     draw decisions/s and p99 against tasks for the annotated fn, the plain API and the baseline
  --smoke               a quick check that everything runs (CI): tiny durations, 1 round,
                        concurrency 1,64; fails if any run made no decision or met an error
  --help";

/// What to measure, and how long.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) duration: Duration,
    pub(crate) warmup: Duration,
    pub(crate) rounds: usize,
    pub(crate) concurrency: Vec<usize>,
    pub(crate) algorithms: Vec<Algorithm>,
    pub(crate) keys: u32,
    pub(crate) abuse_duration: Duration,
    /// `None`: one per CPU the load binary runs on (see `pinning::Layout::client_cpus`).
    pub(crate) workers: Option<usize>,
    /// `Some(true)`: `--pinned`; `Some(false)`: `--no-pinned`; `None`: pinned if the machine allows it.
    pub(crate) pinned: Option<bool>,
    pub(crate) ceiling: bool,
    pub(crate) abuse: bool,
    pub(crate) ablation: bool,
    pub(crate) out: Option<PathBuf>,
    /// Where to draw the plot (PNG).
    pub(crate) plot: Option<PathBuf>,
    pub(crate) smoke: bool,
}

/// The name of `algorithm`, as the attribute spells it.
pub(crate) fn name(algorithm: Algorithm) -> &'static str {
    algorithm.name()
}

impl Default for Options {
    fn default() -> Self {
        Options {
            duration: Duration::from_secs(2),
            warmup: Duration::from_millis(300),
            rounds: 3,
            concurrency: vec![1, 16, 64, 256],
            algorithms: Algorithm::ALL.to_vec(),
            keys: 10_000,
            abuse_duration: Duration::from_secs(3),
            workers: None,
            pinned: None,
            ceiling: true,
            abuse: true,
            ablation: false,
            out: None,
            plot: None,
            smoke: false,
        }
    }
}

impl Options {
    pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut options = Options::default();
        let mut explicit_concurrency = false;
        let mut explicit_durations = false;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = |what: &str| args.next().ok_or_else(|| format!("{arg} needs {what}"));
            match arg.as_str() {
                "--duration" => {
                    options.duration = seconds(&value("a number of seconds")?)?;
                    explicit_durations = true;
                }
                "--warmup" => options.warmup = seconds(&value("a number of seconds")?)?,
                "--rounds" => options.rounds = number(&value("a number")?)?.max(1),
                "--concurrency" => {
                    options.concurrency = value("a list")?
                        .split(',')
                        .map(|n| number(n.trim()).map(|n| n.max(1)))
                        .collect::<Result<_, _>>()?;
                    explicit_concurrency = true;
                }
                "--algorithms" => {
                    options.algorithms = value("a list")?
                        .split(',')
                        .map(|n| algorithm(n.trim()))
                        .collect::<Result<_, _>>()?;
                }
                "--keys" => {
                    options.keys = u32::try_from(number(&value("a number")?)?.max(1))
                        .map_err(|e| e.to_string())?
                }
                "--abuse-duration" => {
                    options.abuse_duration = seconds(&value("a number of seconds")?)?
                }
                "--workers" => options.workers = Some(number(&value("a number")?)?.max(1)),
                "--pinned" => options.pinned = Some(true),
                "--no-pinned" => options.pinned = Some(false),
                "--no-ceiling" => options.ceiling = false,
                "--no-abuse" => options.abuse = false,
                "--ablation" => options.ablation = true,
                "--out" => options.out = Some(PathBuf::from(value("a file")?)),
                "--plot" => options.plot = Some(PathBuf::from(value("a file")?)),
                "--smoke" => options.smoke = true,
                // `cargo bench` passes --bench to every benchmark binary.
                "--bench" => {}
                "--help" | "-h" => return Err(USAGE.to_owned()),
                other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
            }
        }
        if options.smoke {
            if !explicit_durations {
                options.duration = Duration::from_millis(150);
                options.abuse_duration = Duration::from_millis(300);
            }
            options.warmup = options.warmup.min(Duration::from_millis(50));
            options.rounds = 1;
            if !explicit_concurrency {
                options.concurrency = vec![1, 64];
            }
        }
        Ok(options)
    }
}

fn seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("{text:?} is not a positive number of seconds"))
}

fn number(text: &str) -> Result<usize, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a whole number"))
}

fn algorithm(text: &str) -> Result<Algorithm, String> {
    text.parse()
        .map_err(|error: limiter_runtime::ParseError| error.to_string())
}
