//! Where Redis and the clients run: `--pinned` gives Redis one CPU to itself and puts every client (this
//! process, Tokio workers included, and `redis-benchmark`) on the others; `--no-pinned` lets them share all.
//!
//! Why: the ceiling target compares our client with Redis's own ceiling (`redis-benchmark -P 16`). When Redis
//! and the clients share two cores, the client that costs the most CPU per decision leaves Redis the least, so
//! the ratio measures the client stack's CPU (Tokio + redis-rs cost ~5 µs per decision; redis-benchmark's C
//! client almost nothing), not how close the library gets to what Redis can do. With a core of its own, Redis
//! is the bottleneck of every contender, as it would be with clients on other machines.
//!
//! Pinned is the default when this process may run on at least 2 CPUs and `taskset` (util-linux) is installed;
//! otherwise the run falls back to unpinned and the report says why.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The CPU layout of a run.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The CPUs this process was allowed to run on when it started (its affinity mask), ascending.
    pub(crate) cpus: Vec<usize>,
    /// `Some` when Redis and the clients are pinned apart.
    pinned: Option<Pinned>,
    /// Why the run is pinned or not, for the report: a sentence.
    why: String,
}

#[derive(Debug, Clone)]
struct Pinned {
    taskset: PathBuf,
    /// Redis's CPU: the first allowed one (CPU 0 on a machine without a cpuset).
    redis: usize,
    /// Every other allowed CPU: this process (all its threads) and `redis-benchmark`.
    clients: Vec<usize>,
}

impl Layout {
    /// Decides the layout (`requested`: `Some(true)` for `--pinned`, `Some(false)` for `--no-pinned`, `None`
    /// for the default) and, when pinned, pins this process to the client CPUs.
    ///
    /// Call it first thing in `main`, before any thread exists (see `pin_self`). An explicit `--pinned` that
    /// cannot be honoured is an error; the default falls back to unpinned, with a note on stderr and in the
    /// report.
    pub(crate) fn choose(requested: Option<bool>) -> Result<Layout, String> {
        let cpus = allowed_cpus();
        let unpinned = |why: String| Layout {
            cpus: cpus.clone(),
            pinned: None,
            why,
        };
        if requested == Some(false) {
            return Ok(unpinned("Not pinned: `--no-pinned`.".to_owned()));
        }
        let explicit = requested == Some(true);
        let taskset = test_support::find("taskset");
        let obstacle = match (&taskset, cpus.len()) {
            (_, n) if n < 2 => Some(format!(
                "this process may run on {n} CPU only, and pinning needs 2"
            )),
            (None, _) => Some("`taskset` (util-linux) is not installed".to_owned()),
            (Some(_), _) => None,
        };
        let fall_back = |obstacle: String| {
            if explicit {
                Err(format!(
                    "--pinned: {obstacle}; run with --no-pinned to measure unpinned"
                ))
            } else {
                eprintln!("load: not pinning Redis and the clients apart: {obstacle}");
                Ok(unpinned(format!(
                    "Not pinned, although pinned is the default: {obstacle}."
                )))
            }
        };
        if let Some(obstacle) = obstacle {
            return fall_back(obstacle);
        }
        let pinned = Pinned {
            taskset: taskset.expect("checked above"),
            redis: cpus[0],
            clients: cpus[1..].to_vec(),
        };
        if let Err(error) = pin_self(&pinned.taskset, &pinned.clients) {
            return fall_back(error);
        }
        Ok(Layout {
            why: if explicit {
                "Pinned: `--pinned`.".to_owned()
            } else {
                format!(
                    "Pinned: the default with {} CPUs and `taskset` installed (`--no-pinned` shares them).",
                    cpus.len()
                )
            },
            cpus,
            pinned: Some(pinned),
        })
    }

    pub(crate) fn is_pinned(&self) -> bool {
        self.pinned.is_some()
    }

    /// The CPUs this process's threads run on: the default number of Tokio workers.
    pub(crate) fn client_cpus(&self) -> usize {
        self.pinned
            .as_ref()
            .map_or(self.cpus.len(), |p| p.clients.len())
            .max(1)
    }

    /// Pins the running redis-server `pid` (every thread of it) to Redis's CPU, when pinned.
    pub(crate) fn pin_redis(&self, pid: u32) -> Result<(), String> {
        match &self.pinned {
            Some(p) => pin(&p.taskset, pid, &[p.redis]),
            None => Ok(()),
        }
    }

    /// A command that runs `program` on the client CPUs when pinned (under `taskset -c`), or as is.
    pub(crate) fn client_command(&self, program: &Path) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(self.launcher(program));
        command.args(self.launcher_args(program, |p| p.clients.clone()));
        command
    }

    fn launcher(&self, program: &Path) -> PathBuf {
        self.pinned
            .as_ref()
            .map_or_else(|| program.to_owned(), |p| p.taskset.clone())
    }

    fn launcher_args(&self, program: &Path, cpus: impl Fn(&Pinned) -> Vec<usize>) -> Vec<String> {
        self.pinned.as_ref().map_or_else(Vec::new, |p| {
            vec![
                "-c".to_owned(),
                cpu_list(&cpus(p)),
                program.to_string_lossy().into_owned(),
            ]
        })
    }

    /// Where everything ran, e.g. "Redis pinned to CPU 0; clients (load binary, redis-benchmark) on CPU 1".
    pub(crate) fn placement(&self) -> String {
        match &self.pinned {
            Some(p) => format!(
                "Redis pinned to {}; clients (load binary, redis-benchmark) on {}",
                cpus_named(&[p.redis]),
                cpus_named(&p.clients),
            ),
            None => format!(
                "Redis and the clients (load binary, redis-benchmark) share {}, not pinned",
                cpus_named(&self.cpus),
            ),
        }
    }

    /// Where everything ran, and why: for the report's header.
    pub(crate) fn describe(&self) -> String {
        format!("{}. {}", self.placement(), self.why)
    }
}

/// Pins this process to `cpus` with `taskset -a -p -c <cpus> <pid>`, then checks that the kernel took it.
///
/// Of the ways to pin the load binary, this is the simplest robust one: it runs before the Tokio runtime, the
/// watchdog and the Ctrl-C handler exist, while the process has one thread, and every thread started later
/// inherits the mask (`-a` would also cover threads already running). `libc::sched_setaffinity` would do the
/// same in-process (libc is in the lock file), but needs `unsafe`, a `cpu_set_t` and a new direct dependency,
/// for one call per run; re-executing under `taskset` would put a second process image, its arguments and
/// its signals in the way. `taskset` is needed anyway for redis-server and redis-benchmark.
fn pin_self(taskset: &Path, cpus: &[usize]) -> Result<(), String> {
    pin(taskset, std::process::id(), cpus)?;
    let now = allowed_cpus();
    if now != cpus {
        return Err(format!(
            "after `taskset -a -p -c {}` this process may run on {}",
            cpu_list(cpus),
            cpu_list(&now)
        ));
    }
    Ok(())
}

/// `taskset -a -p -c <cpus> <pid>`: every thread of process `pid` on `cpus`.
fn pin(taskset: &Path, pid: u32, cpus: &[usize]) -> Result<(), String> {
    let list = cpu_list(cpus);
    let output = Command::new(taskset)
        .args(["-a", "-p", "-c", &list, &pid.to_string()])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run taskset: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`taskset -a -p -c {list}` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    Ok(())
}

/// The CPUs this process may run on: `Cpus_allowed_list` of `/proc/self/status` (its affinity mask, within
/// its cpuset), or `0..available_parallelism` if that cannot be read.
fn allowed_cpus() -> Vec<usize> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
                .and_then(|list| parse_cpu_list(list.trim()))
        })
        .filter(|cpus| !cpus.is_empty())
        .unwrap_or_else(|| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        })
}

/// `0-2,5` → `[0, 1, 2, 5]`.
fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = BTreeSet::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (usize, usize) = (first.parse().ok()?, last.parse().ok()?);
                cpus.extend(first..=last);
            }
            None => {
                cpus.insert(part.parse().ok()?);
            }
        }
    }
    Some(cpus.into_iter().collect())
}

/// `[0, 1, 2, 5]` → `0-2,5`, as `taskset -c` takes it.
fn cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

/// `CPU 1`, `CPUs 1-3`.
fn cpus_named(cpus: &[usize]) -> String {
    if cpus.len() == 1 {
        format!("CPU {}", cpus[0])
    } else {
        format!("CPUs {}", cpu_list(cpus))
    }
}
