//! Overrides at scale: per-key overrides set one by one on one runtime (the operator's), received by another
//! in a process of its own (a node), on a throw-away `redis-server`.
//!
//! For each thousand changes it reports the time a change takes the runtime making it (`set_override`, from
//! the call to its return: the round trip and the local change), and the receiving node's CPU time until it
//! holds them all (every thread of its process, from `/proc/<pid>/task/*/schedstat`). A change costs the
//! same whatever the number of overrides already in force when the first thousand's figures and the last's
//! match. At the end: the memory one override takes, in the receiving process and in Redis.
//!
//! `cargo run --profile bench -p benches --bin overrides -- [--count 100000] [--out FILE]`

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, Override, Rule};
use test_support::RedisServer;

const PREFIX: &str = "plan:";
const BATCH: u64 = 1_000;
/// The rest before each thousand changes.
const PAUSE: Duration = Duration::from_millis(250);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, url] = args.as_slice() {
        if flag == "--receive" {
            return receive(url);
        }
    }
    let mut count = 100_000;
    let mut out = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match (arg.as_str(), rest.next()) {
            ("--count", Some(n)) => count = n.parse().expect("--count takes a number"),
            ("--out", Some(path)) => out = Some(path.clone()),
            _ => {
                eprintln!("usage: overrides [--count N] [--out FILE]");
                std::process::exit(2);
            }
        }
    }
    let count = count.max(BATCH) / BATCH * BATCH;
    let report = run(count);
    print!("{report}");
    if let Some(path) = out {
        std::fs::write(&path, &report).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    }
}

/// One thousand changes: the time each took its maker, and the receiving node's CPU.
struct Batch {
    mean: Duration,
    p99: Duration,
    node_cpu: Duration,
}

fn run(count: u64) -> String {
    let server = RedisServer::start();
    let mut node = Node::start(&server.url());
    // Time for the node to subscribe.
    std::thread::sleep(Duration::from_millis(300));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let operator = runtime.block_on(async {
        let limiter = Limiter::builder()
            .redis(server.url())
            .build()
            .expect("a valid URL");
        limiter.check(&Rule::new().prefix(PREFIX), "warm").await;
        limiter
    });
    let (redis_before, node_before) = (used_memory(&server), node.rss());

    let mut batches = Vec::new();
    for first in (0..count).step_by(BATCH as usize) {
        // Each thousand starts from rest, as the first does: on shared cores, changes sent back to back for
        // more than about a tenth of a second each take about twice as long (~95 µs), at any number of
        // overrides; the pause keeps that out of the comparison between thousands.
        std::thread::sleep(PAUSE);
        let cpu = node.cpu();
        let mut took = Vec::with_capacity(BATCH as usize);
        runtime.block_on(async {
            for customer in first..first + BATCH {
                let started = Instant::now();
                operator
                    .set_override(Override::key(PREFIX, customer).max(customer + 1))
                    .await
                    .expect("Redis takes the change");
                took.push(started.elapsed());
            }
        });
        node.wait_for(first + BATCH);
        took.sort();
        batches.push(Batch {
            mean: took.iter().sum::<Duration>() / BATCH as u32,
            p99: took[took.len() * 99 / 100],
            node_cpu: node.cpu() - cpu,
        });
    }
    let node_bytes = node.rss().saturating_sub(node_before) as f64 / count as f64;
    let redis_bytes = used_memory(&server).saturating_sub(redis_before) as f64 / count as f64;
    report(count, &batches, node_bytes, redis_bytes)
}

fn report(count: u64, batches: &[Batch], node_bytes: f64, redis_bytes: f64) -> String {
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    let millis = |d: Duration| d.as_secs_f64() * 1e3;
    let mut out = format!(
        "## Overrides at scale: {count} per-key overrides, set one by one\n\n\
         | overrides in force before | change, mean µs | change, p99 µs | receiving node CPU per 1,000 changes, ms |\n\
         |---:|---:|---:|---:|\n"
    );
    let shown = batches.len().div_ceil(10).max(1);
    for (i, batch) in batches.iter().enumerate() {
        if i % shown == 0 || i + 1 == batches.len() {
            out += &format!(
                "| {} | {:.0} | {:.0} | {:.1} |\n",
                i as u64 * BATCH,
                micros(batch.mean),
                micros(batch.p99),
                millis(batch.node_cpu)
            );
        }
    }
    let (first, last) = (&batches[0], &batches[batches.len() - 1]);
    out += &format!(
        "\nLast thousand against the first: change time {:.2}×, receiving node CPU {:.2}×.\n\
         Memory per override: {node_bytes:.0} bytes in the receiving process (RSS), {redis_bytes:.0} bytes in \
         Redis (`used_memory`).\n",
        micros(last.mean) / micros(first.mean),
        millis(last.node_cpu) / millis(first.node_cpu),
    );
    out
}

/// Redis's `used_memory`, in bytes.
fn used_memory(server: &RedisServer) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query(&mut server.connection())
        .expect("INFO memory");
    info.lines()
        .find_map(|line| line.strip_prefix("used_memory:"))
        .and_then(|bytes| bytes.trim().parse().ok())
        .expect("used_memory in INFO")
}

/// The receiving node: this binary again, with `--receive`.
struct Node {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Node {
    fn start(url: &str) -> Node {
        let mut child = Command::new(std::env::current_exe().expect("this binary's path"))
            .args(["--receive", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the receiving node starts");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut node = Node {
            child,
            stdin,
            stdout,
        };
        node.wait_for(0);
        node
    }

    /// Waits until the node holds `count` overrides.
    fn wait_for(&mut self, count: u64) {
        writeln!(self.stdin, "{count}").expect("the node reads");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("the node answers");
        assert_eq!(line.trim(), "ok", "the node's answer");
    }

    /// The CPU time of every thread of the node so far.
    fn cpu(&self) -> Duration {
        let tasks = format!("/proc/{}/task", self.child.id());
        let nanos: u64 = std::fs::read_dir(&tasks)
            .expect("/proc/<pid>/task")
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("schedstat")).ok())
            .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        Duration::from_nanos(nanos)
    }

    /// The node's resident memory, in bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc/<pid>/status");
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|kb| kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmRSS")
            * 1024
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The receiving node: a limiter on `url` that follows the overrides. For each count read from stdin, it
/// answers `ok` once it holds that many.
fn receive(url: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let limiter = runtime.block_on(async {
        let limiter = Limiter::builder().redis(url).build().expect("a valid URL");
        // The first decision starts the sync.
        limiter.check(&Rule::new().prefix(PREFIX), "warm").await;
        limiter
    });
    let mut stdout = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let want: u64 = line.expect("stdin").trim().parse().expect("a count");
        let started = Instant::now();
        while limiter.stats().overrides < want {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the node holds {} overrides of {want} after 30 s",
                limiter.stats().overrides
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        writeln!(stdout, "ok")
            .and_then(|()| stdout.flush())
            .expect("stdout");
    }
}
