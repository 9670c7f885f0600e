//! The load binary's command line.

use std::path::PathBuf;
use std::time::Duration;

use limiter_runtime::Algorithm;

use crate::pinning::Requested;

pub(crate) const USAGE: &str = "\
usage: load [options]

Measures limiter on Redis against a hand-written redis::Script baseline (a minimal script per algorithm), and
prints a markdown report. Three scenarios: spread (10 000 random keys, almost every call admitted, with
redis-benchmark's ceiling), abuse (one key, almost every call denied), hot (one key, every call admitted, from
1 and more processes).

  --duration <s>        measured time per spread run (default 1.5)
  --warmup <s>          unmeasured time before each run (default 0.3)
  --rounds <n>          runs per contender and cell, contenders alternating (default 3)
  --concurrency <list>  tasks of the spread scenario, comma-separated (default 1,16,64,256)
  --algorithms <list>   comma-separated (default sliding_log,fixed_window,sliding_window,token_bucket,leaky_bucket)
  --keys <n>            random keys of the spread scenario (default 10000)
  --abuse-duration <s>  time per run of the abusive-key scenario (default 2)
  --hot-duration <s>    time per run of the hot-key scenario (default 1.5)
  --hot-rounds <n>      runs per contender and cell of the hot key (default 3)
  --hot-concurrency <list>  tasks per process on the hot key (default 1,16,64,256)
  --hot-processes <list>    processes on the hot key, all started together (default 1,4)
  --only <list>         run only these scenarios: spread, abuse, hot (comma-separated)
  --no-abuse            skip the abusive-key scenario
  --no-hot              skip the hot-key scenario
  --layouts <which>     pinned, unpinned, both or default. Pinned: Redis on one CPU of its own (the first this
                        process may use), every client (this binary's threads and worker processes,
                        redis-benchmark) on the others, with `taskset`: the ceiling ratio then compares clients
                        against Redis's ceiling, not against each other's CPU cost. Unpinned: Redis and the
                        clients share every CPU, as on an app server that runs its own Redis. Both: the spread
                        scenario pinned, then unpinned, in one report (the abusive and hot keys run in the first).
                        Default: pinned when there are at least 2 CPUs and `taskset` is installed, else unpinned
                        (the report says so); an explicit `pinned` that cannot be honoured is an error
  --pinned              --layouts pinned
  --no-pinned           --layouts unpinned
  --workers <n>         Tokio worker threads (default: the CPUs the clients run on: all of them unpinned,
                        all but Redis's pinned; 1 when pinned on 2 cores)
  --no-ceiling          skip redis-benchmark
  --per-key             add the plain API with batch_across_keys(false) to the spread load
  --ablation            add two variants of the baseline, each with one thing the library does per call
                        (a tokio timeout; a connection clone), to see what the library's overhead is made of
  --out <file>          also write the report to this file
  --plot <file.png>     draw decisions/s and p99 against tasks for the annotated fn, the plain API and the baseline
  --instructions        count instructions with callgrind instead (valgrind must be installed): Redis's per
                        call and the client's per decision, of the baseline, the plain API and the annotated fn,
                        and what a coalesced waiter costs; nothing else runs
  --calls <n>           calls per count of --instructions (default 2000)
  --in-flight           measure limits in flight instead: Redis commands per permit, and decisions/s of
                        acquire + release beside a sliding log's check at 64 tasks, on --keys keys and one
                        key (--duration, --rounds, --workers apply); nothing else runs
  --smoke               a quick check that everything runs (CI): tiny durations, 1 round, concurrency 1,64 (64 on
                        the hot key); fails if any run made no decision, met an error or decided without Redis
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
    pub(crate) hot_duration: Duration,
    pub(crate) hot_rounds: usize,
    pub(crate) hot_concurrency: Vec<usize>,
    pub(crate) hot_processes: Vec<usize>,
    /// `None`: one per CPU the clients run on (see `pinning::Layout::client_cpus`).
    pub(crate) workers: Option<usize>,
    pub(crate) layouts: Requested,
    pub(crate) spread: bool,
    pub(crate) ceiling: bool,
    pub(crate) abuse: bool,
    pub(crate) hot: bool,
    pub(crate) ablation: bool,
    /// Add the plain API sending each key's calls in script calls of their own (`--per-key`) to the spread
    /// load.
    pub(crate) per_key: bool,
    pub(crate) out: Option<PathBuf>,
    /// Where to draw the plot (PNG).
    pub(crate) plot: Option<PathBuf>,
    pub(crate) smoke: bool,
    /// Count instructions instead (`--instructions`), this many calls per count.
    pub(crate) instructions: bool,
    pub(crate) calls: u64,
    /// Measure limits in flight instead (`--in-flight`).
    pub(crate) in_flight: bool,
}

/// The name of `algorithm`, as the attribute spells it.
pub(crate) fn name(algorithm: Algorithm) -> &'static str {
    algorithm.name()
}

impl Default for Options {
    fn default() -> Self {
        Options {
            duration: Duration::from_millis(1500),
            warmup: Duration::from_millis(300),
            rounds: 3,
            concurrency: vec![1, 16, 64, 256],
            algorithms: Algorithm::ALL.to_vec(),
            keys: 10_000,
            abuse_duration: Duration::from_secs(2),
            hot_duration: Duration::from_millis(1500),
            hot_rounds: 3,
            hot_concurrency: vec![1, 16, 64, 256],
            hot_processes: vec![1, 4],
            workers: None,
            layouts: Requested::Default,
            spread: true,
            ceiling: true,
            abuse: true,
            hot: true,
            ablation: false,
            per_key: false,
            out: None,
            plot: None,
            smoke: false,
            instructions: false,
            calls: 2_000,
            in_flight: false,
        }
    }
}

impl Options {
    pub(crate) fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut options = Options::default();
        let mut explicit_concurrency = false;
        let mut explicit_hot_concurrency = false;
        // What --smoke leaves as given.
        let (mut explicit_duration, mut explicit_abuse, mut explicit_hot) = (false, false, false);
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = |what: &str| args.next().ok_or_else(|| format!("{arg} needs {what}"));
            match arg.as_str() {
                "--duration" => {
                    options.duration = seconds(&value("a number of seconds")?)?;
                    explicit_duration = true;
                }
                "--warmup" => options.warmup = seconds(&value("a number of seconds")?)?,
                "--rounds" => options.rounds = number(&value("a number")?)?.max(1),
                "--concurrency" => {
                    options.concurrency = numbers(&value("a list")?)?;
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
                    options.abuse_duration = seconds(&value("a number of seconds")?)?;
                    explicit_abuse = true;
                }
                "--hot-duration" => {
                    options.hot_duration = seconds(&value("a number of seconds")?)?;
                    explicit_hot = true;
                }
                "--hot-rounds" => options.hot_rounds = number(&value("a number")?)?.max(1),
                "--hot-concurrency" => {
                    options.hot_concurrency = numbers(&value("a list")?)?;
                    explicit_hot_concurrency = true;
                }
                "--hot-processes" => options.hot_processes = numbers(&value("a list")?)?,
                "--only" => {
                    let only = value("a list")?;
                    let scenarios: Vec<&str> = only.split(',').map(str::trim).collect();
                    if let Some(unknown) = scenarios
                        .iter()
                        .find(|s| !["spread", "abuse", "hot"].contains(s))
                    {
                        return Err(format!(
                            "{unknown:?} is not a scenario: expected spread, abuse or hot"
                        ));
                    }
                    options.spread = scenarios.contains(&"spread");
                    options.abuse = scenarios.contains(&"abuse");
                    options.hot = scenarios.contains(&"hot");
                }
                "--workers" => options.workers = Some(number(&value("a number")?)?.max(1)),
                "--layouts" => options.layouts = Requested::parse(&value("a layout")?)?,
                "--pinned" => options.layouts = Requested::Pinned,
                "--no-pinned" => options.layouts = Requested::Unpinned,
                "--no-ceiling" => options.ceiling = false,
                "--no-abuse" => options.abuse = false,
                "--no-hot" => options.hot = false,
                "--ablation" => options.ablation = true,
                "--per-key" => options.per_key = true,
                "--out" => options.out = Some(PathBuf::from(value("a file")?)),
                "--plot" => options.plot = Some(PathBuf::from(value("a file")?)),
                "--smoke" => options.smoke = true,
                "--instructions" => options.instructions = true,
                "--in-flight" => options.in_flight = true,
                "--calls" => options.calls = number(&value("a number")?)?.max(64) as u64,
                // `cargo bench` passes --bench to every benchmark binary.
                "--bench" => {}
                "--help" | "-h" => return Err(USAGE.to_owned()),
                other => return Err(format!("unknown argument {other:?}\n\n{USAGE}")),
            }
        }
        if options.smoke {
            if !explicit_duration {
                options.duration = Duration::from_millis(150);
            }
            if !explicit_abuse {
                options.abuse_duration = Duration::from_millis(300);
            }
            if !explicit_hot {
                options.hot_duration = Duration::from_millis(150);
            }
            options.warmup = options.warmup.min(Duration::from_millis(50));
            options.rounds = 1;
            options.hot_rounds = 1;
            if !explicit_concurrency {
                options.concurrency = vec![1, 64];
            }
            if !explicit_hot_concurrency {
                options.hot_concurrency = vec![64];
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

/// A comma-separated list of whole numbers, each at least 1.
fn numbers(text: &str) -> Result<Vec<usize>, String> {
    text.split(',')
        .map(|n| number(n.trim()).map(|n| n.max(1)))
        .collect()
}

fn number(text: &str) -> Result<usize, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a whole number"))
}

fn algorithm(text: &str) -> Result<Algorithm, String> {
    text.parse()
        .map_err(|error: limiter_runtime::ParseError| error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        Options::parse(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn only_runs_the_scenarios_named_and_rejects_others() {
        let o = parse(&["--only", "hot"]).unwrap();
        assert_eq!((o.spread, o.abuse, o.hot), (false, false, true));
        let o = parse(&["--only", "spread,abuse"]).unwrap();
        assert_eq!((o.spread, o.abuse, o.hot), (true, true, false));
        assert!(parse(&["--only", "hot,cold"])
            .unwrap_err()
            .contains("\"cold\" is not a scenario"));
        let o = parse(&["--no-hot"]).unwrap();
        assert_eq!((o.spread, o.abuse, o.hot), (true, true, false));
    }

    #[test]
    fn the_last_layout_asked_for_wins() {
        assert_eq!(parse(&[]).unwrap().layouts, Requested::Default);
        let o = parse(&["--layouts", "both", "--no-pinned"]).unwrap();
        assert_eq!(o.layouts, Requested::Unpinned);
        let o = parse(&["--pinned", "--layouts", "both"]).unwrap();
        assert_eq!(o.layouts, Requested::Both);
        assert!(parse(&["--layouts", "sideways"]).is_err());
    }

    #[test]
    fn smoke_shortens_what_was_not_given() {
        let o = parse(&["--smoke", "--hot-duration", "2"]).unwrap();
        assert_eq!(o.duration, Duration::from_millis(150));
        assert_eq!(o.hot_duration, Duration::from_secs(2));
        assert_eq!((o.hot_concurrency, o.hot_processes), (vec![64], vec![1, 4]));
        let o = parse(&["--smoke", "--hot-concurrency", "1,16"]).unwrap();
        assert_eq!(o.hot_concurrency, vec![1, 16]);
    }
}
