//! A throw-away Redis Cluster: 3 masters and 3 replicas, six `redis-server --cluster-enabled yes` processes on
//! free loopback ports, joined by `redis-cli --cluster create`. Killed, and its files removed, when dropped.
//! With the `tls` feature, its nodes can speak TLS alone (clients, the cluster bus, replication).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, LimiterBuilder};

use crate::{binary, free_port, spawn_redis, Access, PATIENT};

/// How long a node may be unreachable before the cluster fails it over (`cluster-node-timeout`): short, so
/// that failover tests take seconds.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(1_000);

/// One node of a [`RedisCluster`].
#[derive(Debug)]
struct Node {
    port: u16,
    child: Option<Child>,
}

/// A running Redis Cluster of six nodes on loopback.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<Node>,
    dir: PathBuf,
    access: Access,
}

/// A node's view of one cluster member, from `CLUSTER NODES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The node's id.
    pub id: String,
    /// Its client port.
    pub port: u16,
    /// Whether it is a master (else a replica).
    pub master: bool,
    /// The id of its master, for a replica.
    pub master_id: Option<String>,
    /// Whether the cluster has marked it failed.
    pub failed: bool,
    /// The slot ranges it serves (inclusive), for a master.
    pub slots: Vec<(u16, u16)>,
}

impl RedisCluster {
    /// Starts six nodes, creates the cluster (three masters, one replica each) and waits until every node
    /// says `cluster_state:ok` and every replica is in sync.
    ///
    /// # Panics
    ///
    /// When `redis-server` or `redis-cli` cannot be found, or the cluster does not form within 30 s.
    pub fn start() -> RedisCluster {
        RedisCluster::start_with(Access::Plain)
    }

    /// Starts a cluster whose nodes speak TLS alone, as `tls` says (to clients, on the cluster bus and for
    /// replication), and whose only user is [`tls::USER`](crate::tls::USER).
    ///
    /// # Panics
    ///
    /// As [`start`](RedisCluster::start).
    #[cfg(feature = "tls")]
    pub fn start_tls(tls: &crate::tls::Tls) -> RedisCluster {
        RedisCluster::start_with(Access::Tls(tls.clone()))
    }

    fn start_with(access: Access) -> RedisCluster {
        let dir = std::env::temp_dir().join(format!(
            "limiter-cluster-{}-{}",
            std::process::id(),
            free_port()
        ));
        let mut cluster = RedisCluster {
            nodes: Vec::new(),
            dir,
            access,
        };
        for _ in 0..6 {
            let node = cluster.spawn_node();
            cluster.nodes.push(node);
        }
        let mut create = Command::new(binary("redis-cli"));
        create.arg("--cluster").arg("create");
        for node in &cluster.nodes {
            create.arg(format!("127.0.0.1:{}", node.port));
        }
        let output = create
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .args(cluster.access.cli_args())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run redis-cli --cluster create: {e}"));
        assert!(
            output.status.success(),
            "redis-cli --cluster create failed: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        cluster.wait_until_healthy(Duration::from_secs(30));
        cluster
    }

    fn spawn_node(&self) -> Node {
        let mut last_error = String::new();
        for _ in 0..5 {
            let (port, bus_port) = (free_port(), free_port());
            if port == bus_port {
                continue;
            }
            let dir = self.dir.join(port.to_string());
            let bus = bus_port.to_string();
            let timeout = NODE_TIMEOUT.as_millis().to_string();
            let extra = [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-port",
                &bus,
                "--cluster-node-timeout",
                &timeout,
                // A failed-over node's replica may take over even after a short disconnection.
                "--cluster-replica-validity-factor",
                "0",
            ];
            match spawn_redis(port, &dir, &extra, &self.access) {
                Ok(child) => {
                    return Node {
                        port,
                        child: Some(child),
                    }
                }
                Err(error) => last_error = error,
            }
        }
        panic!("could not start a cluster node: {last_error}");
    }

    /// Waits until every running node says `cluster_state:ok`, every running node agrees on one master per
    /// slot range, and every replica's link to its master is up.
    ///
    /// # Panics
    ///
    /// When that takes longer than `within`.
    pub fn wait_until_healthy(&self, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            match self.health() {
                Ok(()) => return,
                Err(why) if Instant::now() > deadline => {
                    panic!("the Redis Cluster is not healthy after {within:?}: {why}")
                }
                Err(_) => sleep(Duration::from_millis(50)),
            }
        }
    }

    fn health(&self) -> Result<(), String> {
        let mut views = Vec::new();
        for port in self.running_ports() {
            let info: String = self.command(port, redis::cmd("CLUSTER").arg("INFO"))?;
            if !info.contains("cluster_state:ok") {
                return Err(format!("node {port}: cluster_state is not ok"));
            }
            let replication: String = self.command(port, redis::cmd("INFO").arg("replication"))?;
            if replication.contains("role:slave") && !replication.contains("master_link_status:up")
            {
                return Err(format!("replica {port}: link to its master is not up"));
            }
            let nodes: String = self.command(port, redis::cmd("CLUSTER").arg("NODES"))?;
            let masters: BTreeMap<_, _> = parse_nodes(&nodes)
                .into_iter()
                .filter(|m| m.master && !m.failed && !m.slots.is_empty())
                .map(|m| (m.slots.clone(), m.port))
                .collect();
            views.push(masters);
        }
        if views.windows(2).any(|pair| pair[0] != pair[1]) {
            return Err("the nodes disagree on who serves which slots".into());
        }
        Ok(())
    }

    /// One URL per node, as cluster seeds.
    pub fn seeds(&self) -> Vec<String> {
        self.nodes
            .iter()
            .map(|node| self.access.url(node.port))
            .collect()
    }

    /// The ports of the nodes still running.
    pub fn running_ports(&self) -> Vec<u16> {
        self.nodes
            .iter()
            .filter(|node| node.child.is_some())
            .map(|node| node.port)
            .collect()
    }

    /// A limiter on this cluster reading Redis's own clock, with a patient deadline.
    pub fn limiter(&self) -> Limiter {
        self.builder()
            .deadline(PATIENT)
            .build()
            .expect("valid seed URLs")
    }

    /// A builder of limiters on this cluster (with the CA and client certificate a secured one needs).
    pub fn builder(&self) -> LimiterBuilder {
        self.access.builder().redis_cluster(self.seeds())
    }

    /// A connection to the node on `port` alone (no redirections followed).
    pub fn node(&self, port: u16) -> redis::Connection {
        self.access
            .connect(port, None)
            .unwrap_or_else(|e| panic!("cannot connect to cluster node {port}: {e}"))
    }

    /// Runs `cmd` on the member at loopback `port` (its own keys only: no redirection is followed).
    pub fn command<T: redis::FromRedisValue>(
        &self,
        port: u16,
        cmd: &mut redis::Cmd,
    ) -> Result<T, String> {
        let mut connection = self
            .access
            .connect(port, Some(Duration::from_millis(500)))
            .map_err(|e| format!("node {port}: {e}"))?;
        cmd.query(&mut connection)
            .map_err(|e| format!("node {port}: {e}"))
    }

    /// The cluster as a running node sees it.
    pub fn members(&self) -> Vec<Member> {
        let port = self.running_ports()[0];
        let nodes: String = self
            .command(port, redis::cmd("CLUSTER").arg("NODES"))
            .unwrap_or_else(|e| panic!("CLUSTER NODES: {e}"));
        parse_nodes(&nodes)
    }

    /// The slot of `key`.
    pub fn slot(&self, key: &str) -> u16 {
        let port = self.running_ports()[0];
        self.command(port, redis::cmd("CLUSTER").arg("KEYSLOT").arg(key))
            .unwrap_or_else(|e| panic!("CLUSTER KEYSLOT: {e}"))
    }

    /// The master serving `slot`, as the cluster sees it now.
    pub fn master_of_slot(&self, slot: u16) -> Member {
        self.members()
            .into_iter()
            .find(|m| m.master && !m.failed && m.slots.iter().any(|&(a, b)| a <= slot && slot <= b))
            .unwrap_or_else(|| panic!("no master serves slot {slot}"))
    }

    /// The masters serving slots.
    pub fn masters(&self) -> Vec<Member> {
        self.members()
            .into_iter()
            .filter(|m| m.master && !m.failed && !m.slots.is_empty())
            .collect()
    }

    /// Every key of every master but the runtimes' own heartbeats (`limiter:*`), with the master's port.
    pub fn limit_keys(&self) -> Vec<(u16, String)> {
        let mut all = Vec::new();
        for master in self.masters() {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("*")
                .query(&mut self.node(master.port))
                .expect("KEYS");
            all.extend(
                keys.into_iter()
                    .filter(|key| !key.starts_with("limiter:"))
                    .map(|key| (master.port, key)),
            );
        }
        all
    }

    /// How many times `command` (lower case, as in `INFO commandstats`: `evalsha`, `eval`, `asking`) ran on
    /// the node on `port`.
    pub fn calls(&self, port: u16, command: &str) -> u64 {
        let stats: String = self
            .command(port, redis::cmd("INFO").arg("commandstats"))
            .unwrap_or_else(|e| panic!("INFO commandstats: {e}"));
        let prefix = format!("cmdstat_{command}:calls=");
        stats
            .lines()
            .find_map(|line| line.strip_prefix(&prefix))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse().expect("a call count"))
    }

    /// How many times `command` ran on all running nodes.
    pub fn calls_everywhere(&self, command: &str) -> u64 {
        self.running_ports()
            .into_iter()
            .map(|port| self.calls(port, command))
            .sum()
    }

    /// Kills the node on `port` with SIGKILL, as a crash would.
    pub fn kill(&mut self, port: u16) {
        let node = self
            .nodes
            .iter_mut()
            .find(|node| node.port == port)
            .unwrap_or_else(|| panic!("no node on port {port}"));
        if let Some(mut child) = node.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Parses `CLUSTER NODES`.
fn parse_nodes(text: &str) -> Vec<Member> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let address = fields[1].split('@').next().unwrap_or_default();
            let port = address
                .rsplit(':')
                .next()
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            let flags: Vec<&str> = fields[2].split(',').collect();
            let slots = fields[8..]
                .iter()
                .filter(|s| !s.starts_with('['))
                .map(|s| match s.split_once('-') {
                    Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                    None => (s.parse().unwrap(), s.parse().unwrap()),
                })
                .collect();
            Member {
                id: fields[0].to_owned(),
                port,
                master: flags.contains(&"master"),
                master_id: (fields[3] != "-").then(|| fields[3].to_owned()),
                failed: flags.contains(&"fail") || flags.contains(&"fail?"),
                slots,
            }
        })
        .collect()
}
