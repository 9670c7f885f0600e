//! Counting instructions with valgrind's callgrind: a count, not a timing, so it holds still on a noisy
//! machine (the same total twice for the same binary, inputs and environment).
//!
//! Two ways in: a `redis-server` run under callgrind with instrumentation off, switched on around a workload
//! with `callgrind_control` (Redis's instructions per call); and this binary run again under callgrind,
//! counting only inside [`limiter_bench_measured`] (a client's instructions per decision).

use std::path::{Path, PathBuf};
use std::process::Command;

/// valgrind and callgrind_control, where they are: `None` when valgrind is not installed.
pub(crate) fn tools() -> Option<(PathBuf, PathBuf)> {
    Some((
        test_support::find("valgrind")?,
        test_support::find("callgrind_control")?,
    ))
}

/// Runs `work` where the client's count is taken: callgrind counts only while this function runs
/// (`--toggle-collect=limiter_bench_measured`). Never inlined, and named as it is, so that callgrind finds it.
#[no_mangle]
#[inline(never)]
pub(super) fn limiter_bench_measured(work: &mut dyn FnMut()) {
    work();
}

/// The launcher of a client counted by callgrind into `out`.
pub(crate) fn client_launcher(valgrind: &Path, out: &Path) -> Command {
    let mut command = Command::new(valgrind);
    command
        .arg("--tool=callgrind")
        .arg("--toggle-collect=limiter_bench_measured")
        .arg(format!("--callgrind-out-file={}", out.display()));
    command
}

/// The arguments that run `redis-server` under callgrind, instrumentation off until switched on, its dumps
/// going to `out` (`out.1`, `out.2`, ... for each dump asked for).
pub(crate) fn server_launcher(valgrind: &Path, out: &Path) -> Vec<String> {
    vec![
        valgrind.display().to_string(),
        "--tool=callgrind".to_owned(),
        "--instr-atstart=no".to_owned(),
        format!("--callgrind-out-file={}", out.display()),
    ]
}

/// A `redis-server` under callgrind: its process, and where its dumps go.
pub(crate) struct Counted {
    pub(crate) control: PathBuf,
    pub(crate) pid: u32,
    pub(crate) out: PathBuf,
    dumps: usize,
}

impl Counted {
    pub(crate) fn new(control: PathBuf, pid: u32, out: PathBuf) -> Counted {
        Counted {
            control,
            pid,
            out,
            dumps: 0,
        }
    }

    fn control(&self, args: &[&str]) -> Result<(), String> {
        let output = Command::new(&self.control)
            .args(args)
            .arg(self.pid.to_string())
            .output()
            .map_err(|e| format!("cannot run callgrind_control: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "callgrind_control {args:?} failed: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(())
    }

    /// The server's instructions while `work` runs (awaited here).
    pub(crate) async fn count<F: std::future::Future<Output = ()>>(
        &mut self,
        work: F,
    ) -> Result<u64, String> {
        // Switched on, then zeroed (switching on may count a little of its own); dumped before switching off,
        // which would drop what was counted.
        self.control(&["--instr=on"])?;
        self.control(&["--zero"])?;
        work.await;
        self.control(&["--dump"])?;
        self.control(&["--instr=off"])?;
        self.dumps += 1;
        let dump = PathBuf::from(format!("{}.{}", self.out.display(), self.dumps));
        total(&dump)
    }
}

/// The instructions a callgrind output file counts (its `totals:` line, else `summary:`).
pub(crate) fn total(file: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("cannot read callgrind's output {}: {e}", file.display()))?;
    text.lines()
        .find_map(|line| {
            line.strip_prefix("totals:")
                .or_else(|| line.strip_prefix("summary:"))
        })
        .and_then(|count| count.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| format!("no total in {}", file.display()))
}
