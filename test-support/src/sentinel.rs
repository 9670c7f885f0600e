//! A throw-away Redis Sentinel setup: a master, one replica and three Sentinels (`redis-server <conf>
//! --sentinel`, quorum 2), all on free loopback ports. Killed, and its files removed, when dropped. With the
//! `tls` feature, all of them can speak TLS alone, the Sentinels with a user of their own.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, LimiterBuilder};

use crate::{binary, free_port, spawn_redis, wait_for_ping, Access, PATIENT};

/// How long a connection to a server or a Sentinel of the setup may take to be made.
const QUICK: Option<Duration> = Some(Duration::from_millis(500));

/// The name the Sentinels know the master by.
pub const MASTER_NAME: &str = "limiter-master";

/// A master, its replica and three Sentinels watching them.
#[derive(Debug)]
pub struct RedisSentinel {
    /// Redis servers (master first, then the replica), by port.
    servers: Vec<(u16, Option<Child>)>,
    sentinels: Vec<(u16, Child)>,
    dir: PathBuf,
    access: Access,
}

impl RedisSentinel {
    /// Starts the master, the replica (in sync) and three Sentinels that know each other, and waits until
    /// they are ready to fail over.
    ///
    /// # Panics
    ///
    /// When `redis-server` cannot be found or the setup is not ready within 30 s.
    pub fn start() -> RedisSentinel {
        RedisSentinel::start_with(Access::Plain)
    }

    /// Starts the setup speaking TLS alone, as `tls` says: the servers' only user is
    /// [`tls::USER`](crate::tls::USER) (the replica and the Sentinels use it too), and the Sentinels' is
    /// [`tls::SENTINEL_USER`](crate::tls::SENTINEL_USER).
    ///
    /// # Panics
    ///
    /// As [`start`](RedisSentinel::start).
    #[cfg(feature = "tls")]
    pub fn start_tls(tls: &crate::tls::Tls) -> RedisSentinel {
        RedisSentinel::start_with(Access::Tls(tls.clone()))
    }

    fn start_with(access: Access) -> RedisSentinel {
        let dir = std::env::temp_dir().join(format!(
            "limiter-sentinel-{}-{}",
            std::process::id(),
            free_port()
        ));
        let mut setup = RedisSentinel {
            servers: Vec::new(),
            sentinels: Vec::new(),
            dir,
            access,
        };
        let master = setup.spawn_server(&[]);
        let master_port = master.to_string();
        setup.spawn_server(&["--replicaof", "127.0.0.1", &master_port]);
        for _ in 0..3 {
            setup.spawn_sentinel(master);
        }
        setup.wait_until_ready(Duration::from_secs(30));
        setup
    }

    fn spawn_server(&mut self, extra: &[&str]) -> u16 {
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = free_port();
            match spawn_redis(port, &self.dir.join(port.to_string()), extra, &self.access) {
                Ok(child) => {
                    self.servers.push((port, Some(child)));
                    return port;
                }
                Err(error) => last_error = error,
            }
        }
        panic!("could not start redis-server: {last_error}");
    }

    fn spawn_sentinel(&mut self, master: u16) {
        let mut last_error = String::new();
        for _ in 0..5 {
            let port = free_port();
            let dir = self.dir.join(format!("sentinel-{port}"));
            std::fs::create_dir_all(&dir).expect("a temporary directory");
            let conf = dir.join("sentinel.conf");
            let mut lines = vec![
                "bind 127.0.0.1".to_owned(),
                "daemonize no".to_owned(),
                format!("dir {}", dir.display()),
                format!("sentinel monitor {MASTER_NAME} 127.0.0.1 {master} 2"),
                format!("sentinel down-after-milliseconds {MASTER_NAME} 500"),
                format!("sentinel failover-timeout {MASTER_NAME} 5000"),
                format!("sentinel parallel-syncs {MASTER_NAME} 1"),
            ];
            match &self.access {
                Access::Plain => lines.push(format!("port {port}")),
                #[cfg(feature = "tls")]
                Access::Tls(tls) => {
                    use crate::tls::{PASSWORD, SENTINEL_PASSWORD, SENTINEL_USER, USER};
                    lines.extend(tls.config(port, &[(SENTINEL_USER, SENTINEL_PASSWORD)]));
                    lines.extend([
                        format!("sentinel sentinel-user {SENTINEL_USER}"),
                        format!("sentinel sentinel-pass {SENTINEL_PASSWORD}"),
                        format!("sentinel auth-user {MASTER_NAME} {USER}"),
                        format!("sentinel auth-pass {MASTER_NAME} {PASSWORD}"),
                    ]);
                }
            }
            std::fs::write(&conf, lines.join("\n") + "\n").expect("write sentinel.conf");
            let spawned = Command::new(binary("redis-server"))
                .arg(&conf)
                .arg("--sentinel")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn();
            let mut child = match spawned {
                Ok(child) => child,
                Err(e) => panic!("cannot run redis-server --sentinel: {e}"),
            };
            let ping = || {
                self.sentinel(port)
                    .and_then(|mut c| {
                        redis::cmd("PING")
                            .query::<String>(&mut c)
                            .map_err(|e| e.to_string())
                    })
                    .is_ok()
            };
            match wait_for_ping(&mut child, port, "redis-server --sentinel", ping) {
                Ok(()) => {
                    self.sentinels.push((port, child));
                    return;
                }
                Err(error) => last_error = error,
            }
        }
        panic!("could not start a Sentinel: {last_error}");
    }

    /// Waits until the replica is in sync and every Sentinel knows the master, the replica and the other
    /// Sentinels (so they can elect one of them to fail over).
    fn wait_until_ready(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            match self.readiness() {
                Ok(()) => return,
                Err(why) if Instant::now() > deadline => {
                    panic!("the Sentinel setup is not ready after {within:?}: {why}")
                }
                Err(_) => sleep(Duration::from_millis(50)),
            }
        }
    }

    fn readiness(&self) -> Result<(), String> {
        let replica = self.servers[1].0;
        let replication: String = redis::cmd("INFO")
            .arg("replication")
            .query(&mut self.connect(replica)?)
            .map_err(|e| e.to_string())?;
        if !replication.contains("master_link_status:up") {
            return Err("the replica is not in sync".into());
        }
        for &(port, _) in &self.sentinels {
            let master: Vec<String> = redis::cmd("SENTINEL")
                .arg("MASTER")
                .arg(MASTER_NAME)
                .query(&mut self.sentinel(port)?)
                .map_err(|e| e.to_string())?;
            let field = |name: &str| {
                master
                    .iter()
                    .position(|f| f == name)
                    .and_then(|i| master.get(i + 1))
                    .cloned()
                    .unwrap_or_default()
            };
            if field("num-slaves") != "1" || field("num-other-sentinels") != "2" {
                return Err(format!("Sentinel {port} does not know everyone yet"));
            }
        }
        Ok(())
    }

    /// The Sentinels' URLs.
    pub fn sentinel_urls(&self) -> Vec<String> {
        self.sentinels
            .iter()
            .map(|&(port, _)| self.sentinel_url(port))
            .collect()
    }

    /// How a limiter names the master: its name, or, when secured, a URL saying how to speak to it.
    pub fn master(&self) -> String {
        match &self.access {
            Access::Plain => MASTER_NAME.to_owned(),
            #[cfg(feature = "tls")]
            Access::Tls(_) => {
                use crate::tls::{PASSWORD, USER};
                format!("rediss://{USER}:{PASSWORD}@{MASTER_NAME}/")
            }
        }
    }

    /// A limiter on the master the Sentinels name, reading Redis's own clock, with a patient deadline.
    pub fn limiter(&self) -> Limiter {
        self.builder()
            .deadline(PATIENT)
            .build()
            .expect("valid Sentinel URLs")
    }

    /// A builder of limiters on this setup's master (with the CA and client certificate a secured one needs).
    pub fn builder(&self) -> LimiterBuilder {
        self.access
            .builder()
            .redis_sentinel(self.master(), self.sentinel_urls())
    }

    /// The port of the server the Sentinels name as master now.
    pub fn master_port(&self) -> u16 {
        let (port, _) = self.sentinels[0];
        let address: Vec<String> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(MASTER_NAME)
            .query(&mut self.sentinel(port).expect("a Sentinel"))
            .expect("SENTINEL GET-MASTER-ADDR-BY-NAME");
        address[1].parse().expect("a port")
    }

    /// A connection to the server on `port`.
    pub fn server(&self, port: u16) -> redis::Connection {
        self.connect(port).unwrap_or_else(|e| panic!("{e}"))
    }

    fn connect(&self, port: u16) -> Result<redis::Connection, String> {
        self.access
            .connect(port, QUICK)
            .map_err(|e| format!("cannot connect to port {port}: {e}"))
    }

    /// The URL of the Sentinel on `port`.
    fn sentinel_url(&self, port: u16) -> String {
        match &self.access {
            Access::Plain => self.access.url(port),
            #[cfg(feature = "tls")]
            Access::Tls(tls) => tls.sentinel_url(port),
        }
    }

    /// A connection to the Sentinel on `port`.
    fn sentinel(&self, port: u16) -> Result<redis::Connection, String> {
        let connected = match &self.access {
            Access::Plain => self.access.connect(port, QUICK),
            #[cfg(feature = "tls")]
            Access::Tls(tls) => tls.connect(&self.sentinel_url(port), QUICK),
        };
        connected.map_err(|e| format!("cannot connect to Sentinel {port}: {e}"))
    }

    /// Kills the server on `port` with SIGKILL, as a crash would.
    pub fn kill(&mut self, port: u16) {
        for (server, child) in &mut self.servers {
            if *server == port {
                if let Some(mut child) = child.take() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
    }
}

impl Drop for RedisSentinel {
    fn drop(&mut self) {
        for (_, child) in &mut self.sentinels {
            let _ = child.kill();
            let _ = child.wait();
        }
        for (_, child) in &mut self.servers {
            if let Some(mut child) = child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
