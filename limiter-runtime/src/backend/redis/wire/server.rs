//! The connection to one server: a server at a fixed address, or the master Redis Sentinel names.
//!
//! A `ConnectionManager` reconnects by itself after an I/O error, but keeps any other failure of the
//! connection it made for good: a password the server refused (a user not yet loaded, a password being
//! rotated) would leave it failing forever. So the manager is made again on the next call when a call fails
//! in a way that says it can never work as made; and, for Sentinel's master, when the failure says the server
//! is gone or is the master no more (an I/O error, `READONLY`), the Sentinels are asked again. A failover or
//! a fixed password then heals by itself, like a restart does.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use futures_util::future::{BoxFuture, FutureExt};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::SentinelClient;
use redis::{Client, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, Value};

use super::script::LuaScript;

/// How long a command other than a decision's script call waits for its answer (redis-rs's default): the
/// manager itself waits without a bound, so that a decision, which has a deadline of its own and reconciles a
/// late answer, runs one timer, not two.
pub(crate) const RESPONSE_TIMEOUT: Duration = Duration::from_millis(500);

/// Awaits `command`'s answer within [`RESPONSE_TIMEOUT`], else a timeout (an I/O error, as redis-rs's own).
async fn bounded<T>(command: impl Future<Output = RedisResult<T>>) -> RedisResult<T> {
    match tokio::time::timeout(RESPONSE_TIMEOUT, command).await {
        Ok(reply) => reply,
        Err(_) => Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()),
    }
}

/// The connection to one server; cloning it shares it.
#[derive(Clone)]
pub(crate) struct ServerConnection(Arc<Shared>);

struct Shared {
    locator: Locator,
    config: ConnectionManagerConfig,
    /// The manager last made; `None` once forgotten (and before the first call).
    current: ArcSwapOption<ConnectionManager>,
    /// The attempt to make one under way, shared by every call that waits for it.
    attempt: std::sync::Mutex<Option<Attempt>>,
}

/// An attempt to connect (and authenticate, and select the database), shared by the calls that wait for it.
type Attempt =
    futures_util::future::Shared<BoxFuture<'static, RedisResult<Arc<ConnectionManager>>>>;

/// Where the server is.
pub(crate) enum Locator {
    /// At a fixed address.
    Fixed(Client),
    /// Wherever the Sentinels say the master is.
    Sentinel {
        /// The master's name.
        master: String,
        /// The Sentinels' addresses (for `Debug`).
        sentinels: String,
        client: tokio::sync::Mutex<SentinelClient>,
    },
}

impl ServerConnection {
    pub(crate) fn new(locator: Locator, config: ConnectionManagerConfig) -> ServerConnection {
        ServerConnection(Arc::new(Shared {
            locator,
            config,
            current: ArcSwapOption::empty(),
            attempt: std::sync::Mutex::new(None),
        }))
    }

    /// Returns whether a connection is made: a call then spends no time connecting.
    pub(crate) fn is_made(&self) -> bool {
        self.0.current.load().is_some()
    }

    /// Makes the connection if none is: connects, authenticates and selects the database (for the master,
    /// once the Sentinels have named it). Calls that ask meanwhile wait for the same attempt; a failed attempt
    /// is the next call's to make again.
    pub(crate) async fn establish(&self) -> RedisResult<()> {
        self.manager().await.map(drop)
    }

    pub(crate) fn locator(&self) -> &Locator {
        &self.0.locator
    }

    /// Returns a client for the server: for pub/sub, which needs a connection of its own.
    pub(crate) async fn client(&self) -> RedisResult<Client> {
        match &self.0.locator {
            Locator::Fixed(client) => Ok(client.clone()),
            Locator::Sentinel { client, .. } => client.lock().await.async_get_client().await,
        }
    }

    /// Returns the manager to call through: the one last made, else one made now (see
    /// [`establish`](ServerConnection::establish)).
    async fn manager(&self) -> RedisResult<Arc<ConnectionManager>> {
        if let Some(manager) = self.0.current.load_full() {
            return Ok(manager);
        }
        let attempt = {
            let mut under_way = self.0.attempt.lock().unwrap_or_else(|e| e.into_inner());
            // Made while this call waited for the lock.
            if let Some(manager) = self.0.current.load_full() {
                return Ok(manager);
            }
            under_way
                .get_or_insert_with(|| {
                    let shared = Arc::clone(&self.0);
                    async move { shared.make().await }.boxed().shared()
                })
                .clone()
        };
        let made = attempt.clone().await;
        let mut under_way = self.0.attempt.lock().unwrap_or_else(|e| e.into_inner());
        if under_way.as_ref().is_some_and(|it| it.ptr_eq(&attempt)) {
            *under_way = None;
            if let Ok(manager) = &made {
                self.0.current.store(Some(Arc::clone(manager)));
            }
        }
        drop(under_way);
        made
    }

    /// Runs `command` of `script`, straight on the manager (no boxed call of its own: the common call's path),
    /// with no bound of its own: a decision's caller awaits it within its deadline, and a late answer within
    /// its own bound.
    pub(crate) async fn run(
        &self,
        script: &'static LuaScript,
        command: &Cmd,
    ) -> RedisResult<Value> {
        let manager = match self.0.current.load_full() {
            Some(manager) => manager,
            None => self.manager().await?,
        };
        let reply = script.run(&mut (*manager).clone(), command).await;
        if let Err(error) = &reply {
            self.failed(&manager, error);
        }
        reply
    }

    /// Forgets `manager`, after a call through it failed with `error`, if it is not to be called again. Only
    /// that manager: another call may have made the next one already.
    fn failed(&self, manager: &Arc<ConnectionManager>, error: &RedisError) {
        if self.0.locator.forgets(error) {
            self.0
                .current
                .compare_and_swap(&Some(manager.clone()), None::<Arc<_>>);
        }
    }
}

impl Shared {
    /// Makes a new manager, connected: for the master, once the Sentinels have named it.
    async fn make(&self) -> RedisResult<Arc<ConnectionManager>> {
        let client = match &self.locator {
            Locator::Fixed(client) => client.clone(),
            Locator::Sentinel { client, .. } => client.lock().await.async_get_client().await?,
        };
        let manager = ConnectionManager::new_with_config(client, self.config.clone()).await?;
        Ok(Arc::new(manager))
    }
}

impl Locator {
    /// Returns whether a call that failed with `error` says the manager is not to be called again.
    fn forgets(&self, error: &RedisError) -> bool {
        // The manager retries an I/O error itself; anything else that asks for a new connection (the password
        // refused, a reply that cannot be read), it would fail with forever.
        let broken = error.is_unrecoverable_error() && !error.is_io_error();
        match self {
            Locator::Fixed(_) => broken,
            Locator::Sentinel { .. } => {
                broken
                    || error.is_io_error()
                    || error.code() == Some("READONLY")
                    || error.code() == Some("MASTERDOWN")
                    || error.kind() == ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
            }
        }
    }
}

impl ConnectionLike for ServerConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let manager = self.manager().await?;
            let reply = bounded((*manager).clone().req_packed_command(cmd)).await;
            if let Err(error) = &reply {
                self.failed(&manager, error);
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
            let manager = self.manager().await?;
            let reply = bounded(
                (*manager)
                    .clone()
                    .req_packed_commands(pipeline, offset, count),
            )
            .await;
            if let Err(error) = &reply {
                self.failed(&manager, error);
            }
            reply
        })
    }

    fn get_db(&self) -> i64 {
        match &self.0.locator {
            Locator::Fixed(client) => client.get_connection_info().redis_settings().db(),
            Locator::Sentinel { .. } => self.0.current.load().as_ref().map_or(0, |m| m.get_db()),
        }
    }
}
