//! The hot key's table, its targets and its problems.

use std::fmt::Write as _;

use limiter_runtime::Algorithm;

use super::{HotRun, CONTENDERS};
use crate::cli::name;
use crate::contender::{Contender, HOT_MAX, HOT_WINDOW};
use crate::report::{median, num, percent, times, verdict, Report};

/// The tasks per process at which the targets are judged.
const TARGET_TASKS: usize = 64;
/// Coalescing against the baseline: at least this many times its decisions/s, at most this share of its Redis
/// CPU per decision, and a p99 no worse.
const MIN_COALESCING_SPEEDUP: f64 = 8.0;
const MAX_COALESCING_CPU: f64 = 1.0 / 8.0;
/// A lease: at least this many decisions/s per node, with redis-server under this share of a core.
const MIN_LEASE_RPS_PER_NODE: f64 = 1_000_000.0;
const MAX_LEASE_REDIS_CORE: f64 = 0.10;

/// The hot key's cells, as measured: algorithm, processes, tasks per process.
fn cells(report: &Report) -> Vec<(Algorithm, usize, usize)> {
    let mut cells: Vec<_> = report
        .hot
        .iter()
        .map(|r| (r.algorithm, r.processes, r.tasks))
        .collect();
    cells.dedup();
    cells
}

fn runs(
    report: &Report,
    (algorithm, processes, tasks): (Algorithm, usize, usize),
    contender: Contender,
) -> Vec<&HotRun> {
    report
        .hot
        .iter()
        .filter(|r| {
            r.algorithm == algorithm
                && r.processes == processes
                && r.tasks == tasks
                && r.contender == contender
                && r.error.is_none()
        })
        .collect()
}

/// The median over rounds of `field(contender) / field(baseline)`, both measured in the same round.
fn ratio(
    report: &Report,
    cell: (Algorithm, usize, usize),
    contender: Contender,
    field: fn(&HotRun) -> f64,
) -> f64 {
    let base = runs(report, cell, Contender::Baseline);
    median(
        runs(report, cell, contender)
            .into_iter()
            .filter_map(|r| {
                let b = base.iter().find(|b| b.round == r.round)?;
                Some(field(r) / field(b))
            })
            .collect(),
    )
}

fn med(
    report: &Report,
    cell: (Algorithm, usize, usize),
    contender: Contender,
    field: fn(&HotRun) -> f64,
) -> f64 {
    median(
        runs(report, cell, contender)
            .into_iter()
            .map(field)
            .collect(),
    )
}

/// The hot key's targets, at `TARGET_TASKS` tasks per process.
pub(crate) fn targets(report: &Report, out: &mut String) {
    let cells: Vec<_> = cells(report)
        .into_iter()
        .filter(|&(_, _, tasks)| tasks == TARGET_TASKS)
        .collect();
    if report.hot.is_empty() {
        return;
    }
    let layout = report.machine.first_layout();
    let _ = writeln!(
        out,
        "### Hot key, {} ({TARGET_TASKS} tasks per process)\n",
        layout.name()
    );
    if cells.is_empty() {
        let _ = writeln!(
            out,
            "Not measured: the hot key ran without {TARGET_TASKS} tasks per process.\n"
        );
        return;
    }
    let _ = writeln!(
        out,
        "| target | algorithm | processes | measured | verdict |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for &cell in &cells {
        let (algorithm, processes, _) = cell;
        for contender in [Contender::Plain, Contender::Annotated] {
            let speedup = ratio(report, cell, contender, HotRun::rps);
            let cpu = ratio(report, cell, contender, HotRun::cpu_us_per_decision);
            let p99 = ratio(report, cell, contender, |r| r.total.p99_us);
            let measured = [speedup, cpu, p99].iter().all(|r| r.is_finite());
            let met = speedup >= MIN_COALESCING_SPEEDUP && cpu <= MAX_COALESCING_CPU && p99 <= 1.0;
            let _ = writeln!(
                out,
                "| {} (coalescing): ≥ {MIN_COALESCING_SPEEDUP}× the baseline's decisions/s, ≤ 1/{} of its Redis CPU per decision, p99 no worse | {} | {processes} | {} decisions/s, {} Redis CPU µs/decision, {} p99 | {} |",
                contender.label(),
                1.0 / MAX_COALESCING_CPU,
                name(algorithm),
                times(speedup),
                times(cpu),
                times(p99),
                verdict(measured.then_some(met)),
            );
        }
        let per_node = med(report, cell, Contender::PlainLease, HotRun::rps) / processes as f64;
        let core = med(
            report,
            cell,
            Contender::PlainLease,
            HotRun::redis_core_share,
        );
        // A node's rate is its CPU's: judged only where each node has a client CPU of its own.
        let clients = layout.client_cpus();
        let own_cpu = processes <= clients;
        let measured = per_node.is_finite() && core.is_finite();
        let met = core < MAX_LEASE_REDIS_CORE && (!own_cpu || per_node >= MIN_LEASE_RPS_PER_NODE);
        let _ = writeln!(
            out,
            "| {}: ≥ {} decisions/s per node, redis-server under {} of a core | {} | {processes} | {}/s per node, Redis at {} of a core{} | {} |",
            Contender::PlainLease.label(),
            num(MIN_LEASE_RPS_PER_NODE, 0),
            percent(MAX_LEASE_REDIS_CORE),
            name(algorithm),
            num(per_node, 0),
            percent(core),
            if own_cpu {
                String::new()
            } else {
                format!(" ({processes} nodes share {clients} client CPU(s): the rate per node is not judged)")
            },
            verdict(measured.then_some(met)),
        );
    }
    let _ = writeln!(out);
}

pub(crate) fn section(report: &Report, out: &mut String) {
    if report.hot.is_empty() {
        return;
    }
    let options = &report.options;
    let _ = writeln!(
        out,
        "## Hot key, {}: one key, limit {} per {:?} (every call admitted), {:.1} s per run\n",
        report.machine.first_layout().name(),
        num(HOT_MAX as f64, 0),
        HOT_WINDOW,
        options.hot_duration.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "Every task of every process calls for the same key. The extra processes are this binary again \
         (worker mode), on the client CPUs; each connects and warms up for {:.2} s, then all start together \
         and run for the same time. Decisions/s add up over the processes; p99 is the worst process's. Each \
         run starts from an empty Redis, and the limiters' heartbeat is pushed out of it, so every script call \
         is for the hot key: script calls/decision is what coalescing and leases save (1.000: one round trip \
         per decision), and script µs/call what one of those calls costs Redis to run (commandstats). Redis CPU is `used_cpu_sys + used_cpu_user` of the whole server, per decision and as a \
         share of one core over the run. {} round(s), contenders alternating.\n",
        options.warmup.as_secs_f64(),
        options.hot_rounds,
    );
    let _ = writeln!(
        out,
        "| algorithm | processes | tasks per process | contender | decisions/s | per node | vs baseline | p99 µs (worst process) | admitted | script calls/decision | script µs/call | Redis CPU µs/decision | Redis CPU, share of a core |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for cell in cells(report) {
        let (algorithm, processes, tasks) = cell;
        for contender in CONTENDERS {
            if runs(report, cell, contender).is_empty() {
                continue;
            }
            let m = |field: fn(&HotRun) -> f64| med(report, cell, contender, field);
            let _ = writeln!(
                out,
                "| {} | {processes} | {tasks} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                name(algorithm),
                contender.label(),
                num(m(HotRun::rps), 0),
                num(m(HotRun::rps) / processes as f64, 0),
                if contender == Contender::Baseline {
                    String::new()
                } else {
                    times(ratio(report, cell, contender, HotRun::rps))
                },
                num(m(|r| r.total.p99_us), 0),
                percent(m(|r| {
                    r.total.admitted as f64 / r.total.decisions.max(1) as f64
                })),
                num(m(HotRun::calls_per_decision), 3),
                num(m(HotRun::script_us_per_call), 1),
                num(m(HotRun::cpu_us_per_decision), 2),
                percent(m(HotRun::redis_core_share)),
            );
        }
    }
    let _ = writeln!(out);
}

/// Hot-key runs that make the report unreliable: an error (a worker that failed), no decision, failed calls,
/// degraded decisions, `EVAL` fallbacks.
pub(crate) fn problems(runs: &[HotRun]) -> Vec<String> {
    let mut problems = Vec::new();
    for r in runs {
        let what = format!(
            "hot key, {}, {} process(es) × {} tasks, round {}, {}",
            name(r.algorithm),
            r.processes,
            r.tasks,
            r.round + 1,
            r.contender.label()
        );
        if let Some(error) = &r.error {
            problems.push(format!("{what}: {error}"));
            continue;
        }
        if r.total.decisions == 0 {
            problems.push(format!("{what}: no decision"));
        }
        if r.total.failed > 0 {
            problems.push(format!("{what}: {} calls failed", r.total.failed));
        }
        if r.total.degraded > 0 {
            problems.push(format!(
                "{what}: {} degraded decisions (made without Redis)",
                r.total.degraded
            ));
        }
        if r.redis.eval_calls > 0 {
            problems.push(format!(
                "{what}: {} EVAL calls (NOSCRIPT fallbacks) while measuring",
                r.redis.eval_calls
            ));
        }
    }
    problems
}
