//! Outbound quotas under load: how late a call leaves after its slot starts, and how close the fleet keeps
//! to the upstream's limit, in one run (see BENCHMARKS.md, "Outbound").
//!
//! It starts its own `redis-server` on a free loopback port, then `--nodes` limiters (each its own
//! connection, deny cache and line: a node) with `--callers` tasks each call [`Limiter::turn`](limiter_runtime::Limiter::turn) in a loop for
//! `--seconds` under a leaky bucket of `--rate` calls a second with a deadline long enough for the whole
//! line, so every slot is taken. A call "leaves" when its turn returns: its lateness is when it left (this
//! machine's wall clock) less its slot (its decision's time plus its delay, on Redis's clock: the same
//! machine's). The closest two calls left, against the spacing the limit implies (`window / max`). The
//! baseline, in the same run: how late a Tokio timer alone fires, for instants one slot apart.
//!
//! ```sh
//! cargo run --release -p benches --bin outbound -- --seconds 20
//! ```

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use limiter_runtime::{Algorithm, Rule};
use test_support::RedisServer;

fn main() {
    let mut args = std::env::args().skip(1);
    let (mut nodes, mut callers, mut seconds, mut rate) = (3usize, 32usize, 10u64, 50u64);
    while let Some(flag) = args.next() {
        let mut value = || -> u64 {
            let value = args
                .next()
                .unwrap_or_else(|| panic!("{flag} needs a value"));
            value
                .parse()
                .unwrap_or_else(|_| panic!("{flag}: {value} is not a number"))
        };
        match flag.as_str() {
            "--nodes" => nodes = value() as usize,
            "--callers" => callers = value() as usize,
            "--seconds" => seconds = value(),
            "--rate" => rate = value(),
            other => {
                panic!("outbound: unknown option {other} (--nodes, --callers, --seconds, --rate)")
            }
        }
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    runtime.block_on(run(nodes, callers, Duration::from_secs(seconds), rate));
}

async fn run(nodes: usize, callers: usize, run: Duration, rate: u64) {
    let server = RedisServer::start();
    let demand = (nodes * callers) as u64;
    let rule = Rule::new()
        .prefix("bench:outbound:")
        .algorithm(Algorithm::LeakyBucket)
        .max(rate)
        .window(Duration::from_secs(1))
        .max_wait(Duration::from_millis(1_000 * (demand + rate) / rate));
    let mut limiters = Vec::new();
    for _ in 0..nodes {
        let limiter = server.limiter();
        limiter
            .ready()
            .await
            .expect("the benchmark's redis-server is ready");
        limiters.push(limiter);
    }
    let started = Instant::now();
    let left = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..nodes * callers {
        let (limiter, rule, left) = (limiters[i % nodes].clone(), rule.clone(), Arc::clone(&left));
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2 * i as u64)).await;
            let end = (started + run).into();
            while let Ok(turn) = tokio::time::timeout_at(end, limiter.turn(&rule, "upstream")).await
            {
                let turn = turn.expect("the deadline holds the whole line");
                let wall = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("after 1970");
                let decision = turn.decision();
                let late =
                    wall.as_secs_f64() - (decision.decided_at + decision.delay).as_secs_f64();
                left.lock().unwrap().push((Instant::now(), i % nodes, late));
                drop(turn);
            }
        }));
    }
    for task in tasks {
        task.await.expect("a caller ran");
    }
    let mut left = std::mem::take(&mut *left.lock().unwrap());
    left.sort_by_key(|(at, _, _)| *at);
    // The line is full from the first second on.
    let steady: Vec<_> = left
        .iter()
        .filter(|(at, _, _)| *at >= started + Duration::from_secs(1))
        .collect();
    if steady.is_empty() {
        eprintln!("outbound: no call went after the first second");
        std::process::exit(1);
    }
    let spacing = 1.0 / rate as f64;
    let mut lateness: Vec<f64> = steady.iter().map(|(_, _, late)| *late).collect();
    lateness.sort_by(f64::total_cmp);
    let closest = steady
        .windows(2)
        .map(|pair| (pair[1].0 - pair[0].0).as_secs_f64())
        .fold(f64::INFINITY, f64::min);
    // The baseline: a Tokio timer alone, set for instants `spacing` apart.
    let mut timer = Vec::new();
    let base = Instant::now() + Duration::from_millis(10);
    for i in 0..lateness.len().min(500) {
        let at = base + Duration::from_secs_f64(i as f64 * spacing);
        tokio::time::sleep_until(at.into()).await;
        timer.push(Instant::now().duration_since(at).as_secs_f64());
    }
    timer.sort_by(f64::total_cmp);
    // How close to the limit: the most calls in any second, and the calls sent against the allowance.
    let mut most = 0;
    for (k, (at, _, _)) in steady.iter().enumerate() {
        let within = steady[k..]
            .iter()
            .take_while(|(later, _, _)| *later < *at + Duration::from_secs(1))
            .count();
        most = most.max(within);
    }
    let seconds = (run - Duration::from_secs(1)).as_secs_f64();
    let mut per_node = vec![0usize; nodes];
    for (_, node, _) in &steady {
        per_node[*node] += 1;
    }
    let ms = |s: f64| s * 1_000.0;
    let quantile = |v: &[f64], q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    println!(
        "outbound: {nodes} nodes × {callers} callers, {rate}/s for {:?} (steady after 1 s: {} calls)",
        run,
        steady.len()
    );
    println!(
        "  slot start → call leaves: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(quantile(&lateness, 0.5)),
        ms(quantile(&lateness, 0.99)),
        ms(*lateness.last().unwrap_or(&0.0))
    );
    println!(
        "  baseline, a Tokio timer alone: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(quantile(&timer, 0.5)),
        ms(quantile(&timer, 0.99)),
        ms(*timer.last().unwrap_or(&0.0))
    );
    println!(
        "  closest two calls: {:.2} ms apart, the spacing {:.2} ms",
        ms(closest),
        ms(spacing)
    );
    println!(
        "  sent {:.1}% of the allowance; most in any second {most} of {rate}; per node {per_node:?}",
        100.0 * steady.len() as f64 / (rate as f64 * seconds)
    );
}
