//! What was measured, and the markdown report of it: the header and the problems here, the targets and each
//! scenario's tables in the files beside it (the hot key's in `hot::report`).

mod abuse;
mod format;
mod measured;
mod spread;
mod targets;

use std::fmt::Write as _;

use limiter_runtime::Algorithm;

use crate::cli::{name, Options};
use crate::contender::{Contender, Scenario};
use crate::hot::{self, HotRun};
use crate::pinning::Layout;
use crate::server;

pub(crate) use self::format::{judged, median, num, percent, times, verdict};
pub(crate) use self::measured::{Abused, Cell, Measured};

/// The machine, as far as the benchmark can see it.
#[derive(Debug, Clone)]
pub(crate) struct Machine {
    cores: usize,
    cpu: String,
    redis: String,
    build: &'static str,
    /// Where Redis and the clients ran, in the order measured, and the Tokio workers of each.
    pub(crate) layouts: Vec<(Layout, usize)>,
}

impl Machine {
    /// One line: CPU, cores, Redis.
    pub(crate) fn summary(&self) -> String {
        format!("{}, {} cores, {}", self.cpu, self.cores, self.redis)
    }

    pub(crate) fn probe(
        connection: &mut redis::Connection,
        options: &Options,
        layouts: &[Layout],
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
            // The CPUs the process could use before it pinned itself (`available_parallelism` then counts
            // only the client CPUs).
            cores: layouts.first().map_or(1, |l| l.cpus.len()),
            cpu,
            redis: server::version(connection),
            build: if cfg!(debug_assertions) {
                "debug (numbers not meaningful)"
            } else {
                "release"
            },
            layouts: layouts
                .iter()
                .map(|l| (l.clone(), workers(options, l)))
                .collect(),
        }
    }

    /// The layout measured first: the abusive and hot keys run in it.
    pub(crate) fn first_layout(&self) -> &Layout {
        &self.layouts[0].0
    }
}

/// The Tokio workers of the load binary (and of each hot-key worker process) in `layout`.
pub(crate) fn workers(options: &Options, layout: &Layout) -> usize {
    options.workers.unwrap_or_else(|| layout.client_cpus())
}

pub(crate) struct Report {
    pub(crate) machine: Machine,
    pub(crate) options: Options,
    pub(crate) ceiling_note: Option<String>,
    pub(crate) ceiling_at: usize,
    pub(crate) measured: Vec<Measured>,
    pub(crate) abused: Vec<Abused>,
    pub(crate) hot: Vec<HotRun>,
}

impl Report {
    /// For the plot: `metric(decisions/s, p99 µs)` of `contender` on `algorithm` in the first layout, its median
    /// over rounds at each number of tasks.
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
                    m.layout == 0
                        && m.contender == contender
                        && m.algorithm == algorithm
                        && m.error.is_none()
                })
                .map(|m| (m.concurrency, metric(m.rps, m.p99_us))),
        )
    }

    fn runs(
        &self,
        layout: usize,
        algorithm: Algorithm,
        concurrency: usize,
        contender: Contender,
    ) -> Vec<&Measured> {
        self.measured
            .iter()
            .filter(|m| {
                m.layout == layout
                    && m.algorithm == algorithm
                    && m.concurrency == concurrency
                    && m.contender == contender
            })
            .collect()
    }

    fn median_of(
        &self,
        layout: usize,
        algorithm: Algorithm,
        concurrency: usize,
        contender: Contender,
        field: impl Fn(&Measured) -> f64,
    ) -> f64 {
        median(
            self.runs(layout, algorithm, concurrency, contender)
                .into_iter()
                .map(field)
                .collect(),
        )
    }

    /// The median over rounds of `field(ours) / field(theirs)`, each pair measured in the same round.
    fn ratio(
        &self,
        layout: usize,
        algorithm: Algorithm,
        concurrency: usize,
        ours: Contender,
        theirs: Contender,
        field: impl Fn(&Measured) -> f64,
    ) -> f64 {
        let theirs = self.runs(layout, algorithm, concurrency, theirs);
        median(
            self.runs(layout, algorithm, concurrency, ours)
                .into_iter()
                .filter_map(|o| {
                    let t = theirs.iter().find(|t| t.round == o.round)?;
                    Some(field(o) / field(t))
                })
                .collect(),
        )
    }

    /// The indices of the layouts the spread scenario ran in.
    fn spread_layouts(&self) -> Vec<usize> {
        (0..self.machine.layouts.len())
            .filter(|&l| self.measured.iter().any(|m| m.layout == l))
            .collect()
    }

    /// Runs that make this report unreliable: errors, degraded decisions, EVAL fallbacks, no decisions.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for m in &self.measured {
            let what = format!(
                "{}, {} at {} tasks, round {}, {}",
                self.machine.layouts[m.layout].0.name(),
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
        problems.extend(abuse::problems(&self.abused));
        problems.extend(hot::report::problems(&self.hot));
        problems
    }

    pub(crate) fn markdown(&self) -> String {
        let mut out = String::new();
        self.header(&mut out);
        targets::section(self, &mut out);
        for layout in self.spread_layouts() {
            spread::section(self, layout, &mut out);
        }
        abuse::section(self, &mut out);
        hot::report::section(self, &mut out);
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
        for (layout, workers) in &m.layouts {
            let _ = writeln!(
                out,
                "- CPU layout, {}: {} Tokio multi-thread runtime with {workers} worker(s).",
                layout.name(),
                layout.describe()
            );
        }
        let _ = writeln!(
            out,
            "- client: {} build; each contender run has its own limiter (so its own multiplexed connection and \
             deny cache) or its own `ConnectionManager`; the baseline calls a minimal hand-written script per \
             algorithm (`benches/src/bin/load/baseline/`) with `redis::Script`, the library its script of one limit \
             (`limiter-runtime/scripts/one_limit.lua` with `scripts/algorithms/<algorithm>.lua`)",
            m.build
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
        let spread = Scenario::Spread.limit();
        let _ = writeln!(
            out,
            "- spread load: {} random keys, limit {} per {:?} per key (almost every call admitted); latency \
             is per call, from the call to its answer; Redis CPU is `used_cpu_sys + used_cpu_user` of the whole \
             server per call Redis ran; script µs is `usec` per call of `EVALSHA`/`EVAL` (commandstats)",
            o.keys, spread.max, spread.window,
        );
        let _ = writeln!(
            out,
            "- library settings: defaults (deny cache and coalescing on), but a 1 s deadline, so that no \
             decision is made without Redis (degraded decisions are counted, and reported below if any)"
        );
        let _ = writeln!(out);
    }
}
