//! The Redis store: one EVALSHA of the algorithm's script per decision, on one shared multiplexed,
//! reconnecting connection to one server, a Redis Cluster or Sentinel's master (see [`super::connection`]).

use std::fmt;
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisResult, Script, ServerErrorKind, ToRedisArgs};

use crate::algorithm::{Algorithm, Outcome, Request};
use crate::clock::{as_micros, Clock};
use crate::error::BackendError;
use crate::store::connection::{Connection, Topology};

/// Keys live at least this long when a test passes "now" in: Redis expires keys on its own clock, which does
/// not follow the test's.
const TEST_MIN_TTL_MILLIS: u64 = 600_000;

/// A Lua script of `scripts/`, called by its SHA-1 (EVALSHA) and, when Redis does not have it (NOSCRIPT:
/// after a restart, a failover or `SCRIPT FLUSH`), once more with its source (EVAL), which loads and runs it in
/// one atomic step, so that retry cannot meet NOSCRIPT again.
pub(crate) struct LuaScript {
    source: &'static str,
    sha1: String,
}

impl LuaScript {
    pub(crate) fn new(source: &'static str) -> LuaScript {
        LuaScript {
            source,
            sha1: Script::new(source).get_hash().to_owned(),
        }
    }

    /// Runs the script on `key` with `args`. Only NOSCRIPT is retried: any other failure may have been
    /// applied.
    pub(crate) async fn invoke<T: redis::FromRedisValue>(
        &self,
        connection: &mut impl ConnectionLike,
        key: &str,
        args: impl ToRedisArgs,
    ) -> RedisResult<T> {
        let call = |command: &str, script: &str| {
            let mut cmd = Cmd::new();
            cmd.arg(command).arg(script).arg(1).arg(key).arg(&args);
            cmd
        };
        match call("EVALSHA", &self.sha1).query_async(connection).await {
            Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                call("EVAL", self.source).query_async(connection).await
            }
            result => result,
        }
    }
}

macro_rules! scripts {
    ($($algorithm:ident => $file:literal),* $(,)?) => {
        fn script(algorithm: Algorithm) -> &'static LuaScript {
            match algorithm {
                $(Algorithm::$algorithm => {
                    static SCRIPT: LazyLock<LuaScript> =
                        LazyLock::new(|| LuaScript::new(include_str!(concat!("../../scripts/", $file))));
                    &SCRIPT
                })*
            }
        }
    };
}

scripts! {
    SlidingLog => "sliding_log.lua",
    FixedWindow => "fixed_window.lua",
    SlidingWindow => "sliding_window.lua",
    TokenBucket => "token_bucket.lua",
    LeakyBucket => "leaky_bucket.lua",
}

pub(crate) struct RedisStore {
    topology: Box<Topology>,
    /// Created on the first decision, inside the caller's Tokio runtime; it connects lazily and reconnects
    /// in the background after a failure.
    connection: OnceLock<Connection>,
    deadline: Duration,
    /// Test-only: pass "now" from this clock instead of reading Redis `TIME`.
    clock: Option<Arc<dyn Clock>>,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("redis", &self.topology)
            .field("deadline", &self.deadline)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    pub(crate) fn new(
        topology: Topology,
        deadline: Duration,
        clock: Option<Arc<dyn Clock>>,
    ) -> Self {
        RedisStore {
            topology: Box::new(topology),
            connection: OnceLock::new(),
            deadline,
            clock,
        }
    }

    /// A connection of its own for pub/sub (see [`Topology::pubsub`]).
    pub(crate) async fn pubsub(&self, attempt: usize) -> redis::RedisResult<redis::aio::PubSub> {
        self.topology.pubsub(attempt).await
    }

    pub(crate) fn deadline(&self) -> Duration {
        self.deadline
    }

    /// The shared connection (created on first use, inside the caller's Tokio runtime).
    pub(crate) fn connection(&self) -> Result<Connection, BackendError> {
        if let Some(connection) = self.connection.get() {
            return Ok(connection.clone());
        }
        let connection = self.topology.connect()?;
        Ok(self.connection.get_or_init(|| connection).clone())
    }

    /// Decides, and says when on Redis's clock (µs since the Unix epoch). One round trip: EVALSHA (and, on
    /// NOSCRIPT only, EVAL), all within the deadline. A call that timed out may have been applied, so it is
    /// never retried.
    pub(crate) async fn decide(
        &self,
        algorithm: Algorithm,
        key: &str,
        request: &Request,
    ) -> Result<(Outcome, u64), BackendError> {
        let mut connection = self.connection()?;
        let args = (
            request.window,
            request.max,
            request.cost,
            request.burst,
            request.max_wait,
        );
        let test_now = self
            .clock
            .as_ref()
            .map(|clock| (as_micros(clock.now()), TEST_MIN_TTL_MILLIS));
        let reply: Vec<i64> = tokio::time::timeout(
            self.deadline,
            script(algorithm).invoke(&mut connection, key, (args, test_now)),
        )
        .await
        .map_err(|_| BackendError::Timeout(self.deadline))??;
        match reply[..] {
            [allowed, remaining, retry_after, reset_after, delay, now] => Ok((
                Outcome {
                    allowed: allowed == 1,
                    remaining: non_negative(remaining),
                    retry_after: non_negative(retry_after),
                    reset_after: non_negative(reset_after),
                    delay: non_negative(delay),
                },
                non_negative(now),
            )),
            _ => Err(BackendError::Reply(reply)),
        }
    }
}

/// How long one connection attempt may take: the deadline, but at least 250 ms, so that a tight deadline
/// still lets a connection be made (the first call fails, a later one finds the connection up).
pub(crate) fn connect_timeout(deadline: Duration) -> Duration {
    deadline.max(Duration::from_millis(250))
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
