//! What was measured, and the markdown report of it.

use std::fmt::Write as _;
use std::time::Duration;

use limiter_runtime::Algorithm;

use crate::cli::{name, Options};
use crate::pinning::Layout;
use crate::run::{Contender, Scenario, Tally, ABUSE_MAX, ABUSE_WINDOW};
use crate::server::{self, Counters};

/// The targets the report judges (ratios measured in the same run).
const MIN_THROUGHPUT_RATIO: f64 = 0.95;
const MAX_P99_RATIO: f64 = 1.10;
const MIN_CEILING_RATIO: f64 = 0.90;
const MIN_ABUSE_RATIO: f64 = 20.0;
/// "A few" denied calls reaching Redis per retry period, per node: a number of our own.
const MAX_DENIED_CALLS_PER_PERIOD: f64 = 5.0;

/// The machine, as far as the benchmark can see it.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    cores: usize,
    cpu: String,
    redis: String,
    workers: usize,
    build: &'static str,
    /// Where Redis and the clients ran.
    layout: Layout,
}

impl Machine {
    /// One line: CPU, cores, Redis.
    pub(crate) fn summary(&self) -> String {
        format!("{}, {} cores, {}", self.cpu, self.cores, self.redis)
    }

    pub(crate) fn probe(
        connection: &mut redis::Connection,
        options: &Options,
        layout: &Layout,
    ) -> Machine {
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("model name"))
                    .map(|l| l.trim_start_matches([' ', '\t', ':']).trim().to_owned())
            })
            .unwrap_or_else(|| "unknown CPU".to_owned());
        Machine {
            // The CPUs the process could use before it pinned itself (`available_parallelism` now counts
            // only the client CPUs).
            cores: layout.cpus.len(),
            cpu,
            redis: server::version(connection),
            workers: options.workers.unwrap_or_else(|| layout.client_cpus()),
            build: if cfg!(debug_assertions) {
                "debug (numbers not meaningful)"
            } else {
                "release"
            },
            layout: layout.clone(),
        }
    }
}

/// One run of one contender in one cell (algorithm × concurrency).
#[derive(Debug, Clone)]
pub(crate) struct Measured {
    contender: Contender,
    algorithm: Algorithm,
    concurrency: usize,
    round: usize,
    pub(crate) rps: f64,
    p50_us: f64,
    pub(crate) p99_us: f64,
    p999_us: f64,
    admitted: f64,
    cpu_us_per_decision: f64,
    /// CPU time of this process (client: runtime, redis-rs, the library, its socket I/O) per decision, µs.
    client_cpu_us_per_decision: f64,
    script_us_per_call: f64,
    calls_per_decision: f64,
    decisions: u64,
    degraded: u64,
    failed: u64,
    eval_calls: u64,
    error: Option<String>,
}

impl Measured {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_run(
        contender: Contender,
        algorithm: Algorithm,
        concurrency: usize,
        round: usize,
        duration: Duration,
        tally: &Tally,
        redis: &Counters,
        client_cpu_us: f64,
        degraded: u64,
    ) -> Measured {
        // Redis also ran the calls in flight at the deadline.
        let executed = (tally.decisions + tally.late).max(1) as f64;
        Measured {
            contender,
            algorithm,
            concurrency,
            round,
            rps: tally.decisions as f64 / duration.as_secs_f64(),
            p50_us: tally.percentile_us(0.50),
            p99_us: tally.percentile_us(0.99),
            p999_us: tally.percentile_us(0.999),
            admitted: tally.admitted as f64 / tally.decisions.max(1) as f64,
            cpu_us_per_decision: redis.cpu_us / executed,
            client_cpu_us_per_decision: client_cpu_us / executed,
            script_us_per_call: redis.script_us as f64 / redis.script_calls.max(1) as f64,
            calls_per_decision: redis.script_calls as f64 / executed,
            decisions: tally.decisions,
            degraded,
            failed: tally.failed,
            eval_calls: redis.eval_calls,
            error: None,
        }
    }

    pub(crate) fn from_ceiling(
        algorithm: Algorithm,
        concurrency: usize,
        round: usize,
        rps: f64,
        requests: u64,
        redis: &Counters,
    ) -> Measured {
        let executed = requests.max(1) as f64;
        Measured {
            contender: Contender::Ceiling,
            algorithm,
            concurrency,
            round,
            rps,
            p50_us: f64::NAN,
            p99_us: f64::NAN,
            p999_us: f64::NAN,
            admitted: f64::NAN,
            cpu_us_per_decision: redis.cpu_us / executed,
            client_cpu_us_per_decision: f64::NAN,
            script_us_per_call: redis.script_us as f64 / redis.script_calls.max(1) as f64,
            calls_per_decision: redis.script_calls as f64 / executed,
            decisions: requests,
            degraded: 0,
            failed: 0,
            eval_calls: redis.eval_calls,
            error: None,
        }
    }

    pub(crate) fn failed(
        contender: Contender,
        algorithm: Algorithm,
        concurrency: usize,
        round: usize,
        error: String,
    ) -> Measured {
        Measured {
            contender,
            algorithm,
            concurrency,
            round,
            rps: f64::NAN,
            p50_us: f64::NAN,
            p99_us: f64::NAN,
            p999_us: f64::NAN,
            admitted: f64::NAN,
            cpu_us_per_decision: f64::NAN,
            client_cpu_us_per_decision: f64::NAN,
            script_us_per_call: f64::NAN,
            calls_per_decision: f64::NAN,
            decisions: 0,
            degraded: 0,
            failed: 0,
            eval_calls: 0,
            error: Some(error),
        }
    }
}

/// One run of the abusive-key scenario.
#[derive(Debug, Clone)]
pub(crate) struct Abused {
    contender: Contender,
    algorithm: Algorithm,
    round: usize,
    pub(crate) rps: f64,
    decisions: u64,
    admitted: u64,
    /// Script calls Redis ran during the run: all for the abusive key.
    pub(crate) redis_calls: u64,
    seconds: f64,
    degraded: u64,
    failed: u64,
    /// Script calls during the warm-up on the abusive key, first contact included.
    pub(crate) warmup_calls: u64,
}

impl Abused {
    pub(crate) fn from_run(
        contender: Contender,
        algorithm: Algorithm,
        round: usize,
        duration: Duration,
        tally: &Tally,
        redis: &Counters,
        degraded: u64,
    ) -> Abused {
        Abused {
            contender,
            algorithm,
            round,
            rps: tally.decisions as f64 / duration.as_secs_f64(),
            decisions: tally.decisions,
            admitted: tally.admitted,
            redis_calls: redis.script_calls,
            seconds: duration.as_secs_f64(),
            degraded,
            failed: tally.failed,
            warmup_calls: 0,
        }
    }
}

/// How long a denied key waits before a call can be admitted again, at the abusive key's limit: a whole window
/// for the window algorithms (all `max` admissions are spent at once), one slot (`window / max`) for the buckets.
fn retry_period(algorithm: Algorithm) -> Duration {
    match algorithm {
        Algorithm::TokenBucket | Algorithm::LeakyBucket => ABUSE_WINDOW / ABUSE_MAX as u32,
        _ => ABUSE_WINDOW,
    }
}

pub(crate) struct Report {
    pub(crate) machine: Machine,
    pub(crate) options: Options,
    pub(crate) ceiling_note: Option<String>,
    pub(crate) ceiling_at: usize,
    pub(crate) measured: Vec<Measured>,
    pub(crate) abused: Vec<Abused>,
}

fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

fn num(value: f64, decimals: usize) -> String {
    if !value.is_finite() {
        return "—".to_owned();
    }
    if decimals == 0 {
        // Thousands separated by a thin space, for readability.
        let digits = format!("{:.0}", value);
        let (sign, digits) = digits
            .strip_prefix('-')
            .map_or(("", digits.as_str()), |d| ("-", d));
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push('\u{202f}');
            }
            out.push(c);
        }
        return format!("{sign}{out}");
    }
    format!("{value:.decimals$}")
}

fn times(ratio: f64) -> String {
    if ratio.is_finite() {
        format!("{ratio:.2}×")
    } else {
        "—".to_owned()
    }
}

fn verdict(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "met",
        Some(false) => "**not met**",
        None => "not measured",
    }
}

impl Report {
    /// For the plot: `metric(decisions/s, p99 µs)` of `contender` on `algorithm`, its median over rounds at
    /// each number of tasks.
    pub(crate) fn medians(
        &self,
        contender: Contender,
        algorithm: Algorithm,
        metric: fn(f64, f64) -> f64,
    ) -> Vec<(f64, f64)> {
        crate::plot::medians(
            self.measured
                .iter()
                .filter(|m| {
                    m.contender == contender && m.algorithm == algorithm && m.error.is_none()
                })
                .map(|m| (m.concurrency, metric(m.rps, m.p99_us))),
        )
    }

    fn runs(
        &self,
        algorithm: Algorithm,
        concurrency: usize,
        contender: Contender,
    ) -> Vec<&Measured> {
        self.measured
            .iter()
            .filter(|m| {
                m.algorithm == algorithm && m.concurrency == concurrency && m.contender == contender
            })
            .collect()
    }

    fn median_of(
        &self,
        algorithm: Algorithm,
        concurrency: usize,
        contender: Contender,
        field: impl Fn(&Measured) -> f64,
    ) -> f64 {
        median(
            self.runs(algorithm, concurrency, contender)
                .into_iter()
                .map(field)
                .collect(),
        )
    }

    /// The median over rounds of `field(ours) / field(theirs)`, each pair measured in the same round.
    fn ratio(
        &self,
        algorithm: Algorithm,
        concurrency: usize,
        ours: Contender,
        theirs: Contender,
        field: impl Fn(&Measured) -> f64,
    ) -> f64 {
        let theirs = self.runs(algorithm, concurrency, theirs);
        median(
            self.runs(algorithm, concurrency, ours)
                .into_iter()
                .filter_map(|o| {
                    let t = theirs.iter().find(|t| t.round == o.round)?;
                    Some(field(o) / field(t))
                })
                .collect(),
        )
    }

    /// Runs that make this report unreliable: errors, degraded decisions, EVAL fallbacks, no decisions.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for m in &self.measured {
            let what = format!(
                "{} at {} tasks, round {}, {}",
                name(m.algorithm),
                m.concurrency,
                m.round + 1,
                m.contender.label()
            );
            if let Some(error) = &m.error {
                problems.push(format!("{what}: {error}"));
            } else if m.decisions == 0 {
                problems.push(format!("{what}: no decision"));
            }
            if m.failed > 0 {
                problems.push(format!("{what}: {} calls failed", m.failed));
            }
            if m.degraded > 0 {
                problems.push(format!(
                    "{what}: {} degraded decisions (made without Redis)",
                    m.degraded
                ));
            }
            if m.eval_calls > 0 {
                problems.push(format!(
                    "{what}: {} EVAL calls (NOSCRIPT fallbacks) while measuring",
                    m.eval_calls
                ));
            }
        }
        for a in &self.abused {
            let what = format!(
                "abusive key, {}, {}",
                name(a.algorithm),
                a.contender.label()
            );
            if a.decisions == 0 {
                problems.push(format!("{what}: no decision"));
            }
            if a.failed > 0 {
                problems.push(format!("{what}: {} calls failed", a.failed));
            }
            if a.degraded > 0 {
                problems.push(format!("{what}: {} degraded decisions", a.degraded));
            }
        }
        problems
    }

    pub(crate) fn markdown(&self) -> String {
        let mut out = String::new();
        self.header(&mut out);
        self.targets(&mut out);
        self.throughput(&mut out);
        self.ceiling(&mut out);
        self.cpu(&mut out);
        self.abuse(&mut out);
        let problems = self.problems();
        if !problems.is_empty() {
            let _ = writeln!(out, "\n## Problems in this run\n");
            for problem in problems {
                let _ = writeln!(out, "- {problem}");
            }
        }
        out
    }

    fn header(&self, out: &mut String) {
        let (m, o) = (&self.machine, &self.options);
        let _ = writeln!(out, "# Load benchmark: limiter on Redis\n");
        let _ = writeln!(
            out,
            "- machine: {} cores ({}), Redis {} on loopback",
            m.cores, m.cpu, m.redis
        );
        let _ = writeln!(out, "- CPU layout: {}", m.layout.describe());
        let _ = writeln!(
            out,
            "- client: {} build, Tokio multi-thread runtime with {} workers; each contender run has its own \
             limiter (so its own multiplexed connection and deny cache) or its own `ConnectionManager`",
            m.build, m.workers
        );
        let _ = writeln!(
            out,
            "- method: per algorithm and concurrency, {} round(s); a round runs every contender once, in \
             rotating order: {:.2} s warm-up, `FLUSHALL`, {:.2} s measured. Values are medians over rounds; \
             ratios are medians of per-round ratios (both sides measured back to back)",
            o.rounds,
            o.warmup.as_secs_f64(),
            o.duration.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "- spread load: {} random keys, limit {} per {:?} per key (almost every call admitted); latency \
             is per call, from the call to its answer; Redis CPU is `used_cpu_sys + used_cpu_user` of the whole \
             server per call Redis ran; script µs is `usec` per call of `EVALSHA`/`EVAL` (commandstats)",
            o.keys,
            Scenario::Spread.max(),
            Scenario::Spread.window(),
        );
        let _ = writeln!(
            out,
            "- library settings: defaults (deny cache on), but a 1 s deadline, so that no decision is made \
             without Redis (degraded decisions are counted, and reported below if any)"
        );
        let _ = writeln!(out);
    }

    fn targets(&self, out: &mut String) {
        let o = &self.options;
        let _ = writeln!(out, "## Targets (ratios measured in this run)\n");
        let _ = writeln!(out, "| target | algorithm | measured | verdict |");
        let _ = writeln!(out, "|---|---|---|---|");
        for &algorithm in &o.algorithms {
            // The annotated fn's ratio to the baseline in `metric`, at every concurrency.
            let per_concurrency = |metric: fn(&Measured) -> f64| -> Vec<(usize, f64)> {
                o.concurrency
                    .iter()
                    .map(|&c| {
                        let ratio = self.ratio(
                            algorithm,
                            c,
                            Contender::Annotated,
                            Contender::Baseline,
                            metric,
                        );
                        (c, ratio)
                    })
                    .collect()
            };
            let throughput = per_concurrency(|m| m.rps);
            let list = |values: &[(usize, f64)]| {
                values
                    .iter()
                    .map(|(c, r)| format!("{c}: {}", times(*r)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let all = |values: &[(usize, f64)], ok: &dyn Fn(f64) -> bool| {
                if values.iter().any(|(_, r)| !r.is_finite()) {
                    None
                } else {
                    Some(values.iter().all(|(_, r)| ok(*r)))
                }
            };
            let _ = writeln!(
                out,
                "| annotated ≥ {MIN_THROUGHPUT_RATIO}× baseline decisions/s, every concurrency | {} | {} | {} |",
                name(algorithm),
                list(&throughput),
                verdict(all(&throughput, &|r| r >= MIN_THROUGHPUT_RATIO)),
            );
            let p99 = per_concurrency(|m| m.p99_us);
            let _ = writeln!(
                out,
                "| annotated p99 ≤ {MAX_P99_RATIO}× baseline p99, every concurrency | {} | {} | {} |",
                name(algorithm),
                list(&p99),
                verdict(all(&p99, &|r| r <= MAX_P99_RATIO)),
            );
            if self.ceiling_note.is_none() {
                let c = self.ceiling_at;
                let ratio = self.ratio(
                    algorithm,
                    c,
                    Contender::Annotated,
                    Contender::Ceiling,
                    |m| m.rps,
                );
                let _ = writeln!(
                    out,
                    "| annotated at {c} tasks ≥ {MIN_CEILING_RATIO}× the script's redis-benchmark -P 16 ceiling | {} | {} | {} |",
                    name(algorithm),
                    times(ratio),
                    verdict(ratio.is_finite().then_some(ratio >= MIN_CEILING_RATIO)),
                );
            }
        }
        for &algorithm in &o.algorithms {
            if self.abused_runs(algorithm, Contender::Baseline).is_empty() {
                continue;
            }
            for contender in [Contender::Annotated, Contender::Plain] {
                let ratio = self.abuse_ratio(algorithm, contender);
                let _ = writeln!(
                    out,
                    "| abusive key: {} ≥ {MIN_ABUSE_RATIO}× baseline decisions/s | {} | {} | {} |",
                    contender.label(),
                    name(algorithm),
                    times(ratio),
                    verdict(ratio.is_finite().then_some(ratio >= MIN_ABUSE_RATIO)),
                );
            }
            let denied = median(
                self.abused_runs(algorithm, Contender::Annotated)
                    .into_iter()
                    .map(denied_calls_per_period)
                    .collect(),
            );
            // The deny cache is exact for these four; the sliding window's estimate lets a denied key back in
            // gradually, so it has no single retry period.
            let exact = algorithm != Algorithm::SlidingWindow;
            let _ = writeln!(
                out,
                "| abusive key: annotated fn's denied calls reaching Redis ≤ {MAX_DENIED_CALLS_PER_PERIOD} per retry period ({:?}) | {} | {} | {} |",
                retry_period(algorithm),
                name(algorithm),
                num(denied, 1),
                if exact {
                    verdict(denied.is_finite().then_some(denied <= MAX_DENIED_CALLS_PER_PERIOD))
                } else {
                    "not a target (an estimate)"
                },
            );
        }
        let _ = writeln!(out);
    }

    fn throughput(&self, out: &mut String) {
        let o = &self.options;
        let _ = writeln!(out, "## Throughput and latency ({} random keys)\n", o.keys);
        for &algorithm in &o.algorithms {
            let _ = writeln!(out, "### {}\n", name(algorithm));
            let _ = writeln!(
                out,
                "| tasks | contender | decisions/s | vs baseline | p50 µs | p99 µs | p99.9 µs | p99 vs baseline | admitted | Redis CPU µs/decision | client CPU µs/decision | script µs/call | Redis calls/decision |"
            );
            let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
            for &c in &o.concurrency {
                for contender in [
                    Contender::Annotated,
                    Contender::Plain,
                    Contender::Baseline,
                    Contender::BaselineTimeout,
                    Contender::BaselineClone,
                    Contender::Ceiling,
                ] {
                    if self.runs(algorithm, c, contender).is_empty() {
                        continue;
                    }
                    let med = |f: fn(&Measured) -> f64| self.median_of(algorithm, c, contender, f);
                    let vs = |f: fn(&Measured) -> f64| {
                        if contender == Contender::Baseline {
                            String::new()
                        } else {
                            times(self.ratio(algorithm, c, contender, Contender::Baseline, f))
                        }
                    };
                    let admitted = med(|m| m.admitted);
                    let _ = writeln!(
                        out,
                        "| {c} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                        contender.label(),
                        num(med(|m| m.rps), 0),
                        vs(|m| m.rps),
                        num(med(|m| m.p50_us), 0),
                        num(med(|m| m.p99_us), 0),
                        num(med(|m| m.p999_us), 0),
                        if contender == Contender::Ceiling {
                            String::new()
                        } else {
                            vs(|m| m.p99_us)
                        },
                        if admitted.is_finite() {
                            format!("{:.1}%", admitted * 100.0)
                        } else {
                            "—".to_owned()
                        },
                        num(med(|m| m.cpu_us_per_decision), 1),
                        num(med(|m| m.client_cpu_us_per_decision), 1),
                        num(med(|m| m.script_us_per_call), 1),
                        num(med(|m| m.calls_per_decision), 3),
                    );
                }
            }
            let _ = writeln!(out);
        }
    }

    fn ceiling(&self, out: &mut String) {
        let c = self.ceiling_at;
        let _ = writeln!(
            out,
            "## Redis's ceiling per script (redis-benchmark: EVALSHA, -c 50, -P 16, {} random keys)\n",
            self.options.keys
        );
        if let Some(note) = &self.ceiling_note {
            let _ = writeln!(out, "{note}\n");
            return;
        }
        let _ = writeln!(
            out,
            "CPU layout: {}. {}\n",
            self.machine.layout.placement(),
            if self.machine.layout.is_pinned() {
                "No client runs on Redis's CPU, so the ceiling is what Redis can serve there, and a \
                 contender's ratio to it is how close that client gets (unless the client CPUs saturate first: \
                 see the client CPU column)."
            } else {
                "Redis shares the CPUs with the clients: the ratio also measures how much CPU each client leaves \
                 Redis (redis-benchmark's C client costs almost none)."
            }
        );
        let _ = writeln!(
            out,
            "| algorithm | ceiling decisions/s | Redis CPU µs/call at the ceiling | annotated at {c} tasks | vs ceiling | plain API at {c} tasks | vs ceiling | baseline at {c} tasks | vs ceiling |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
        for &algorithm in &self.options.algorithms {
            let rps = |who| self.median_of(algorithm, c, who, |m| m.rps);
            let ratio = |who| times(self.ratio(algorithm, c, who, Contender::Ceiling, |m| m.rps));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                name(algorithm),
                num(rps(Contender::Ceiling), 0),
                num(
                    self.median_of(algorithm, c, Contender::Ceiling, |m| m.cpu_us_per_decision),
                    1
                ),
                num(rps(Contender::Annotated), 0),
                ratio(Contender::Annotated),
                num(rps(Contender::Plain), 0),
                ratio(Contender::Plain),
                num(rps(Contender::Baseline), 0),
                ratio(Contender::Baseline),
            );
        }
        let _ = writeln!(out);
    }

    fn cpu(&self, out: &mut String) {
        let c = self.ceiling_at;
        let _ = writeln!(out, "## CPU per decision (µs, {c} tasks)\n");
        let _ = writeln!(
            out,
            "Redis: whole-process CPU (`used_cpu_sys + used_cpu_user`, so I/O included) per call Redis ran, and \
             the script's own execution time (`usec` per call of commandstats). Client: this process's CPU \
             (user + system, every thread: runtime, redis-rs, the library, its side of the socket) per decision. \
             {} Lower is leaner.\n",
            if self.machine.layout.is_pinned() {
                "Redis runs on a CPU no client runs on, so its CPU per decision bounds what it can serve; the \
                 clients share the other CPU(s)."
            } else {
                "Client and server share the machine's cores, so together they bound the throughput."
            }
        );
        let _ = writeln!(
            out,
            "| algorithm | annotated | plain API | baseline | redis-benchmark -P 16 | script exec µs/call (annotated) | Redis calls/decision (annotated) | client CPU µs/decision: annotated | plain API | baseline |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|");
        for &algorithm in &self.options.algorithms {
            let cpu = |who| {
                num(
                    self.median_of(algorithm, c, who, |m| m.cpu_us_per_decision),
                    1,
                )
            };
            let client = |who| {
                num(
                    self.median_of(algorithm, c, who, |m| m.client_cpu_us_per_decision),
                    1,
                )
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                name(algorithm),
                cpu(Contender::Annotated),
                cpu(Contender::Plain),
                cpu(Contender::Baseline),
                cpu(Contender::Ceiling),
                num(
                    self.median_of(algorithm, c, Contender::Annotated, |m| m.script_us_per_call),
                    1
                ),
                num(
                    self.median_of(algorithm, c, Contender::Annotated, |m| m.calls_per_decision),
                    3
                ),
                client(Contender::Annotated),
                client(Contender::Plain),
                client(Contender::Baseline),
            );
        }
        let _ = writeln!(out);
    }

    fn abused_runs(&self, algorithm: Algorithm, contender: Contender) -> Vec<&Abused> {
        self.abused
            .iter()
            .filter(|a| a.algorithm == algorithm && a.contender == contender)
            .collect()
    }

    /// The median over rounds of `contender`'s decisions/s over the baseline's in the same round.
    fn abuse_ratio(&self, algorithm: Algorithm, contender: Contender) -> f64 {
        let base = self.abused_runs(algorithm, Contender::Baseline);
        median(
            self.abused_runs(algorithm, contender)
                .into_iter()
                .filter_map(|a| {
                    let b = base.iter().find(|b| b.round == a.round)?;
                    Some(a.rps / b.rps)
                })
                .collect(),
        )
    }

    fn abuse(&self, out: &mut String) {
        if self.abused.is_empty() {
            return;
        }
        let _ = writeln!(
            out,
            "## Abusive key ({} tasks on one key, limit {} per {:?}, {:.1} s per run)\n",
            crate::ABUSE_TASKS,
            ABUSE_MAX,
            ABUSE_WINDOW,
            self.options.abuse_duration.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "Each run starts with a warm-up of {:.2} s on the abusive key itself, counted apart: it holds the \
             first contact, when every task's first call reaches Redis before Redis has denied anything. Then \
             the steady state is measured. Every script call Redis ran during a run was for the abusive key (the \
             limiters' heartbeat is pushed out of the run). The retry period is how long a denied key waits: \
             the window for the window algorithms, one slot (window / max) for the buckets. Medians over {} \
             round(s), contenders alternating.\n",
            self.options.warmup.max(ABUSE_WINDOW).as_secs_f64(),
            self.options.rounds,
        );
        let _ = writeln!(
            out,
            "| algorithm | contender | decisions/s | vs baseline | admitted | Redis calls/s | Redis calls per retry period | denied calls reaching Redis per retry period | Redis calls in the warm-up |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
        for &algorithm in &self.options.algorithms {
            let periods =
                self.options.abuse_duration.as_secs_f64() / retry_period(algorithm).as_secs_f64();
            for contender in [
                Contender::Annotated,
                Contender::Plain,
                Contender::PlainNoCache,
                Contender::Baseline,
            ] {
                let runs = self.abused_runs(algorithm, contender);
                if runs.is_empty() {
                    continue;
                }
                let med = |f: fn(&Abused) -> f64| median(runs.iter().map(|a| f(a)).collect());
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    name(algorithm),
                    contender.label(),
                    num(med(|a| a.rps), 0),
                    if contender == Contender::Baseline {
                        String::new()
                    } else {
                        times(self.abuse_ratio(algorithm, contender))
                    },
                    num(med(|a| a.admitted as f64), 0),
                    num(med(|a| a.redis_calls as f64 / a.seconds), 0),
                    num(med(|a| a.redis_calls as f64) / periods, 1),
                    num(med(denied_calls_per_period), 1),
                    num(med(|a| a.warmup_calls as f64), 0),
                );
            }
        }
        let _ = writeln!(out);
    }
}

/// Script calls that did not admit anything (denials Redis had to make), per retry period.
fn denied_calls_per_period(a: &Abused) -> f64 {
    let periods = a.seconds / retry_period(a.algorithm).as_secs_f64();
    a.redis_calls.saturating_sub(a.admitted) as f64 / periods
}
