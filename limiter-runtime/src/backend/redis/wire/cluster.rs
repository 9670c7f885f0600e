//! The connection to a Redis Cluster, made in the background from its first use.
//!
//! The cluster client is connected before the first call goes through it: a pending connection would retry a
//! call whose nodes cannot be reached until the call's deadline, and the cause (a certificate refused, a
//! password, a refused connection) would never surface. Waiting for the initial connection instead, a call
//! fails at once with that cause, and the next call starts a new attempt. Once connected, the cluster client
//! follows the cluster by itself (`MOVED`, `ASK`, failovers).

use std::sync::{Arc, Mutex, OnceLock};

use futures_util::future::{BoxFuture, FutureExt, Shared};
use redis::aio::ConnectionLike;
use redis::cluster::{ClusterClient, ClusterConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

/// An attempt to connect, shared by the calls that wait for it.
type Attempt = Shared<BoxFuture<'static, Result<ClusterConnection, RedisError>>>;

/// The connection to a Redis Cluster; cloning it shares it.
#[derive(Clone)]
pub(crate) struct ClusterLink(Arc<Link>);

struct Link {
    client: ClusterClient,
    /// The connection, once made.
    made: OnceLock<ClusterConnection>,
    /// The attempt under way (or the last one, failed).
    attempt: Mutex<Attempt>,
}

impl ClusterLink {
    /// Starts connecting to the cluster `client` knows. Must run inside a Tokio runtime, where the attempt
    /// runs.
    pub(crate) fn new(client: ClusterClient) -> ClusterLink {
        let attempt = Mutex::new(attempt(&client));
        ClusterLink(Arc::new(Link {
            client,
            made: OnceLock::new(),
            attempt,
        }))
    }

    /// Returns whether the connection is made: a call then spends no time connecting.
    pub(crate) fn is_made(&self) -> bool {
        self.0.made.get().is_some()
    }

    /// Returns the connection: made, else once the attempt under way succeeds.
    pub(crate) async fn connection(&self) -> RedisResult<ClusterConnection> {
        if let Some(made) = self.0.made.get() {
            return Ok(made.clone());
        }
        let waiting = self.lock().clone();
        match waiting.clone().await {
            Ok(connection) => Ok(self.0.made.get_or_init(|| connection).clone()),
            Err(error) => {
                // The next call tries again; once per failed attempt, however many calls saw it fail.
                let mut current = self.lock();
                if current.ptr_eq(&waiting) {
                    *current = attempt(&self.0.client);
                }
                Err(error)
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Attempt> {
        self.0.attempt.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Starts an attempt to connect, running by itself: it progresses while no call waits for it.
fn attempt(client: &ClusterClient) -> Attempt {
    let client = client.clone();
    let attempt = async move {
        client
            .get_async_connection_with_config(ClusterConfig::new())
            .await
    }
    .boxed()
    .shared();
    tokio::spawn(attempt.clone());
    attempt
}

impl ConnectionLike for ClusterLink {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            connection.req_packed_command(cmd).await
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let mut connection = self.connection().await?;
            connection
                .req_packed_commands(pipeline, offset, count)
                .await
        })
    }

    fn get_db(&self) -> i64 {
        0
    }
}
