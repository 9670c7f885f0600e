//! The abusive key's table, its targets and its problems.

use std::fmt::Write as _;
use std::time::Duration;

use limiter_runtime::Algorithm;

use super::{median, num, times, verdict, Abused, Report};
use crate::cli::name;
use crate::contender::{Contender, ABUSE_MAX, ABUSE_WINDOW};

/// The abusive key's targets: decisions/s against the baseline (which sends every call to Redis), and "a few"
/// denied calls reaching Redis per retry period, per node (a number of our own).
const MIN_ABUSE_RATIO: f64 = 20.0;
const MAX_DENIED_CALLS_PER_PERIOD: f64 = 5.0;

/// How long a denied key waits before a call can be admitted again, at the abusive key's limit: a whole window
/// for the window algorithms (all `max` admissions are spent at once), one slot (`window / max`) for the buckets.
fn retry_period(algorithm: Algorithm) -> Duration {
    match algorithm {
        Algorithm::TokenBucket | Algorithm::LeakyBucket => ABUSE_WINDOW / ABUSE_MAX as u32,
        _ => ABUSE_WINDOW,
    }
}

/// Script calls that did not admit anything (denials Redis had to make), per retry period.
fn denied_calls_per_period(a: &Abused) -> f64 {
    let periods = a.seconds / retry_period(a.algorithm).as_secs_f64();
    a.redis_calls.saturating_sub(a.admitted) as f64 / periods
}

impl Report {
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
}

/// The abusive key's rows of the targets table (`| target | layout | algorithm | measured | verdict |`).
pub(super) fn targets(report: &Report, out: &mut String) {
    let layout = report.machine.first_layout().name();
    for &algorithm in &report.options.algorithms {
        if report
            .abused_runs(algorithm, Contender::Baseline)
            .is_empty()
        {
            continue;
        }
        for contender in [Contender::Annotated, Contender::Plain] {
            let ratio = report.abuse_ratio(algorithm, contender);
            let _ = writeln!(
                out,
                "| abusive key: {} ≥ {MIN_ABUSE_RATIO}× baseline decisions/s | {layout} | {} | {} | {} |",
                contender.label(),
                name(algorithm),
                times(ratio),
                verdict(ratio.is_finite().then_some(ratio >= MIN_ABUSE_RATIO)),
            );
        }
        let denied = median(
            report
                .abused_runs(algorithm, Contender::Annotated)
                .into_iter()
                .map(denied_calls_per_period)
                .collect(),
        );
        // The deny cache is exact for these four; the sliding window's estimate lets a denied key back in
        // gradually, so it has no single retry period.
        let exact = algorithm != Algorithm::SlidingWindow;
        let _ = writeln!(
            out,
            "| abusive key: annotated fn's denied calls reaching Redis ≤ {MAX_DENIED_CALLS_PER_PERIOD} per retry period ({:?}) | {layout} | {} | {} | {} |",
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
}

pub(super) fn section(report: &Report, out: &mut String) {
    if report.abused.is_empty() {
        return;
    }
    let options = &report.options;
    let _ = writeln!(
        out,
        "## Abusive key, {} ({} tasks on one key, limit {} per {:?}, {:.1} s per run)\n",
        report.machine.first_layout().name(),
        crate::abuse::TASKS,
        ABUSE_MAX,
        ABUSE_WINDOW,
        options.abuse_duration.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "Each run starts with a warm-up of {:.2} s on the abusive key itself, counted apart: it holds the \
         first contact, when every task's first call reaches Redis before Redis has denied anything. Then \
         the steady state is measured. Every script call Redis ran during a run was for the abusive key (the \
         limiters' heartbeat is pushed out of the run). The retry period is how long a denied key waits: \
         the window for the window algorithms, one slot (window / max) for the buckets. Medians over {} \
         round(s), contenders alternating.\n",
        options.warmup.max(ABUSE_WINDOW).as_secs_f64(),
        options.rounds,
    );
    let _ = writeln!(
        out,
        "| algorithm | contender | decisions/s | vs baseline | admitted | Redis calls/s | Redis calls per retry period | denied calls reaching Redis per retry period | Redis calls in the warm-up |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|");
    for &algorithm in &options.algorithms {
        let periods = options.abuse_duration.as_secs_f64() / retry_period(algorithm).as_secs_f64();
        for contender in crate::abuse::CONTENDERS {
            let runs = report.abused_runs(algorithm, contender);
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
                    times(report.abuse_ratio(algorithm, contender))
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

/// Abusive-key runs that make the report unreliable: no decision, failed calls, degraded decisions.
pub(super) fn problems(abused: &[Abused]) -> Vec<String> {
    let mut problems = Vec::new();
    for a in abused {
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
