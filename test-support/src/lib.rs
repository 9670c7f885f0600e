//! Throw-away Redis for the tests and benchmarks: `redis-server` processes on free loopback ports, without
//! persistence, stopped when dropped.
//!
//! Every test that needs Redis starts its own [`RedisServer`] (no persistence, its own port), so tests can
//! kill, pause and restart Redis freely and run in parallel. The machine's own Redis service is never used.
//! A test that cannot start `redis-server` fails loudly; it never skips. [`RedisCluster`] and [`RedisSentinel`]
//! do the same for a Redis Cluster and a Sentinel setup. With the `tls` feature, each can run over TLS alone,
//! with ACL users (see [`tls`]).
//!
//! Built with the runtime's default features: what the tests and benchmarks measure is what users get.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use limiter_runtime::{FakeClock, Limiter, LimiterBuilder};

pub mod cluster;
pub mod monitor;
pub mod sentinel;
#[cfg(feature = "tls")]
pub mod tls;

pub use crate::cluster::RedisCluster;
pub use crate::monitor::Monitor;
pub use crate::sentinel::RedisSentinel;

/// How long a test's decision may take before the limiter fails open. Generous: exactness tests run many
/// concurrent calls on two shared cores, and a fail-open there would be counted as an admission.
pub const PATIENT: Duration = Duration::from_secs(10);

/// How the tests reach a server: in the clear with no user, or (feature `tls`) over TLS alone as an ACL user.
#[derive(Debug, Clone, Default)]
pub(crate) enum Access {
    #[default]
    Plain,
    #[cfg(feature = "tls")]
    Tls(tls::Tls),
}

impl Access {
    /// The `redis-server` arguments that make a server listen on `port` this way.
    pub(crate) fn server_args(&self, port: u16) -> Vec<String> {
        match self {
            Access::Plain => vec!["--port".to_owned(), port.to_string()],
            #[cfg(feature = "tls")]
            Access::Tls(tls) => tls.server_args(port),
        }
    }

    /// The `redis-cli` options that reach a server this way.
    pub(crate) fn cli_args(&self) -> Vec<String> {
        match self {
            Access::Plain => Vec::new(),
            #[cfg(feature = "tls")]
            Access::Tls(tls) => tls.cli_args(),
        }
    }

    /// The URL of the server on `port`.
    pub(crate) fn url(&self, port: u16) -> String {
        match self {
            Access::Plain => format!("redis://127.0.0.1:{port}/"),
            #[cfg(feature = "tls")]
            Access::Tls(tls) => tls.url(port),
        }
    }

    /// A synchronous connection to the server on `port`, made within `timeout` (if any).
    pub(crate) fn connect(
        &self,
        port: u16,
        timeout: Option<Duration>,
    ) -> redis::RedisResult<redis::Connection> {
        match self {
            Access::Plain => connect(redis::Client::open(self.url(port))?, timeout),
            #[cfg(feature = "tls")]
            Access::Tls(tls) => tls.connect(&self.url(port), timeout),
        }
    }

    /// Whether the server on `port` answers PING.
    pub(crate) fn ping(&self, port: u16) -> bool {
        match self {
            Access::Plain => ping(port),
            #[cfg(feature = "tls")]
            Access::Tls(_) => self
                .connect(port, Some(Duration::from_millis(500)))
                .and_then(|mut connection| redis::cmd("PING").query::<String>(&mut connection))
                .is_ok(),
        }
    }

    /// A limiter builder with what reaching a server this way takes (the CA, a client certificate).
    pub(crate) fn builder(&self) -> LimiterBuilder {
        match self {
            Access::Plain => Limiter::builder(),
            #[cfg(feature = "tls")]
            Access::Tls(tls) => tls.configure(Limiter::builder()),
        }
    }
}

/// A `redis-server` child process on a free loopback port, killed when dropped.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    access: Access,
    /// A program (and its arguments) that runs `redis-server`, such as valgrind; none: run it directly.
    launcher: Vec<String>,
}

impl RedisServer {
    /// Starts a server on a free loopback port and waits until it answers PING.
    ///
    /// # Panics
    ///
    /// When `redis-server` cannot be found or does not start: tests that need Redis fail, loudly.
    pub fn start() -> RedisServer {
        RedisServer::start_with(Access::Plain)
    }

    /// Starts a server listening on TLS alone, as `tls` says, whose only user is [`tls::USER`].
    ///
    /// # Panics
    ///
    /// As [`start`](RedisServer::start).
    #[cfg(feature = "tls")]
    pub fn start_tls(tls: &tls::Tls) -> RedisServer {
        RedisServer::start_with(Access::Tls(tls.clone()))
    }

    /// Starts a server as [`start`](RedisServer::start) does, run by `launcher` (a program and its arguments,
    /// `redis-server` and its own following them): valgrind, to count its instructions.
    ///
    /// # Panics
    ///
    /// As [`start`](RedisServer::start).
    pub fn start_launched(launcher: &[&str]) -> RedisServer {
        RedisServer::start_as(Access::Plain, launcher)
    }

    fn start_with(access: Access) -> RedisServer {
        RedisServer::start_as(access, &[])
    }

    fn start_as(access: Access, launcher: &[&str]) -> RedisServer {
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = free_port();
            let mut server = RedisServer {
                child: None,
                port,
                dir: std::env::temp_dir()
                    .join(format!("limiter-redis-{}-{port}", std::process::id())),
                access: access.clone(),
                launcher: launcher.iter().map(|arg| (*arg).to_owned()).collect(),
            };
            match server.spawn() {
                Ok(()) => return server,
                Err(error) => last_error = error,
            }
        }
        panic!("could not start redis-server: {last_error}");
    }

    /// The URL of this server (with the user and password of a secured one).
    pub fn url(&self) -> String {
        self.access.url(self.port)
    }

    /// The port this server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's process id (while it runs).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A synchronous connection, to inspect what the limiter left in Redis.
    pub fn connection(&self) -> redis::Connection {
        self.access.connect(self.port, None).unwrap_or_else(|e| {
            panic!(
                "cannot connect to the test redis-server on port {}: {e}",
                self.port
            )
        })
    }

    /// How many times this server has run `command` (lower case, e.g. `evalsha`), from `INFO commandstats`.
    pub fn calls(&self, command: &str) -> u64 {
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut self.connection())
            .expect("INFO");
        info.lines()
            .find_map(|line| line.strip_prefix(&format!("cmdstat_{command}:calls=")))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |calls| calls.parse().expect("a count"))
    }

    /// The keys of every limit in this server: all keys but the runtimes' own heartbeats (`limiter:*`).
    pub fn limit_keys(&self) -> Vec<String> {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query(&mut self.connection())
            .expect("KEYS");
        keys.into_iter()
            .filter(|key| !key.starts_with("limiter:"))
            .collect()
    }

    /// A limiter on this server reading Redis's own clock, with a patient deadline.
    pub fn limiter(&self) -> Limiter {
        self.builder()
            .deadline(PATIENT)
            .build()
            .expect("a valid URL")
    }

    /// A builder of limiters on this server (with the CA and client certificate a secured one needs).
    pub fn builder(&self) -> LimiterBuilder {
        self.access.builder().redis(self.url())
    }

    /// A limiter on this server to which "now" is passed from `clock` (deterministic tests).
    pub fn limiter_with_clock(&self, clock: &FakeClock) -> Limiter {
        self.builder()
            .deadline(PATIENT)
            .clock(clock.clone())
            .build()
            .expect("a valid URL")
    }

    /// Kills the server with SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port (empty: nothing is persisted).
    pub fn restart(&mut self) {
        self.kill();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match self.spawn() {
                Ok(()) => return,
                Err(error) if Instant::now() > deadline => {
                    panic!("could not restart redis-server: {error}")
                }
                Err(_) => sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Freezes the server (SIGSTOP): it keeps its connections but answers nothing.
    pub fn pause(&self) {
        self.signal("STOP");
    }

    /// Thaws a paused server (SIGCONT).
    pub fn resume(&self) {
        self.signal("CONT");
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("the server is running");
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .expect("kill(1) runs");
        assert!(status.success(), "kill -{signal} failed");
    }

    fn spawn(&mut self) -> Result<(), String> {
        let child = spawn_launched(&self.launcher, self.port, &self.dir, &[], &self.access)?;
        self.child = Some(child);
        Ok(())
    }
}

/// Starts `redis-server` on `port` reached as `access` says (loopback only, no persistence, working in
/// `dir`) with `extra` arguments, and waits until it answers PING.
pub(crate) fn spawn_redis(
    port: u16,
    dir: &Path,
    extra: &[&str],
    access: &Access,
) -> Result<Child, String> {
    spawn_launched(&[], port, dir, extra, access)
}

/// [`spawn_redis`], run by `launcher` (none: directly).
fn spawn_launched(
    launcher: &[String],
    port: u16,
    dir: &Path,
    extra: &[&str],
    access: &Access,
) -> Result<Child, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut command = match launcher.split_first() {
        Some((program, args)) => {
            let mut command = Command::new(program);
            command.args(args).arg(redis_server_binary());
            command
        }
        None => Command::new(redis_server_binary()),
    };
    let mut child = command
        .args(access.server_args(port))
        .args(["--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(["--daemonize", "no", "--protected-mode", "yes"])
        .arg("--dir")
        .arg(dir)
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run redis-server: {e}"))?;
    wait_for_ping(&mut child, port, "redis-server", || access.ping(port))?;
    Ok(child)
}

/// Waits until `child`, listening on `port`, answers PING (`ping` says whether it does); kills it if it does
/// not within 10 s.
pub(crate) fn wait_for_ping(
    child: &mut Child,
    port: u16,
    what: &str,
    ping: impl Fn() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("{what} on port {port} exited: {status}"));
        }
        if ping() {
            return Ok(());
        }
        sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(format!(
        "{what} on port {port} did not answer PING within 10 s"
    ))
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if self.child.is_some() {
            self.resume();
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Where `redis-server` is: on `PATH`, or where Debian puts it.
fn redis_server_binary() -> PathBuf {
    binary("redis-server")
}

/// Where the Redis tool `name` (`redis-server`, `redis-cli`) is; panics, saying how to install it, when it is
/// nowhere to be found. With `LIMITER_TEST_SERVER=valkey`, Valkey's own (`valkey-server`, `valkey-cli`): the
/// same tests, against Valkey.
pub fn binary(name: &str) -> PathBuf {
    let name = match (server_kind(), name.strip_prefix("redis-")) {
        (Server::Valkey, Some(tool)) => format!("valkey-{tool}"),
        _ => name.to_owned(),
    };
    find(&name).unwrap_or_else(|| {
        panic!(
            "{name} is not installed, and these tests need a real server. Run the test command from the \
             README (`./scripts/test`), which installs it, or `apt-get install redis-server` (Valkey: \
             `apt-get install -t bookworm-backports valkey-server valkey-tools`)."
        )
    })
}

/// The server the tests run against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// Redis (`redis-server`): the default.
    Redis,
    /// Valkey (`valkey-server`), with `LIMITER_TEST_SERVER=valkey`.
    Valkey,
}

/// The server the tests run against: `LIMITER_TEST_SERVER` says (`redis`, the default, or `valkey`); any
/// other value is a mistake, and panics.
pub fn server_kind() -> Server {
    match std::env::var("LIMITER_TEST_SERVER").as_deref() {
        Err(_) | Ok("" | "redis") => Server::Redis,
        Ok("valkey") => Server::Valkey,
        Ok(other) => panic!("LIMITER_TEST_SERVER={other}: expected redis or valkey"),
    }
}

/// Where the program `name` is: on `PATH`, or where Debian puts it.
pub fn find(name: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>());
    on_path
        .chain(["/usr/bin", "/usr/sbin", "/usr/local/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// A synchronous connection through `client`, made within `timeout` (if any).
pub(crate) fn connect(
    client: redis::Client,
    timeout: Option<Duration>,
) -> redis::RedisResult<redis::Connection> {
    match timeout {
        Some(timeout) => client.get_connection_with_timeout(timeout),
        None => client.get_connection(),
    }
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free loopback port")
}

pub(crate) fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let mut reply = [0u8; 7];
    stream.write_all(b"PING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && &reply == b"+PONG\r\n"
}
