//! The tasks that drive a contender: N Tokio tasks, each deciding for random keys (or one key) as fast as it
//! can until a common deadline, timing every call.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::contender::{Caller, Outcome};

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
        let outcome = caller.call(id, rng.next()).await;
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

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
