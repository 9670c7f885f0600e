//! The Redis store: one EVALSHA of the algorithm's script per decision, on one shared multiplexed,
//! reconnecting connection.

use std::fmt;
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};

use crate::algorithm::{Algorithm, Outcome, Request};
use crate::clock::{as_micros, Clock};
use crate::error::BackendError;

/// Keys live at least this long when a test passes "now" in: Redis expires keys on its own clock, which does
/// not follow the test's.
const TEST_MIN_TTL_MILLIS: u64 = 600_000;

macro_rules! scripts {
    ($($algorithm:ident => $file:literal),* $(,)?) => {
        fn script(algorithm: Algorithm) -> &'static Script {
            match algorithm {
                $(Algorithm::$algorithm => {
                    static SCRIPT: LazyLock<Script> =
                        LazyLock::new(|| Script::new(include_str!(concat!("../../scripts/", $file))));
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
    client: Client,
    /// Created on the first decision, inside the caller's Tokio runtime; it connects lazily and reconnects
    /// in the background after a failure.
    connection: OnceLock<ConnectionManager>,
    deadline: Duration,
    /// Test-only: pass "now" from this clock instead of reading Redis `TIME`.
    clock: Option<Arc<dyn Clock>>,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("server", &self.client.get_connection_info().addr())
            .field("deadline", &self.deadline)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    pub(crate) fn new(client: Client, deadline: Duration, clock: Option<Arc<dyn Clock>>) -> Self {
        RedisStore {
            client,
            connection: OnceLock::new(),
            deadline,
            clock,
        }
    }

    fn connection(&self) -> Result<ConnectionManager, BackendError> {
        if let Some(connection) = self.connection.get() {
            return Ok(connection.clone());
        }
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(self.deadline.max(Duration::from_millis(250))))
            // Reconnection is retried on the next call; a failing attempt must not queue calls behind backoff.
            .set_number_of_retries(0);
        let connection = ConnectionManager::new_lazy_with_config(self.client.clone(), config)?;
        Ok(self.connection.get_or_init(|| connection).clone())
    }

    /// Decides, and says when on Redis's clock (µs since the Unix epoch). One round trip: EVALSHA (and, on NOSCRIPT only, SCRIPT LOAD and EVALSHA again), all within the
    /// deadline. A call that timed out may have been applied, so it is never retried.
    pub(crate) async fn decide(
        &self,
        algorithm: Algorithm,
        key: &str,
        request: &Request,
    ) -> Result<(Outcome, u64), BackendError> {
        let mut connection = self.connection()?;
        let mut invocation = script(algorithm).prepare_invoke();
        invocation
            .key(key)
            .arg(request.window)
            .arg(request.max)
            .arg(request.cost)
            .arg(request.burst)
            .arg(request.max_wait);
        if let Some(clock) = &self.clock {
            invocation
                .arg(as_micros(clock.now()))
                .arg(TEST_MIN_TTL_MILLIS);
        }
        let reply: Vec<i64> =
            tokio::time::timeout(self.deadline, invocation.invoke_async(&mut connection))
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

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
