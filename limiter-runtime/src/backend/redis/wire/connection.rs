//! How the Redis store reaches Redis: one server, a Redis Cluster, or the master that Redis Sentinel names.
//!
//! All three give one [`Connection`], a cheap clone of one shared multiplexed connection that reconnects by
//! itself, so every script call, the heartbeat and anything else that talks to Redis take one path. Every
//! script touches exactly one key (`KEYS[1]`): on a cluster, the call goes to the node that owns the key's slot
//! and follows `MOVED` and `ASK` redirections, and no call can ever be `CROSSSLOT`. How each URL is secured
//! (TLS, a CA, a client certificate) is [`Tls`]'s business.

use std::fmt;
use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManagerConfig};
use redis::cluster::{ClusterClient, ClusterClientBuilder};
use redis::cluster_routing::Slot;
use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::{Client, Cmd, ConnectionAddr, Pipeline, RedisFuture, RedisResult, TlsMode, Value};

use super::cluster::ClusterLink;
use super::script::LuaScript;
use super::server::{Locator, ServerConnection};
use super::tls::Tls;
use crate::error::Error;

/// Where Redis is: checked when the limiter is built, connected on its first decision.
pub(crate) enum Topology {
    /// One server: at a fixed address, or the master that Redis Sentinel names (asked again after a failover).
    Server(ServerConnection),
    /// A Redis Cluster, found from its seed nodes.
    Cluster {
        client: Box<ClusterClient>,
        seeds: Vec<Client>,
    },
    /// A Redis that cannot be used, and why (a setting from the environment that cannot work): every command
    /// fails, so every decision is made by its limits' `on_error`, as in an outage, and says why.
    Unusable(String),
}

impl Topology {
    /// Creates the topology of one server at `url`.
    pub(crate) fn server(
        url: &str,
        tls: &Tls,
        connect_timeout: Duration,
    ) -> Result<Topology, Error> {
        tls.check_used([url])?;
        let locator = Locator::Fixed(tls.client(url)?);
        Ok(Topology::Server(ServerConnection::new(
            locator,
            manager_config(connect_timeout),
        )))
    }

    /// Creates the topology of the Redis Cluster that any of `seeds` belongs to. Every node it finds is spoken to as
    /// the seeds are (TLS or not, the same user).
    pub(crate) fn cluster(
        urls: &[String],
        tls: &Tls,
        connect_timeout: Duration,
    ) -> Result<Topology, Error> {
        let seeds = clients("Redis Cluster", urls, tls)?;
        tls.check_used(urls.iter().map(String::as_str))?;
        let infos = seeds.iter().map(|seed| seed.get_connection_info().clone());
        let builder = ClusterClientBuilder::new(infos).connection_timeout(connect_timeout);
        let client =
            tls.cluster(builder, &seeds)?
                .build()
                .map_err(|source| Error::InvalidRedisUrl {
                    url: addresses(&seeds),
                    source,
                })?;
        Ok(Topology::Cluster {
            client: Box::new(client),
            seeds,
        })
    }

    /// Creates the topology of the master named `master` by the Sentinels at `sentinels`. `master` is the name, or a
    /// URL whose host is the name and which says how to speak to the master (`rediss://user:password@mymaster/`): the
    /// master's user may differ from the Sentinels' (theirs come in their URLs, one user for all).
    pub(crate) fn sentinel(
        master: &str,
        sentinels: &[String],
        tls: &Tls,
        connect_timeout: Duration,
    ) -> Result<Topology, Error> {
        let master_url = master.contains("://").then_some(master);
        let clients = clients("Redis Sentinel", sentinels, tls)?;
        tls.check_used(sentinels.iter().map(String::as_str).chain(master_url))?;
        let to_master = master_url.map(|url| tls.client(url)).transpose()?;
        let name = match &to_master {
            Some(client) => match client.get_connection_info().addr() {
                ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => host.clone(),
                _ => String::new(),
            },
            None => master.to_owned(),
        };
        if name.is_empty() {
            return Err(Error::InvalidRedisSetup(
                "Redis Sentinel needs the name of the master it monitors; the name is empty".into(),
            ));
        }
        let invalid = |source| Error::InvalidRedisUrl {
            url: addresses(&clients),
            source,
        };
        let addrs = clients
            .iter()
            .map(|c| c.get_connection_info().addr().clone());
        let mut builder = SentinelClientBuilder::new(addrs, &name, SentinelServerType::Master)
            .map_err(invalid)?;
        let user = clients[0].get_connection_info().redis_settings();
        for other in &clients[1..] {
            let other = other.get_connection_info().redis_settings();
            if (other.username(), other.password()) != (user.username(), user.password()) {
                return Err(Error::InvalidRedisSetup(
                    "the Sentinels' URLs name different users or passwords; the limiter speaks to every \
                     Sentinel as one user"
                        .into(),
                ));
            }
        }
        if let Some(username) = user.username() {
            builder = builder.set_client_to_sentinel_username(username);
        }
        if let Some(password) = user.password() {
            builder = builder.set_client_to_sentinel_password(password);
        }
        if let Some(to_master) = &to_master {
            let info = to_master.get_connection_info();
            let settings = info.redis_settings();
            if let Some(username) = settings.username() {
                builder = builder.set_client_to_redis_username(username);
            }
            if let Some(password) = settings.password() {
                builder = builder.set_client_to_redis_password(password);
            }
            builder = builder.set_client_to_redis_db(settings.db());
            if let ConnectionAddr::TcpTls { .. } = info.addr() {
                builder = builder.set_client_to_redis_tls_mode(TlsMode::Secure);
                #[cfg(feature = "tls")]
                {
                    builder = builder.set_client_to_redis_certificates(tls.certificates()?);
                }
            }
        }
        let locator = Locator::Sentinel {
            master: name,
            sentinels: addresses(&clients),
            client: tokio::sync::Mutex::new(builder.build().map_err(invalid)?),
        };
        Ok(Topology::Server(ServerConnection::new(
            locator,
            manager_config(connect_timeout),
        )))
    }

    /// Opens a connection of its own subscribed to nothing yet, for pub/sub (a subscribed connection can send nothing
    /// else). Ordinary pub/sub reaches every node of a cluster and every replica of a Sentinel master, so any
    /// node will do: a cluster rotates through its seeds on each `attempt`.
    pub(crate) async fn pubsub(&self, attempt: usize) -> RedisResult<redis::aio::PubSub> {
        let client = match self {
            Topology::Server(server) => server.client().await?,
            Topology::Cluster { seeds, .. } => seeds[attempt % seeds.len()].clone(),
            Topology::Unusable(reason) => return Err(unusable(reason)),
        };
        client.get_async_pubsub().await
    }

    /// Creates the shared connection, asked for by the first call: a server's connects on its first command, a
    /// cluster's starts connecting at once. Must run inside a Tokio runtime, where the connection's background
    /// tasks live.
    pub(crate) fn connect(&self) -> RedisResult<Connection> {
        Ok(match self {
            Topology::Server(server) => Connection::Server(server.clone()),
            Topology::Cluster { client, .. } => {
                Connection::Cluster(ClusterLink::new(ClusterClient::clone(client)))
            }
            Topology::Unusable(reason) => return Err(unusable(reason)),
        })
    }
}

/// Returns the error every command meets on an unusable Redis.
fn unusable(reason: &str) -> redis::RedisError {
    let kind = redis::ErrorKind::InvalidClientConfig;
    redis::RedisError::from((kind, "Redis cannot be used", reason.to_owned()))
}

impl Topology {
    /// Describes where Redis is, for errors: "redis://10.0.0.5:6379", never a password.
    pub(crate) fn describe(&self) -> String {
        match self {
            Topology::Server(server) => match server.locator() {
                Locator::Fixed(client) => address(client),
                Locator::Sentinel {
                    master, sentinels, ..
                } => format!("the master {master:?} of the Sentinels at {sentinels}"),
            },
            Topology::Cluster { seeds, .. } => format!("the Redis Cluster at {}", addresses(seeds)),
            Topology::Unusable(reason) => format!("no usable Redis ({reason})"),
        }
    }
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Topology::Server(server) => match server.locator() {
                Locator::Fixed(client) => f.debug_tuple("Server").field(&address(client)).finish(),
                Locator::Sentinel {
                    master, sentinels, ..
                } => f
                    .debug_struct("Sentinel")
                    .field("master", master)
                    .field("sentinels", sentinels)
                    .finish(),
            },
            Topology::Cluster { seeds, .. } => {
                f.debug_tuple("Cluster").field(&addresses(seeds)).finish()
            }
            Topology::Unusable(reason) => f.debug_tuple("Unusable").field(reason).finish(),
        }
    }
}

/// Creates a client for each of `urls`, of which there is at least one.
fn clients(what: &str, urls: &[String], tls: &Tls) -> Result<Vec<Client>, Error> {
    if urls.is_empty() {
        return Err(Error::InvalidRedisSetup(format!(
            "{what} needs at least one node URL to start from; none was given"
        )));
    }
    urls.iter().map(|url| tls.client(url)).collect()
}

/// Returns where `client` connects, for errors and `Debug`: never a password or a key.
fn address(client: &Client) -> String {
    match client.get_connection_info().addr() {
        addr @ ConnectionAddr::TcpTls { .. } => format!("rediss://{addr}"),
        addr => format!("redis://{addr}"),
    }
}

/// Returns the clients' addresses (see [`address`]).
fn addresses(clients: &[Client]) -> String {
    let each: Vec<String> = clients.iter().map(address).collect();
    each.join(" ")
}

fn manager_config(connect_timeout: Duration) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(connect_timeout))
        // Reconnection is retried on the next call; a failing attempt must not queue calls behind backoff.
        .set_number_of_retries(0)
        // A decision's script call has its deadline, and then its late answer to reconcile: a timer of the
        // manager's own would be a second one on every call. Every other command has its bound from the
        // server connection (`server::RESPONSE_TIMEOUT`).
        .set_response_timeout(None)
}

/// A connection to Redis however it is deployed: cloning it shares it.
#[derive(Clone)]
pub(crate) enum Connection {
    Server(ServerConnection),
    Cluster(ClusterLink),
}

impl Connection {
    /// Returns whether the connection is made (to the server, or to the cluster): a call then spends no time
    /// connecting.
    pub(crate) fn is_made(&self) -> bool {
        match self {
            Connection::Server(server) => server.is_made(),
            Connection::Cluster(cluster) => cluster.is_made(),
        }
    }

    /// Makes the connection if none is (connects, authenticates, selects the database), or waits for the
    /// attempt under way.
    pub(crate) async fn establish(&self) -> RedisResult<()> {
        match self {
            Connection::Server(server) => server.establish().await,
            Connection::Cluster(cluster) => cluster.connection().await.map(drop),
        }
    }

    /// Runs `command` of `script` (see [`LuaScript::run`]).
    pub(crate) async fn run(
        &mut self,
        script: &'static LuaScript,
        command: &Cmd,
    ) -> RedisResult<Value> {
        match self {
            Connection::Server(server) => server.run(script, command).await,
            Connection::Cluster(cluster) => script.run(cluster, command).await,
        }
    }

    /// Returns whether it is a cluster's.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self, Connection::Cluster(_))
    }

    /// Returns, when `keys` cannot go in one script call (a cluster, and keys in several slots), their indices grouped
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
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Server(connection) => connection.get_db(),
            Connection::Cluster(connection) => connection.get_db(),
        }
    }
}
