//! The contenders and the tasks that drive them: N Tokio tasks, each deciding for random keys (or one key) as
//! fast as it can until a common deadline, timing every call.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use limiter_runtime::{Algorithm, Limiter, RateLimited, Rule};
use redis::aio::ConnectionManager;
use redis::Script;

/// The load a run puts on one limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    /// Random keys among many, a limit high enough that most calls are admitted.
    Spread,
    /// Every task on one key, with a low limit: almost every call is denied.
    Abuse,
}

/// The spread scenario's limit: 1 000 per 10 s per key (the annotated functions below repeat it).
const SPREAD_MAX: u64 = 1_000;
const SPREAD_WINDOW: Duration = Duration::from_secs(10);
/// The abusive key's limit: 5 per 500 ms (the annotated functions below repeat it).
pub(crate) const ABUSE_MAX: u64 = 5;
pub(crate) const ABUSE_WINDOW: Duration = Duration::from_millis(500);

impl Scenario {
    pub(crate) fn max(self) -> u64 {
        match self {
            Scenario::Spread => SPREAD_MAX,
            Scenario::Abuse => ABUSE_MAX,
        }
    }

    pub(crate) fn window(self) -> Duration {
        match self {
            Scenario::Spread => SPREAD_WINDOW,
            Scenario::Abuse => ABUSE_WINDOW,
        }
    }

    /// The baseline script's arguments: window µs, max, cost, burst (= max), max wait µs.
    pub(crate) fn script_args(self) -> [u64; 5] {
        let window = u64::try_from(self.window().as_micros()).expect("a window in µs fits");
        [window, self.max(), 1, self.max(), 0]
    }

    /// The library's script's arguments for one call of one limit (see its header), for `redis-benchmark`:
    /// the nonce that names a sliding log's members is a random number of the benchmark's.
    pub(crate) fn library_args(self, algorithm: Algorithm) -> Vec<String> {
        let [window, max, cost, burst, max_wait] = self.script_args();
        // The script numbers the algorithms in `Algorithm::ALL`'s order, from 1.
        let code = Algorithm::ALL
            .iter()
            .position(|a| *a == algorithm)
            .unwrap_or(0)
            + 1;
        let (depth, nonce) = match algorithm {
            Algorithm::TokenBucket => (burst, ""),
            Algorithm::LeakyBucket => (max_wait, ""),
            Algorithm::SlidingLog => (0, "__rand_int__"),
            _ => (0, ""),
        };
        let mut args = vec!["decide".to_owned()];
        args.extend([code as u64, window, max, depth].map(|n| n.to_string()));
        args.extend([nonce.to_owned(), cost.to_string()]);
        args
    }

    fn prefix(self, who: &str) -> String {
        match self {
            Scenario::Spread => format!("bench:{who}:"),
            Scenario::Abuse => format!("bench:abuse:{who}:"),
        }
    }
}

/// Who decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Contender {
    /// A `#[rate_limit]` function.
    Annotated,
    /// `Limiter::check`.
    Plain,
    /// `Limiter::check` with the deny cache switched off (abusive-key scenario only).
    PlainNoCache,
    /// What a user writes without the library: `redis::Script` (the library's own Lua file) on a
    /// `ConnectionManager`.
    Baseline,
    /// `redis-benchmark` calling the library's script (not a task-based contender: see `ceiling`).
    Ceiling,
    /// Ablation (`--ablation`): the baseline, each call bounded by `tokio::time::timeout`, as the library's are.
    BaselineTimeout,
    /// Ablation (`--ablation`): the baseline, cloning its `ConnectionManager` for every call, as the library does.
    BaselineClone,
}

impl Contender {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Contender::Annotated => "annotated fn",
            Contender::Plain => "plain API",
            Contender::PlainNoCache => "plain API, deny cache off",
            Contender::Baseline => "baseline (redis::Script)",
            Contender::Ceiling => "redis-benchmark -P 16 (library script)",
            Contender::BaselineTimeout => "baseline + timeout per call",
            Contender::BaselineClone => "baseline + connection clone per call",
        }
    }
}

/// The library's script.
pub(crate) const LIBRARY_SCRIPT: &str =
    include_str!("../../../../limiter-runtime/scripts/limiter.lua");

/// The baseline's script of each algorithm: one hand-written script per algorithm, as a user would write it
/// (the library's own, before its algorithms became one script).
pub(crate) fn script_source(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::SlidingLog => {
            include_str!("baseline/sliding_log.lua")
        }
        Algorithm::FixedWindow => {
            include_str!("baseline/fixed_window.lua")
        }
        Algorithm::SlidingWindow => {
            include_str!("baseline/sliding_window.lua")
        }
        Algorithm::TokenBucket => {
            include_str!("baseline/token_bucket.lua")
        }
        Algorithm::LeakyBucket => {
            include_str!("baseline/leaky_bucket.lua")
        }
        other => panic!("no script for {other:?}"),
    }
}

/// One `#[rate_limit]` function per algorithm and scenario, with the scenario's limit written on it.
macro_rules! annotated {
    ($($algorithm:ident => $variant:ident),* $(,)?) => {
        $(mod $algorithm {
            use limiter_runtime::{rate_limit, RateLimited};

            #[rate_limit(prefix = "bench:attr:", key = id, max = 1000, window = 10, algorithm = $algorithm)]
            pub(super) async fn spread(id: u32) -> Result<(), RateLimited> {
                Ok(())
            }

            #[rate_limit(prefix = "bench:abuse:attr:", key = id, max = 5, window = "500ms", algorithm = $algorithm)]
            pub(super) async fn abuse(id: u32) -> Result<(), RateLimited> {
                Ok(())
            }
        })*

        async fn annotated(algorithm: Algorithm, scenario: Scenario, id: u32) -> Result<(), RateLimited> {
            match (algorithm, scenario) {
                $(
                    (Algorithm::$variant, Scenario::Spread) => $algorithm::spread(id).await,
                    (Algorithm::$variant, Scenario::Abuse) => $algorithm::abuse(id).await,
                )*
                (other, _) => panic!("no annotated function for {other:?}"),
            }
        }
    };
}

annotated! {
    sliding_log => SlidingLog,
    fixed_window => FixedWindow,
    sliding_window => SlidingWindow,
    token_bucket => TokenBucket,
    leaky_bucket => LeakyBucket,
}

/// What one task needs to make calls: cloned into every task.
#[derive(Clone)]
pub(crate) enum Caller {
    Baseline {
        script: Arc<Script>,
        connection: ConnectionManager,
        prefix: Arc<str>,
        args: [u64; 5],
        /// Ablations: bound each call by a timeout; clone the connection for each call.
        timeout: bool,
        clone: bool,
    },
    Plain {
        limiter: Limiter,
        rule: Arc<Rule>,
    },
    Annotated {
        limiter: Limiter,
        algorithm: Algorithm,
        scenario: Scenario,
    },
}

/// What became of one call.
enum Outcome {
    Allowed,
    Denied,
    Failed,
}

impl Caller {
    /// A fresh contender: its own connection, or its own limiter (so its own connection and deny cache).
    pub(crate) async fn new(
        contender: Contender,
        algorithm: Algorithm,
        scenario: Scenario,
        url: &str,
    ) -> Caller {
        let limiter = |deny_cache: bool| {
            let mut builder = Limiter::builder()
                .redis(url)
                // Patient, so that every decision is Redis's: a decision past the deadline would fail open
                // without Redis and flatter the throughput. Each run reports its degraded decisions (none
                // expected).
                .deadline(Duration::from_secs(1))
                .deny_cache(deny_cache);
            if scenario == Scenario::Abuse {
                // So that INFO counts only the abusive key's calls (the heartbeat is an EVALSHA too).
                builder = builder.heartbeat_every(Duration::from_secs(3600));
            }
            builder.build().expect("a valid Redis URL")
        };
        match contender {
            Contender::Baseline | Contender::BaselineTimeout | Contender::BaselineClone => {
                let client = redis::Client::open(url).expect("a valid Redis URL");
                let connection = ConnectionManager::new(client)
                    .await
                    .expect("the benchmark's redis-server accepts a connection");
                Caller::Baseline {
                    script: Arc::new(Script::new(script_source(algorithm))),
                    connection,
                    prefix: scenario.prefix("base").into(),
                    args: scenario.script_args(),
                    timeout: contender == Contender::BaselineTimeout,
                    clone: contender == Contender::BaselineClone,
                }
            }
            Contender::Plain | Contender::PlainNoCache => Caller::Plain {
                limiter: limiter(contender == Contender::Plain),
                rule: Arc::new(
                    Rule::new()
                        .prefix(scenario.prefix(if contender == Contender::Plain {
                            "plain"
                        } else {
                            "nocache"
                        }))
                        .max(scenario.max())
                        .window(scenario.window())
                        .algorithm(algorithm),
                ),
            },
            Contender::Annotated => Caller::Annotated {
                limiter: limiter(true),
                algorithm,
                scenario,
            },
            Contender::Ceiling => unreachable!("redis-benchmark is not driven by tasks"),
        }
    }

    /// The limiter of a library contender: its stats count degraded decisions.
    pub(crate) fn limiter(&self) -> Option<&Limiter> {
        match self {
            Caller::Baseline { .. } => None,
            Caller::Plain { limiter, .. } | Caller::Annotated { limiter, .. } => Some(limiter),
        }
    }

    /// One call on key `id`, to connect and load the script before a run (its outcome does not matter).
    pub(crate) async fn warm(&self, id: u32) {
        let mut caller = self.clone();
        if let Caller::Annotated { limiter, .. } = self {
            limiter.scope(caller.call(id)).await;
        } else {
            caller.call(id).await;
        }
    }

    async fn call(&mut self, id: u32) -> Outcome {
        match self {
            Caller::Baseline {
                script,
                connection,
                prefix,
                args,
                timeout,
                clone,
            } => {
                // What a user writes: format the key, call the script.
                let [window, max, cost, burst, max_wait] = *args;
                let mut cloned;
                let connection = if *clone {
                    cloned = connection.clone();
                    &mut cloned
                } else {
                    connection
                };
                let mut invocation = script.key(format!("{prefix}{id}"));
                invocation
                    .arg(window)
                    .arg(max)
                    .arg(cost)
                    .arg(burst)
                    .arg(max_wait);
                let call = invocation.invoke_async::<Vec<i64>>(connection);
                let reply = if *timeout {
                    match tokio::time::timeout(Duration::from_secs(1), call).await {
                        Ok(reply) => reply,
                        Err(_) => return Outcome::Failed,
                    }
                } else {
                    call.await
                };
                match reply.as_deref() {
                    Ok([1, ..]) => Outcome::Allowed,
                    Ok([0, ..]) => Outcome::Denied,
                    _ => Outcome::Failed,
                }
            }
            Caller::Plain { limiter, rule } => {
                if limiter.check(rule, id).await.allowed {
                    Outcome::Allowed
                } else {
                    Outcome::Denied
                }
            }
            Caller::Annotated {
                algorithm,
                scenario,
                ..
            } => match annotated(*algorithm, *scenario, id).await {
                Ok(()) => Outcome::Allowed,
                Err(_) => Outcome::Denied,
            },
        }
    }
}

/// What the tasks of one run did.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    /// Calls that completed before the deadline.
    pub(crate) decisions: u64,
    pub(crate) admitted: u64,
    /// Calls that failed (an error from Redis: none expected).
    pub(crate) failed: u64,
    /// Calls in flight at the deadline, completed after it: not counted as decisions, but Redis ran them.
    pub(crate) late: u64,
    /// The latency of every counted decision, ns (empty when not recorded); sorted by `percentile_us`'s caller.
    pub(crate) latencies: Vec<u32>,
}

impl Tally {
    /// The `p`-quantile of latency (nearest rank), µs.
    pub(crate) fn percentile_us(&self, p: f64) -> f64 {
        if self.latencies.is_empty() {
            return f64::NAN;
        }
        let rank =
            ((p * self.latencies.len() as f64).ceil() as usize).clamp(1, self.latencies.len());
        f64::from(self.latencies[rank - 1]) / 1_000.0
    }
}

/// Runs `concurrency` tasks for `duration`, each calling for keys among `keys` (one key: `keys == 1`).
pub(crate) async fn drive(
    caller: &Caller,
    concurrency: usize,
    keys: u32,
    duration: Duration,
    record_latencies: bool,
    seed: u64,
) -> Tally {
    let deadline = Instant::now() + duration;
    let handles: Vec<_> = (0..concurrency)
        .map(|index| {
            let seed = seed.wrapping_mul(1_000_003).wrapping_add(index as u64);
            let work = task(caller.clone(), keys, deadline, record_latencies, seed);
            match caller {
                Caller::Annotated { limiter, .. } => {
                    let limiter = limiter.clone();
                    tokio::spawn(async move { limiter.scope(work).await })
                }
                _ => tokio::spawn(work),
            }
        })
        .collect();
    let mut total = Tally::default();
    for handle in handles {
        let tally = handle.await.expect("a benchmark task panicked");
        total.decisions += tally.decisions;
        total.admitted += tally.admitted;
        total.failed += tally.failed;
        total.late += tally.late;
        total.latencies.extend_from_slice(&tally.latencies);
    }
    total
}

async fn task(mut caller: Caller, keys: u32, deadline: Instant, record: bool, seed: u64) -> Tally {
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    loop {
        // A call answered without Redis (the deny cache) never yields: let the runtime poll its I/O now and
        // then, as a server's own request handling would.
        tokio::task::coop::consume_budget().await;
        let id = if keys <= 1 {
            0
        } else {
            rng.below(u64::from(keys)) as u32
        };
        let start = Instant::now();
        if start >= deadline {
            return tally;
        }
        let outcome = caller.call(id).await;
        let end = Instant::now();
        if end > deadline {
            tally.late += 1;
            return tally;
        }
        tally.decisions += 1;
        match outcome {
            Outcome::Allowed => tally.admitted += 1,
            Outcome::Denied => {}
            Outcome::Failed => tally.failed += 1,
        }
        if record {
            let ns = u32::try_from((end - start).as_nanos()).unwrap_or(u32::MAX);
            tally.latencies.push(ns);
        }
    }
}

/// CPU time this process has used (user + system, every thread), µs, from `/proc/self/stat`.
pub(crate) fn client_cpu_us() -> f64 {
    static TICKS_PER_SECOND: OnceLock<f64> = OnceLock::new();
    let ticks = *TICKS_PER_SECOND.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    });
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // After the command name (in parentheses): state is field 3, utime field 14, stime field 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let field = |n: usize| fields.get(n - 3).and_then(|v| v.parse::<f64>().ok());
    match (field(14), field(15)) {
        (Some(user), Some(system)) => (user + system) / ticks * 1e6,
        _ => f64::NAN,
    }
}

/// SplitMix64: a small, fast generator, one per task, seeded so that runs replay.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}
