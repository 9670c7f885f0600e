//! The commands clients send a server, seen by `MONITOR`: what "one round trip" is counted by.
//!
//! `INFO commandstats` counts the commands a script runs as well as those sent to the server; `MONITOR` tells
//! them apart (a script's are marked `[<db> lua]`), so a test can count the commands a limiter sent.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A `MONITOR` connection to a server (in the clear), recording the commands clients send it.
#[derive(Debug)]
pub struct Monitor {
    stream: TcpStream,
    port: u16,
    seen: Arc<Seen>,
    reader: Option<JoinHandle<()>>,
    /// Marks sent so far: each [`take`](Monitor::take) sends the next.
    marks: AtomicU64,
}

/// What `MONITOR` has shown: the commands sent, and the marks seen; every line but the marks (a script's
/// commands too, with their arguments); and a signal for each new line.
#[derive(Debug, Default)]
struct Seen {
    lines: Mutex<(Vec<String>, u64)>,
    all: Mutex<Vec<String>>,
    more: Condvar,
}

/// The longest [`Monitor::take`] waits for its mark.
const PATIENCE: Duration = Duration::from_secs(10);

/// A command in a `MONITOR` line: `1700000000.000000 [0 127.0.0.1:5000] "EVALSHA" "..."`: its name, upper
/// case, unless a script ran it.
fn sent(line: &str) -> Option<String> {
    let (from, rest) = line.split_once('[')?.1.split_once("] \"")?;
    if from.ends_with(" lua") {
        return None;
    }
    Some(rest.split('"').next()?.to_ascii_uppercase())
}

/// The number of the mark a `MONITOR` line shows (`"ECHO" "limiter-monitor-mark:<n>"`), if it shows one.
fn mark(line: &str) -> Option<u64> {
    let (_, rest) = line.split_once("\"limiter-monitor-mark:")?;
    rest.split('"').next()?.parse().ok()
}

impl Monitor {
    /// Starts watching the server on loopback `port`; it watches once `MONITOR` is acknowledged.
    pub fn start(port: u16) -> Monitor {
        let mut stream =
            TcpStream::connect(("127.0.0.1", port)).expect("a connection to MONITOR on");
        stream.write_all(b"MONITOR\r\n").expect("MONITOR");
        let mut lines = BufReader::new(stream.try_clone().expect("a second handle"));
        let mut ok = String::new();
        lines.read_line(&mut ok).expect("MONITOR's answer");
        assert_eq!(ok.trim_end(), "+OK", "MONITOR refused");
        let seen = Arc::new(Seen::default());
        let reader = std::thread::spawn({
            let seen = Arc::clone(&seen);
            move || {
                for line in lines.lines().map_while(Result::ok) {
                    if mark(&line).is_none() {
                        seen.all.lock().unwrap().push(line.clone());
                    }
                    let mut shown = seen.lines.lock().unwrap();
                    match (mark(&line), sent(&line)) {
                        (Some(mark), _) => shown.1 = shown.1.max(mark),
                        (None, Some(command)) => shown.0.push(command),
                        (None, None) => continue,
                    }
                    drop(shown);
                    seen.more.notify_all();
                }
            }
        });
        Monitor {
            stream,
            port,
            seen,
            reader: Some(reader),
            marks: AtomicU64::new(0),
        }
    }

    /// The commands sent since the last call (upper case, in order). Ordered by the server, not by time: it
    /// sends a mark (`ECHO`) on a connection of its own and returns once `MONITOR` shows it, since `MONITOR`
    /// shows commands in the order the server ran them. Panics past 10 s without the mark.
    pub fn take(&self) -> Vec<String> {
        let mark = self.marks.fetch_add(1, Ordering::Relaxed) + 1;
        let mut connection =
            TcpStream::connect(("127.0.0.1", self.port)).expect("a connection to mark on");
        let echo = format!("ECHO limiter-monitor-mark:{mark}\r\n");
        connection
            .write_all(echo.as_bytes())
            .expect("the mark sent");
        let mut answer = String::new();
        BufReader::new(connection)
            .read_line(&mut answer)
            .expect("the mark answered");
        let until = Instant::now() + PATIENCE;
        let mut shown = self.seen.lines.lock().unwrap();
        while shown.1 < mark {
            let left = until.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "MONITOR never showed its mark in {PATIENCE:?}"
            );
            shown = self.seen.more.wait_timeout(shown, left).unwrap().0;
        }
        std::mem::take(&mut shown.0)
    }

    /// Waits (10 s at most) until `MONITOR` has shown, for each of `texts`, a line holding it (a heartbeat's
    /// key, the overrides' first load), then forgets everything shown so far: what comes next is what follows
    /// those events, whatever their timing.
    pub fn wait_for(&self, texts: &[&str]) {
        let until = Instant::now() + PATIENCE;
        let mut unseen: Vec<&str> = texts.to_vec();
        loop {
            let lines = self.take_lines();
            unseen.retain(|text| !lines.iter().any(|line| line.contains(text)));
            if unseen.is_empty() {
                return;
            }
            assert!(
                Instant::now() < until,
                "MONITOR never showed {unseen:?} in {PATIENCE:?}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Every line `MONITOR` showed since the last call, whole (the commands scripts ran too, marked
    /// `[<db> lua]`, with their arguments), up to the mark [`take`](Monitor::take) waits for; it empties
    /// what `take` returns as well.
    pub fn take_lines(&self) -> Vec<String> {
        self.take();
        std::mem::take(&mut *self.seen.all.lock().unwrap())
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Both);
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sent;

    #[test]
    fn a_scripts_commands_are_not_sent() {
        assert_eq!(
            sent(r#"1700000000.000001 [0 127.0.0.1:5000] "evalsha" "abc" "1""#).as_deref(),
            Some("EVALSHA")
        );
        assert_eq!(
            sent(r#"1700000000.000002 [0 lua] "ZADD" "k" "1" "m""#),
            None
        );
        assert_eq!(sent("+OK"), None);
    }
}
