//! The commands clients send a server, seen by `MONITOR`: what "one round trip" is counted by.
//!
//! `INFO commandstats` counts the commands a script runs as well as those sent to the server; `MONITOR` tells
//! them apart (a script's are marked `[<db> lua]`), so a test can count the commands a limiter sent.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A `MONITOR` connection to a server (in the clear), recording the commands clients send it.
#[derive(Debug)]
pub struct Monitor {
    stream: TcpStream,
    seen: Arc<Mutex<Vec<String>>>,
    reader: Option<JoinHandle<()>>,
}

/// A command in a `MONITOR` line: `1700000000.000000 [0 127.0.0.1:5000] "EVALSHA" "..."`: its name, upper
/// case, unless a script ran it.
fn sent(line: &str) -> Option<String> {
    let (from, rest) = line.split_once('[')?.1.split_once("] \"")?;
    if from.ends_with(" lua") {
        return None;
    }
    Some(rest.split('"').next()?.to_ascii_uppercase())
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
        let seen = Arc::new(Mutex::new(Vec::new()));
        let reader = std::thread::spawn({
            let seen = Arc::clone(&seen);
            move || {
                for line in lines.lines().map_while(Result::ok) {
                    if let Some(command) = sent(&line) {
                        seen.lock().unwrap().push(command);
                    }
                }
            }
        });
        Monitor {
            stream,
            seen,
            reader: Some(reader),
        }
    }

    /// The commands sent since the last call (upper case, in order), once none has come for 100 ms: a
    /// command is seen after the server ran it, so the last ones may still be on their way.
    pub fn take(&self) -> Vec<String> {
        let (mut last, mut quiet_since) = (usize::MAX, Instant::now());
        loop {
            let now = self.seen.lock().unwrap().len();
            if now != last {
                (last, quiet_since) = (now, Instant::now());
            } else if quiet_since.elapsed() >= Duration::from_millis(100) {
                return std::mem::take(&mut *self.seen.lock().unwrap());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
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
