//! The spread scenario's tables, one set per layout: throughput and latency per algorithm, Redis's ceiling per
//! script (the library's and the minimal one), CPU per decision.

use std::fmt::Write as _;

use limiter_runtime::Algorithm;

use super::{num, percent, times, Measured, Report};
use crate::cli::name;
use crate::contender::Contender;

/// The spread scenario in layout `layout`.
pub(super) fn section(report: &Report, layout: usize, out: &mut String) {
    let (place, _) = &report.machine.layouts[layout];
    let _ = writeln!(
        out,
        "## Spread load, {}: {} random keys\n\n{}.\n",
        place.name(),
        report.options.keys,
        place.placement()
    );
    throughput(report, layout, out);
    ceiling(report, layout, out);
    cpu(report, layout, out);
}

fn throughput(report: &Report, layout: usize, out: &mut String) {
    for &algorithm in &report.options.algorithms {
        let _ = writeln!(out, "### {}\n", name(algorithm));
        let _ = writeln!(
            out,
            "| tasks | contender | decisions/s | vs baseline | p50 µs | p99 µs | p99.9 µs | p99 vs baseline | admitted | Redis CPU µs/decision | client CPU µs/decision | script µs/call | Redis calls/decision |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        for &c in &report.options.concurrency {
            for contender in [
                Contender::Annotated,
                Contender::Plain,
                Contender::PlainPerKey,
                Contender::Baseline,
                Contender::BaselineTimeout,
                Contender::BaselineClone,
                Contender::Ceiling,
                Contender::CeilingMinimal,
            ] {
                if report.runs(layout, algorithm, c, contender).is_empty() {
                    continue;
                }
                let med =
                    |f: fn(&Measured) -> f64| report.median_of(layout, algorithm, c, contender, f);
                let ceiling = matches!(contender, Contender::Ceiling | Contender::CeilingMinimal);
                let vs = |f: fn(&Measured) -> f64| {
                    if contender == Contender::Baseline {
                        String::new()
                    } else {
                        times(report.ratio(layout, algorithm, c, contender, Contender::Baseline, f))
                    }
                };
                let _ = writeln!(
                    out,
                    "| {c} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    contender.label(),
                    num(med(|m| m.rps), 0),
                    vs(|m| m.rps),
                    num(med(|m| m.p50_us), 0),
                    num(med(|m| m.p99_us), 0),
                    num(med(|m| m.p999_us), 0),
                    if ceiling {
                        String::new()
                    } else {
                        vs(|m| m.p99_us)
                    },
                    percent(med(|m| m.admitted)),
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

fn ceiling(report: &Report, layout: usize, out: &mut String) {
    let c = report.ceiling_at;
    let (place, _) = &report.machine.layouts[layout];
    let _ = writeln!(
        out,
        "### Redis's ceiling per script (redis-benchmark: EVALSHA, -c 50, -P 16, {} random keys)\n",
        report.options.keys
    );
    if let Some(note) = &report.ceiling_note {
        let _ = writeln!(out, "{note}\n");
        return;
    }
    let _ = writeln!(
        out,
        "{} The library's row calls its script of one limit of the algorithm with the arguments it sends; the minimal \
         row, the baseline's script.\n",
        if place.is_pinned() {
            "No client runs on Redis's CPU, so the ceiling is what Redis can serve there, and a contender's \
             ratio to it is how close that client gets (unless the client CPUs saturate first: see the client \
             CPU column)."
        } else {
            "Redis shares the CPUs with the clients: the ratio also measures how much CPU each client leaves \
             Redis (redis-benchmark's C client costs almost none)."
        }
    );
    let _ = writeln!(
        out,
        "| algorithm | library script decisions/s | Redis CPU µs/call | minimal script decisions/s | Redis CPU µs/call | CPU: library vs minimal | annotated at {c} tasks | vs library ceiling | plain API | vs library ceiling | baseline | vs minimal ceiling |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &algorithm in &report.options.algorithms {
        let rps = |who| report.median_of(layout, algorithm, c, who, |m| m.rps);
        let cpu = |who| report.median_of(layout, algorithm, c, who, |m| m.cpu_us_per_decision);
        let ratio =
            |who, ceiling| times(report.ratio(layout, algorithm, c, who, ceiling, |m| m.rps));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            name(algorithm),
            num(rps(Contender::Ceiling), 0),
            num(cpu(Contender::Ceiling), 2),
            num(rps(Contender::CeilingMinimal), 0),
            num(cpu(Contender::CeilingMinimal), 2),
            times(report.script_cpu_ratio(layout, algorithm)),
            num(rps(Contender::Annotated), 0),
            ratio(Contender::Annotated, Contender::Ceiling),
            num(rps(Contender::Plain), 0),
            ratio(Contender::Plain, Contender::Ceiling),
            num(rps(Contender::Baseline), 0),
            ratio(Contender::Baseline, Contender::CeilingMinimal),
        );
    }
    let _ = writeln!(out);
}

fn cpu(report: &Report, layout: usize, out: &mut String) {
    let c = report.ceiling_at;
    let (place, _) = &report.machine.layouts[layout];
    let _ = writeln!(out, "### CPU per decision (µs, {c} tasks)\n");
    let _ = writeln!(
        out,
        "Redis: whole-process CPU (`used_cpu_sys + used_cpu_user`, so I/O included) per call Redis ran, and \
         the script's own execution time (`usec` per call of commandstats). Client: this process's CPU \
         (user + system, every thread: runtime, redis-rs, the library, its side of the socket) per decision. \
         {} Lower is leaner.\n",
        if place.is_pinned() {
            "Redis runs on a CPU no client runs on, so its CPU per decision bounds what it can serve; the \
             clients share the other CPU(s)."
        } else {
            "Client and server share the machine's cores, so together they bound the throughput."
        }
    );
    let _ = writeln!(
        out,
        "| algorithm | annotated | plain API | baseline | redis-benchmark, library script | redis-benchmark, minimal script | script exec µs/call: annotated | baseline | Redis calls/decision (annotated) | client CPU µs/decision: annotated | plain API | baseline |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &algorithm in &report.options.algorithms {
        let med = |who, f: fn(&Measured) -> f64| report.median_of(layout, algorithm, c, who, f);
        let cpu = |who| num(med(who, |m| m.cpu_us_per_decision), 1);
        let client = |who| num(med(who, |m| m.client_cpu_us_per_decision), 1);
        let script = |who| num(med(who, |m| m.script_us_per_call), 1);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            name(algorithm),
            cpu(Contender::Annotated),
            cpu(Contender::Plain),
            cpu(Contender::Baseline),
            cpu(Contender::Ceiling),
            cpu(Contender::CeilingMinimal),
            script(Contender::Annotated),
            script(Contender::Baseline),
            num(med(Contender::Annotated, |m| m.calls_per_decision), 3),
            client(Contender::Annotated),
            client(Contender::Plain),
            client(Contender::Baseline),
        );
    }
    let _ = writeln!(out);
}

impl Report {
    /// Redis's CPU per call of the library's script of one limit over the minimal script's, both under
    /// `redis-benchmark` at the ceiling's concurrency: the median of per-round ratios.
    pub(super) fn script_cpu_ratio(&self, layout: usize, algorithm: Algorithm) -> f64 {
        self.ratio(
            layout,
            algorithm,
            self.ceiling_at,
            Contender::Ceiling,
            Contender::CeilingMinimal,
            |m| m.cpu_us_per_decision,
        )
    }
}
