//! How the Redis store reaches Redis: one server, a Redis Cluster, or the master that Redis Sentinel names.
//!
//! All three give one [`Connection`], a cheap clone of one shared multiplexed connection that reconnects by
//! itself, so every script call, the heartbeat and anything else that talks to Redis take one path. Every
//! script touches exactly one key (`KEYS[1]`): on a cluster, the call goes to the node that owns the key's slot
//! and follows `MOVED` and `ASK` redirections, and no call can ever be `CROSSSLOT`.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::Slot;
use redis::sentinel::{SentinelClient, SentinelServerType};
use redis::{Client, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use crate::error::Error;

/// Where Redis is: checked when the limiter is built, connected on its first decision.
pub(crate) enum Topology {
    /// One server.
    Server {
        client: Client,
        config: ConnectionManagerConfig,
    },
    /// A Redis Cluster, found from its seed nodes.
    Cluster {
        client: ClusterClient,
        seeds: Vec<String>,
    },
    /// The master that Redis Sentinel names, asked again after a failover.
    Sentinel(SentinelConnection),
}

impl Topology {
    /// One server at `url`.
    pub(crate) fn server(url: String, connect_timeout: Duration) -> Result<Topology, Error> {
        match Client::open(url.as_str()) {
            Ok(client) => Ok(Topology::Server {
                client,
                config: manager_config(connect_timeout),
            }),
            Err(source) => Err(Error::InvalidRedisUrl { url, source }),
        }
    }

    /// The Redis Cluster that any of `seeds` belongs to.
    pub(crate) fn cluster(
        seeds: Vec<String>,
        connect_timeout: Duration,
    ) -> Result<Topology, Error> {
        check_urls("Redis Cluster", &seeds)?;
        let client = ClusterClientBuilder::new(seeds.iter().map(String::as_str))
            .connection_timeout(connect_timeout)
            .build()
            .map_err(|source| Error::InvalidRedisUrl {
                url: seeds.join(" "),
                source,
            })?;
        Ok(Topology::Cluster { client, seeds })
    }

    /// The master named `master` by the Sentinels at `sentinels`.
    pub(crate) fn sentinel(
        master: String,
        sentinels: Vec<String>,
        connect_timeout: Duration,
    ) -> Result<Topology, Error> {
        check_urls("Redis Sentinel", &sentinels)?;
        if master.is_empty() {
            return Err(Error::InvalidRedisSetup(
                "Redis Sentinel needs the name of the master it monitors; the name is empty".into(),
            ));
        }
        let client = SentinelClient::build(
            sentinels.clone(),
            master.clone(),
            None,
            SentinelServerType::Master,
        )
        .map_err(|source| Error::InvalidRedisUrl {
            url: sentinels.join(" "),
            source,
        })?;
        Ok(Topology::Sentinel(SentinelConnection(Arc::new(
            SentinelShared {
                master_name: master,
                sentinels,
                client: tokio::sync::Mutex::new(client),
                config: manager_config(connect_timeout),
                master: Mutex::new((0, None)),
            },
        ))))
    }

    /// A connection of its own subscribed to nothing yet, for pub/sub (a subscribed connection can send nothing
    /// else). Ordinary pub/sub reaches every node of a cluster and every replica of a Sentinel master, so any
    /// node will do: a cluster rotates through its seeds on each `attempt`.
    pub(crate) async fn pubsub(&self, attempt: usize) -> RedisResult<redis::aio::PubSub> {
        let client = match self {
            Topology::Server { client, .. } => client.clone(),
            Topology::Cluster { seeds, .. } => Client::open(seeds[attempt % seeds.len()].as_str())?,
            Topology::Sentinel(sentinel) => {
                sentinel.0.client.lock().await.async_get_client().await?
            }
        };
        client.get_async_pubsub().await
    }

    /// The shared connection. It is made lazily: nothing is sent before the first call. Must run inside a
    /// Tokio runtime, where the connection's background tasks live.
    pub(crate) fn connect(&self) -> RedisResult<Connection> {
        Ok(match self {
            Topology::Server { client, config } => Connection::Server(
                ConnectionManager::new_lazy_with_config(client.clone(), config.clone())?,
            ),
            Topology::Cluster { client, .. } => Connection::Cluster(
                client.get_pending_async_connection_with_config(ClusterConfig::new()),
            ),
            Topology::Sentinel(sentinel) => Connection::Sentinel(sentinel.clone()),
        })
    }
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::Server { client, .. } => f
                .debug_tuple("Server")
                .field(client.get_connection_info().addr())
                .finish(),
            Topology::Cluster { seeds, .. } => f.debug_tuple("Cluster").field(seeds).finish(),
            Topology::Sentinel(SentinelConnection(shared)) => f
                .debug_struct("Sentinel")
                .field("master", &shared.master_name)
                .field("sentinels", &shared.sentinels)
                .finish(),
        }
    }
}

/// Every URL parses, and there is at least one.
fn check_urls(what: &str, urls: &[String]) -> Result<(), Error> {
    if urls.is_empty() {
        return Err(Error::InvalidRedisSetup(format!(
            "{what} needs at least one node URL to start from; none was given"
        )));
    }
    for url in urls {
        if let Err(source) = redis::IntoConnectionInfo::into_connection_info(url.as_str()) {
            return Err(Error::InvalidRedisUrl {
                url: url.clone(),
                source,
            });
        }
    }
    Ok(())
}

fn manager_config(connect_timeout: Duration) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(connect_timeout))
        // Reconnection is retried on the next call; a failing attempt must not queue calls behind backoff.
        .set_number_of_retries(0)
}

/// A connection to Redis however it is deployed: cloning it shares it.
#[derive(Clone)]
pub(crate) enum Connection {
    Server(ConnectionManager),
    Cluster(ClusterConnection),
    Sentinel(SentinelConnection),
}

impl Connection {
    /// When `keys` cannot go in one script call (a cluster, and keys in several slots): their indices grouped
    /// by slot, each group in the order of its first key. `None`: all in one call.
    pub(crate) fn slots_apart(&self, keys: &[&str]) -> Option<Vec<Vec<usize>>> {
        let Connection::Cluster(_) = self else {
            return None;
        };
        let slots: Vec<Slot> = keys.iter().map(Slot::for_key).collect();
        if slots.iter().all(|slot| *slot == slots[0]) {
            return None;
        }
        let mut groups: Vec<(Slot, Vec<usize>)> = Vec::new();
        for (index, slot) in slots.into_iter().enumerate() {
            match groups.iter_mut().find(|(known, _)| *known == slot) {
                Some((_, group)) => group.push(index),
                None => groups.push((slot, vec![index])),
            }
        }
        Some(groups.into_iter().map(|(_, group)| group).collect())
    }
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Server(connection) => connection.req_packed_command(cmd),
            Connection::Cluster(connection) => connection.req_packed_command(cmd),
            Connection::Sentinel(connection) => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Server(connection) => {
                connection.req_packed_commands(pipeline, offset, count)
            }
            Connection::Cluster(connection) => {
                connection.req_packed_commands(pipeline, offset, count)
            }
            Connection::Sentinel(connection) => {
                connection.req_packed_commands(pipeline, offset, count)
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Server(connection) => connection.get_db(),
            Connection::Cluster(connection) => connection.get_db(),
            Connection::Sentinel(_) => 0,
        }
    }
}

/// The master that Redis Sentinel names: a reconnecting connection to it, and when a call fails in a way that
/// says the master is gone or is one no more (an I/O error, `READONLY`), the Sentinels are asked again on the
/// next call. So a failover heals by itself, like a restart does on one server.
#[derive(Clone)]
pub(crate) struct SentinelConnection(Arc<SentinelShared>);

struct SentinelShared {
    master_name: String,
    sentinels: Vec<String>,
    client: tokio::sync::Mutex<SentinelClient>,
    config: ConnectionManagerConfig,
    /// The master last named, numbered so that a failed call forgets only the master it failed on.
    master: Mutex<(u64, Option<ConnectionManager>)>,
}

impl SentinelConnection {
    /// The master's connection: the one last named, else asks the Sentinels.
    async fn master(&self) -> RedisResult<(u64, ConnectionManager)> {
        if let Some(known) = self.known() {
            return Ok(known);
        }
        let mut sentinels = self.0.client.lock().await;
        // Another call may have asked while this one waited for the lock.
        if let Some(known) = self.known() {
            return Ok(known);
        }
        let client = sentinels.async_get_client().await?;
        let manager = ConnectionManager::new_lazy_with_config(client, self.0.config.clone())?;
        let mut master = self.0.master.lock().unwrap_or_else(|e| e.into_inner());
        master.0 += 1;
        master.1 = Some(manager.clone());
        Ok((master.0, manager))
    }

    fn known(&self) -> Option<(u64, ConnectionManager)> {
        let master = self.0.master.lock().unwrap_or_else(|e| e.into_inner());
        master.1.clone().map(|manager| (master.0, manager))
    }

    /// After a failed call on master number `generation`: forget it if the failure says it is no longer
    /// the master to talk to.
    fn failed(&self, generation: u64, error: &RedisError) {
        let gone = error.is_io_error()
            || error.is_unrecoverable_error()
            || error.code() == Some("READONLY")
            || error.code() == Some("MASTERDOWN")
            || error.kind() == ErrorKind::Server(redis::ServerErrorKind::ReadOnly);
        if gone {
            let mut master = self.0.master.lock().unwrap_or_else(|e| e.into_inner());
            if master.0 == generation {
                master.1 = None;
            }
        }
    }
}

impl ConnectionLike for SentinelConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (generation, mut master) = self.master().await?;
            let reply = master.req_packed_command(cmd).await;
            if let Err(error) = &reply {
                self.failed(generation, error);
            }
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (generation, mut master) = self.master().await?;
            let reply = master.req_packed_commands(pipeline, offset, count).await;
            if let Err(error) = &reply {
                self.failed(generation, error);
            }
            reply
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
