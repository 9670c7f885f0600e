//! Redis's own ceiling for the library's script: `redis-benchmark` calling it with `EVALSHA`, 50 connections,
//! 16 commands pipelined per connection, over the same number of random keys and the same arguments. With `--pinned` it
//! runs on the client CPUs (under `taskset -c`), as the load binary does, never on Redis's.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::pinning::Layout;

/// `redis-benchmark` on `PATH`, or where Debian puts it (package `redis-tools`).
pub(crate) fn binary() -> Option<PathBuf> {
    test_support::find("redis-benchmark")
}

/// Runs `requests` calls of the script whose SHA-1 is `sha` (already loaded) and returns the requests per
/// second `redis-benchmark` reports.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run(
    layout: &Layout,
    binary: &Path,
    port: u16,
    sha: &str,
    prefix: &str,
    keys: u32,
    args: &[String],
    requests: u64,
) -> Result<f64, String> {
    let mut command = layout.client_command(binary);
    command
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-c", "50", "-P", "16", "--csv"])
        .args(["-n", &requests.to_string(), "-r", &keys.to_string()])
        .args(["EVALSHA", sha, "1", &format!("{prefix}__rand_int__")])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let output = tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .map_err(|_| "redis-benchmark did not finish within 120 s".to_owned())?
        .map_err(|e| format!("cannot run redis-benchmark: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "redis-benchmark failed ({}): {stdout} {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    // --csv: a header line ("test","rps",...), then one line for the command.
    stdout
        .lines()
        .filter(|line| !line.starts_with("\"test\""))
        .filter_map(|line| line.split("\",\"").nth(1))
        .find_map(|rps| rps.trim_matches('"').parse::<f64>().ok())
        .ok_or_else(|| format!("cannot read redis-benchmark's output: {stdout}"))
}
