//! A throw-away Redis Sentinel setup: a master, one replica and three Sentinels (`redis-server <conf>
//! --sentinel`, quorum 2), all on free loopback ports. Killed, and its files removed, when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use limiter_runtime::Limiter;

use crate::{binary, free_port, spawn_redis, wait_for_ping, PATIENT};

/// The name the Sentinels know the master by.
pub const MASTER_NAME: &str = "limiter-master";

/// A master, its replica and three Sentinels watching them.
#[derive(Debug)]
pub struct RedisSentinel {
    /// Redis servers (master first, then the replica), by port.
    servers: Vec<(u16, Option<Child>)>,
    sentinels: Vec<(u16, Child)>,
    dir: PathBuf,
}

impl RedisSentinel {
    /// Starts the master, the replica (in sync) and three Sentinels that know each other, and waits until
    /// they are ready to fail over.
    ///
    /// # Panics
    ///
    /// When `redis-server` cannot be found or the setup is not ready within 30 s.
    pub fn start() -> RedisSentinel {
        let dir = std::env::temp_dir().join(format!(
            "limiter-sentinel-{}-{}",
            std::process::id(),
            free_port()
        ));
        let mut setup = RedisSentinel {
            servers: Vec::new(),
            sentinels: Vec::new(),
            dir,
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
            match spawn_redis(port, &self.dir.join(port.to_string()), extra) {
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
            std::fs::write(
                &conf,
                format!(
                    "port {port}\nbind 127.0.0.1\ndaemonize no\ndir {dir}\n\
                     sentinel monitor {MASTER_NAME} 127.0.0.1 {master} 2\n\
                     sentinel down-after-milliseconds {MASTER_NAME} 500\n\
                     sentinel failover-timeout {MASTER_NAME} 5000\n\
                     sentinel parallel-syncs {MASTER_NAME} 1\n",
                    dir = dir.display()
                ),
            )
            .expect("write sentinel.conf");
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
            match wait_for_ping(&mut child, port, "redis-server --sentinel") {
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
            .query(&mut connect(replica)?)
            .map_err(|e| e.to_string())?;
        if !replication.contains("master_link_status:up") {
            return Err("the replica is not in sync".into());
        }
        for &(port, _) in &self.sentinels {
            let master: Vec<String> = redis::cmd("SENTINEL")
                .arg("MASTER")
                .arg(MASTER_NAME)
                .query(&mut connect(port)?)
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
            .map(|(port, _)| format!("redis://127.0.0.1:{port}/"))
            .collect()
    }

    /// A limiter on the master the Sentinels name, reading Redis's own clock, with a patient deadline.
    pub fn limiter(&self) -> Limiter {
        Limiter::builder()
            .redis_sentinel(MASTER_NAME, self.sentinel_urls())
            .deadline(PATIENT)
            .build()
            .expect("valid Sentinel URLs")
    }

    /// The port of the server the Sentinels name as master now.
    pub fn master_port(&self) -> u16 {
        let (port, _) = self.sentinels[0];
        let address: Vec<String> = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(MASTER_NAME)
            .query(&mut connect(port).expect("a Sentinel"))
            .expect("SENTINEL GET-MASTER-ADDR-BY-NAME");
        address[1].parse().expect("a port")
    }

    /// A connection to the server on `port`.
    pub fn server(&self, port: u16) -> redis::Connection {
        connect(port).unwrap_or_else(|e| panic!("{e}"))
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

fn connect(port: u16) -> Result<redis::Connection, String> {
    redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|client| client.get_connection_with_timeout(Duration::from_millis(500)))
        .map_err(|e| format!("cannot connect to port {port}: {e}"))
}
