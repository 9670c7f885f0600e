//! The targets, each judged on ratios measured in this run: against the baseline per cell (layout × algorithm
//! × tasks), Redis's CPU per decision of the library's script against the minimal one, the ceiling, the
//! abusive key and the hot key.

use std::fmt::Write as _;

use limiter_runtime::Algorithm;

use super::{abuse, judged, num, times, verdict, Measured, Report};
use crate::cli::name;
use crate::contender::Contender;

/// Decisions/s at least this share of the baseline's, and p99 at most this multiple of its, in the same round.
const MIN_THROUGHPUT_RATIO: f64 = 0.95;
const MAX_P99_RATIO: f64 = 1.10;
/// The tasks at which the two above are judged.
const TARGET_TASKS: [usize; 3] = [16, 64, 256];
/// Redis's CPU per call of the library's script at most this multiple of the minimal script's.
const MAX_SCRIPT_CPU_RATIO: f64 = 1.05;
/// The annotated fn at the ceiling's concurrency, at least this share of the library script's ceiling.
const MIN_CEILING_RATIO: f64 = 0.90;

pub(super) fn section(report: &Report, out: &mut String) {
    let _ = writeln!(out, "## Targets (ratios measured in this run)\n");
    per_cell(report, out);
    script_cpu(report, out);
    let _ = writeln!(out, "### Ceiling and abusive key\n");
    let _ = writeln!(out, "| target | layout | algorithm | measured | verdict |");
    let _ = writeln!(out, "|---|---|---|---|---|");
    ceiling(report, out);
    abuse::targets(report, out);
    let _ = writeln!(out);
    crate::hot::report::targets(report, out);
}

/// One judged column of the per-cell table.
struct Column {
    contender: Contender,
    metric: fn(&Measured) -> f64,
    met: fn(f64) -> bool,
    title: String,
}

fn per_cell(report: &Report, out: &mut String) {
    let tasks: Vec<usize> = TARGET_TASKS
        .into_iter()
        .filter(|t| report.options.concurrency.contains(t))
        .collect();
    let layouts = report.spread_layouts();
    if tasks.is_empty() || layouts.is_empty() {
        return;
    }
    let columns = [
        (Contender::Annotated, "decisions/s"),
        (Contender::Plain, "decisions/s"),
        (Contender::Annotated, "p99"),
        (Contender::Plain, "p99"),
    ]
    .map(|(contender, what)| {
        let throughput = what == "decisions/s";
        Column {
            contender,
            metric: if throughput { |m| m.rps } else { |m| m.p99_us },
            met: if throughput {
                |r| r >= MIN_THROUGHPUT_RATIO
            } else {
                |r| r <= MAX_P99_RATIO
            },
            title: format!(
                "{} {what} {}",
                contender.label(),
                if throughput {
                    format!("≥ {MIN_THROUGHPUT_RATIO}×")
                } else {
                    format!("≤ {MAX_P99_RATIO}×")
                }
            ),
        }
    });
    let _ = writeln!(
        out,
        "### Against the baseline, per cell\n\nRatio to the baseline measured in the same round (median over \
         rounds), at {} tasks.\n",
        tasks
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let titles: Vec<&str> = columns.iter().map(|c| c.title.as_str()).collect();
    let _ = writeln!(
        out,
        "| layout | algorithm | tasks | {} |",
        titles.join(" | ")
    );
    let _ = writeln!(out, "|---|---|---|{}", "---|".repeat(columns.len()));
    let mut tally = vec![(0, 0); columns.len()];
    for &layout in &layouts {
        for &algorithm in &report.options.algorithms {
            for &c in &tasks {
                let cells: Vec<String> = columns
                    .iter()
                    .zip(&mut tally)
                    .map(|(column, (met, judged_cells))| {
                        let ratio = report.ratio(
                            layout,
                            algorithm,
                            c,
                            column.contender,
                            Contender::Baseline,
                            column.metric,
                        );
                        let ok = ratio.is_finite().then(|| (column.met)(ratio));
                        *judged_cells += usize::from(ok.is_some());
                        *met += usize::from(ok == Some(true));
                        judged(times(ratio), ok)
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "| {} | {} | {c} | {} |",
                    report.machine.layouts[layout].0.name(),
                    name(algorithm),
                    cells.join(" | ")
                );
            }
        }
    }
    let summary: Vec<String> = columns
        .iter()
        .zip(&tally)
        .map(|(column, (met, judged_cells))| format!("{}: {met} of {judged_cells}", column.title))
        .collect();
    let _ = writeln!(out, "\nMet: {}.\n", summary.join("; "));
}

fn script_cpu(report: &Report, out: &mut String) {
    let layouts = report.spread_layouts();
    if report.ceiling_note.is_some() || layouts.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Redis CPU per decision: the library's script against the minimal one\n\n`redis-benchmark -c 50 \
         -P 16` calling each over the same random keys, back to back: Redis's whole-process CPU per call \
         (`INFO cpu`), and the script's own execution time (`usec` per call, commandstats). Target: ≤ \
         {MAX_SCRIPT_CPU_RATIO}×.\n"
    );
    let _ = writeln!(
        out,
        "| layout | algorithm | library script, Redis CPU µs/call | minimal script | library vs minimal | script exec µs/call: library | minimal |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    for &layout in &layouts {
        for &algorithm in &report.options.algorithms {
            let c = report.ceiling_at;
            let med = |who, f: fn(&Measured) -> f64| report.median_of(layout, algorithm, c, who, f);
            let ratio = report.script_cpu_ratio(layout, algorithm);
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                report.machine.layouts[layout].0.name(),
                name(algorithm),
                num(med(Contender::Ceiling, |m| m.cpu_us_per_decision), 2),
                num(med(Contender::CeilingMinimal, |m| m.cpu_us_per_decision), 2),
                judged(
                    times(ratio),
                    ratio.is_finite().then_some(ratio <= MAX_SCRIPT_CPU_RATIO)
                ),
                num(med(Contender::Ceiling, |m| m.script_us_per_call), 2),
                num(med(Contender::CeilingMinimal, |m| m.script_us_per_call), 2),
            );
        }
    }
    let _ = writeln!(out);
}

/// The annotated fn against the library script's ceiling, in every layout.
fn ceiling(report: &Report, out: &mut String) {
    if report.ceiling_note.is_some() {
        return;
    }
    let c = report.ceiling_at;
    for layout in report.spread_layouts() {
        for &algorithm in &report.options.algorithms {
            let ratio = ceiling_ratio(report, layout, algorithm);
            let _ = writeln!(
                out,
                "| annotated at {c} tasks ≥ {MIN_CEILING_RATIO}× the library script's redis-benchmark -P 16 ceiling | {} | {} | {} | {} |",
                report.machine.layouts[layout].0.name(),
                name(algorithm),
                times(ratio),
                verdict(ratio.is_finite().then_some(ratio >= MIN_CEILING_RATIO)),
            );
        }
    }
}

fn ceiling_ratio(report: &Report, layout: usize, algorithm: Algorithm) -> f64 {
    report.ratio(
        layout,
        algorithm,
        report.ceiling_at,
        Contender::Annotated,
        Contender::Ceiling,
        |m| m.rps,
    )
}
