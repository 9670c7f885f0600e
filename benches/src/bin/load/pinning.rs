//! Where Redis and the clients run: pinned, Redis has one CPU to itself and every client (this process, Tokio
//! workers included, its worker processes and `redis-benchmark`) runs on the others; unpinned, they share all.
//!
//! Why pinned: the ceiling target compares our client with Redis's own ceiling (`redis-benchmark -P 16`). When
//! Redis and the clients share two cores, the client that costs the most CPU per decision leaves Redis the
//! least, so the ratio measures the client stack's CPU (Tokio + redis-rs cost ~5 µs per decision;
//! redis-benchmark's C client almost nothing), not how close the library gets to what Redis can do. With a core
//! of its own, Redis is the bottleneck of every contender, as it would be with clients on other machines.
//! Unpinned is a user's app server that runs its own Redis.
//!
//! A run measures one layout or both (`--layouts`), one after the other, in one process: each layout is
//! entered with `taskset -a -p` on this process (every thread) and on redis-server. Pinned is the default when
//! this process may run on at least 2 CPUs and `taskset` (util-linux) is installed; otherwise the run falls back
//! to unpinned and the report says why.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The layouts a run asks for (`--layouts`, `--pinned`, `--no-pinned`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Requested {
    /// Pinned if the machine allows it, else unpinned.
    Default,
    Pinned,
    Unpinned,
    /// Pinned (if the machine allows it), then unpinned.
    Both,
}

impl Requested {
    pub(crate) fn parse(text: &str) -> Result<Requested, String> {
        match text {
            "default" => Ok(Requested::Default),
            "pinned" => Ok(Requested::Pinned),
            "unpinned" => Ok(Requested::Unpinned),
            "both" => Ok(Requested::Both),
            other => Err(format!(
                "{other:?} is not a layout: expected pinned, unpinned, both or default"
            )),
        }
    }
}

/// One CPU layout of a run.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The CPUs this process was allowed to run on when it started (its affinity mask), ascending.
    pub(crate) cpus: Vec<usize>,
    /// How to pin and unpin: `None` when `taskset` is not installed (then nothing is ever pinned).
    taskset: Option<PathBuf>,
    /// `Some` when Redis and the clients are pinned apart.
    pinned: Option<Pinned>,
    /// Why the run is pinned or not, for the report: a sentence.
    why: String,
}

#[derive(Debug, Clone)]
struct Pinned {
    /// Redis's CPU: the first allowed one (CPU 0 on a machine without a cpuset).
    redis: usize,
    /// Every other allowed CPU: this process (all its threads), its workers and `redis-benchmark`.
    clients: Vec<usize>,
}

impl Layout {
    /// The layouts `requested`, in the order they run. An explicit `--pinned` that cannot be honoured is an
    /// error; the default and `both` fall back to unpinned, with a note on stderr and in the report.
    pub(crate) fn plan(requested: Requested) -> Result<Vec<Layout>, String> {
        let cpus = allowed_cpus();
        let taskset = test_support::find("taskset");
        let unpinned = |why: String| Layout {
            cpus: cpus.clone(),
            taskset: taskset.clone(),
            pinned: None,
            why,
        };
        let obstacle = match (&taskset, cpus.len()) {
            (_, n) if n < 2 => Some(format!(
                "this process may run on {n} CPU only, and pinning needs 2"
            )),
            (None, _) => Some("`taskset` (util-linux) is not installed".to_owned()),
            (Some(_), _) => None,
        };
        let pinned = |why: String| Layout {
            cpus: cpus.clone(),
            taskset: taskset.clone(),
            pinned: Some(Pinned {
                redis: cpus[0],
                clients: cpus[1..].to_vec(),
            }),
            why,
        };
        let pinned_or_not = |why: &str| match &obstacle {
            None => pinned(why.to_owned()),
            Some(obstacle) => {
                eprintln!("load: not pinning Redis and the clients apart: {obstacle}");
                unpinned(format!(
                    "Not pinned, although pinned was asked for: {obstacle}."
                ))
            }
        };
        Ok(match requested {
            Requested::Unpinned => vec![unpinned("Not pinned: `--layouts unpinned`.".to_owned())],
            Requested::Pinned => match &obstacle {
                Some(obstacle) => {
                    return Err(format!(
                        "--pinned: {obstacle}; run with --no-pinned to measure unpinned"
                    ))
                }
                None => vec![pinned("Pinned: `--layouts pinned`.".to_owned())],
            },
            Requested::Default => vec![pinned_or_not(&format!(
                "Pinned: the default with {} CPUs and `taskset` installed (`--layouts both` adds unpinned).",
                cpus.len()
            ))],
            Requested::Both => {
                let first = pinned_or_not("Pinned: `--layouts both`, pinned first.");
                if first.is_pinned() {
                    vec![
                        first,
                        unpinned("Not pinned: `--layouts both`, unpinned second.".to_owned()),
                    ]
                } else {
                    vec![first]
                }
            }
        })
    }

    /// Puts this process (every thread) and redis-server `redis` (every thread) where this layout says: the
    /// client CPUs and Redis's CPU, or all CPUs. Call it while no measurement runs; threads started later
    /// inherit the mask.
    pub(crate) fn enter(&self, redis: Option<u32>) -> Result<(), String> {
        let Some(taskset) = &self.taskset else {
            // Without taskset nothing was ever pinned: everything already shares every CPU.
            return Ok(());
        };
        let (clients, server) = match &self.pinned {
            Some(p) => (p.clients.clone(), vec![p.redis]),
            None => (self.cpus.clone(), self.cpus.clone()),
        };
        pin_self(taskset, &clients)?;
        match redis {
            Some(pid) => pin(taskset, pid, &server),
            None => Ok(()),
        }
    }

    /// "pinned" or "unpinned", for the report's tables.
    pub(crate) fn name(&self) -> &'static str {
        if self.is_pinned() {
            "pinned"
        } else {
            "unpinned"
        }
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

    /// A command that runs `program` on the client CPUs when pinned (under `taskset -c`), or as is.
    pub(crate) fn client_command(&self, program: &Path) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(self.launcher(program));
        command.args(self.launcher_args(program, |p| p.clients.clone()));
        command
    }

    fn launcher(&self, program: &Path) -> PathBuf {
        match (&self.pinned, &self.taskset) {
            (Some(_), Some(taskset)) => taskset.clone(),
            _ => program.to_owned(),
        }
    }

    fn launcher_args(&self, program: &Path, cpus: impl Fn(&Pinned) -> Vec<usize>) -> Vec<String> {
        match (&self.pinned, &self.taskset) {
            (Some(p), Some(_)) => vec![
                "-c".to_owned(),
                cpu_list(&cpus(p)),
                program.to_string_lossy().into_owned(),
            ],
            _ => Vec::new(),
        }
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
/// Of the ways to pin the load binary, this is the simplest robust one: `-a` covers the threads already
/// running (the watchdog, the Ctrl-C thread), every thread started later (a layout's Tokio runtime) inherits
/// the mask, and so do its worker processes. `libc::sched_setaffinity` would do the same in-process (libc is in
/// the lock file), but needs `unsafe`, a `cpu_set_t` and a new direct dependency, for one call per layout;
/// re-executing under `taskset` would put a second process image, its arguments and its signals in the way.
/// `taskset` is needed anyway for redis-server and redis-benchmark.
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
