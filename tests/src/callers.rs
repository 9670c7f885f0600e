//! The outbound fleet's OS processes: callers (`src/bin/caller.rs`) that wait their turn to call an upstream,
//! started together.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};

/// Runs one caller process at `binary` (what `env!("CARGO_BIN_EXE_caller")` names in a test) for each list
/// of arguments: waits until each says `ready`, tells them all `go`, and, once each has exited successfully,
/// returns when `go` was said (this machine's monotonic and wall clocks) and each one's lines after `ready`.
pub async fn run(
    binary: &'static str,
    processes: Vec<Vec<String>>,
) -> (Instant, SystemTime, Vec<Vec<String>>) {
    tokio::task::spawn_blocking(move || {
        let mut children: Vec<_> = processes
            .iter()
            .map(|args| {
                Command::new(binary)
                    .args(args)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("the caller binary runs")
            })
            .collect();
        let mut outputs: Vec<_> = children
            .iter_mut()
            .map(|child| BufReader::new(child.stdout.take().unwrap()).lines())
            .collect();
        for output in &mut outputs {
            let line = output.next().expect("a caller exited before it was ready");
            assert_eq!(line.unwrap(), "ready");
        }
        let go = (Instant::now(), SystemTime::now());
        for child in &mut children {
            writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
        }
        let outputs: Vec<Vec<String>> = outputs
            .into_iter()
            .map(|output| output.map(Result::unwrap).collect())
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success(), "a caller failed");
        }
        (go.0, go.1, outputs)
    })
    .await
    .expect("the callers ran")
}
