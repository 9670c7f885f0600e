//! A throw-away `redis-server` on a free loopback port, without persistence, killed when dropped.
//!
//! The same as the `tests` crate's harness (`tests::RedisServer`), which this binary does not depend on: that
//! crate turns on `limiter-runtime`'s `metrics` feature, and compiled in, `metrics` costs every decision a few
//! allocations even with no recorder installed (about 30 ns in memory, measured). The load benchmark measures
//! the library as users get it by default.
//!
//! With `--pinned` (see `pinning`), the server runs under `taskset -c <Redis's CPU>`: every thread it starts
//! stays on that CPU.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::pinning::Layout;

pub(crate) struct RedisServer {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl RedisServer {
    /// Starts `redis-server` on a free loopback port (127.0.0.1 only), on Redis's CPU if `layout` is pinned,
    /// and waits until it answers PING.
    pub(crate) fn start(layout: &Layout) -> Result<RedisServer, String> {
        let binary = binary("redis-server").ok_or(
            "redis-server is not installed: run scripts/bench, which installs it, or `apt-get install redis-server`",
        )?;
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .and_then(|listener| listener.local_addr())
                .map_err(|e| format!("no free loopback port: {e}"))?
                .port();
            let dir = std::env::temp_dir()
                .join(format!("limiter-bench-redis-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let child = layout
                .redis_command(&binary)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args([
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--daemonize",
                    "no",
                    "--protected-mode",
                    "yes",
                ])
                .arg("--dir")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot run redis-server: {e}"))?;
            let mut server = RedisServer { child, port, dir };
            match server.wait_for_ping() {
                Ok(()) => return Ok(server),
                Err(error) => last_error = error,
            }
        }
        Err(format!("could not start redis-server: {last_error}"))
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// A synchronous connection, for INFO and FLUSHALL between runs.
    pub(crate) fn connection(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|client| client.get_connection())
            .unwrap_or_else(|e| panic!("cannot connect to the benchmark's redis-server: {e}"))
    }

    fn wait_for_ping(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "redis-server on port {} exited: {status}",
                    self.port
                ));
            }
            if ping(self.port) {
                return Ok(());
            }
            sleep(Duration::from_millis(20));
        }
        Err(format!(
            "redis-server on port {} did not answer PING within 10 s",
            self.port
        ))
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The Redis tool `name` on `PATH`, or where Debian puts it.
pub(crate) fn binary(name: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>());
    on_path
        .chain(["/usr/bin", "/usr/sbin", "/usr/local/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}
