//! The Redis backend: one script call per decision (all of a call's limits at once) on one shared,
//! reconnecting connection, and what keeps each decision within its deadline when Redis fails.
//!
//! - Every Redis decision has a deadline; missing it is a failure, decided by the failure policy, and never
//!   retried (it may have been applied). The script call runs on to its answer all the same, and a call Redis
//!   admitted whose caller was refused meanwhile is given back (reconciled): a refused call is never charged.
//! - The breaker stops calling Redis after repeated failures, so a dead Redis costs no latency, and probes for
//!   recovery one call at a time.
//! - A limit's [`OnError`](crate::OnError) says what decides meanwhile ([`Fallback`]).
//! - The deny cache answers, until their `retry_after`, calls Redis said are limited.
//! - Calls on one hot key go to Redis together ([`Coalescer`]), or spend a lease ([`Leases`]).
//!
//! On one server (and Sentinel's master) a call's limits are one atomic script call. On a cluster, the keys of
//! one slot go together, slot after slot; when one slot's limits deny the call, what the others charged is
//! given back before the call returns (meanwhile those charges count: the cluster may briefly admit less,
//! never more).

mod decision;
mod failure;
mod fleet;
mod sparing;
mod wire;

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use self::decision::permits::{Permits, RedisAccess};
use self::decision::round_trip::within;
use self::failure::breaker::Breaker;
use self::sparing::coalesce::Coalescer;
use self::sparing::deny_cache::DenyCache;
use self::sparing::lease::Leases;
use self::wire::script;
use crate::algorithm::Peek;
use crate::call::CallLimit;
use crate::clock::{as_micros, Clock};
use crate::error::{BackendError, Error};
use crate::key::KeyRef;
use crate::watch::NodeReport;

pub(crate) use self::decision::pending::{InLine, ToAsk};
pub(crate) use self::failure::breaker::BreakerConfig;
pub(crate) use self::failure::degraded::Fallback;
pub(crate) use self::failure::instances::Instances;
pub(crate) use self::wire::script::one_limit_source;
pub(crate) use self::wire::tls::{redacted, Tls};
pub(crate) use self::wire::{Connection, Topology};

/// The least time work off the decisions' path is given (see [`RedisBackend::patience`]).
const PATIENT: Duration = Duration::from_millis(500);

/// Returns how long one connection attempt may take: the deadline, but at least 250 ms, so that a tight deadline still
/// lets a connection be made.
pub(crate) fn connect_timeout(deadline: Duration) -> Duration {
    deadline.max(Duration::from_millis(250))
}

/// How long a script call's late answer is awaited, to reconcile it: past this, Redis is taken to have lost it.
const LATE: Duration = Duration::from_secs(30);

/// What spares Redis calls: the deny cache, and coalescing (both on by default), across keys or not (not by
/// default).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sparing {
    pub(crate) deny_cache: bool,
    pub(crate) coalesce: bool,
    pub(crate) across_keys: bool,
}

/// Redis, and what decides when it cannot.
pub(crate) struct RedisBackend {
    topology: Box<Topology>,
    /// Created on the first decision, inside the caller's Tokio runtime; it reconnects in the background after
    /// a failure.
    connection: OnceLock<Connection>,
    deadline: Duration,
    /// How long making the connection may take.
    connect_timeout: Duration,
    /// Test-only: pass "now" from this clock instead of reading Redis `TIME`.
    test_clock: Option<Arc<dyn Clock>>,
    /// This process's clock: the time of the decisions made without Redis.
    clock: Arc<dyn Clock>,
    breaker: Breaker,
    /// What decides while Redis cannot.
    pub(crate) fallback: Fallback,
    /// Calls Redis said are limited, answered here until their `retry_after` (unless switched off).
    denied: Option<DenyCache>,
    /// The lines of calls waiting to go to Redis together (unless switched off).
    coalescer: Option<Coalescer>,
    /// The leases this node holds.
    leases: Leases,
    /// The permits in flight this node holds (shared with the task that renews them).
    permits: Arc<Permits>,
}

impl RedisBackend {
    pub(crate) fn new(
        topology: Topology,
        (deadline, connect_timeout): (Duration, Duration),
        test_clock: Option<Arc<dyn Clock>>,
        fallback: Fallback,
        breaker: BreakerConfig,
        sparing: Sparing,
    ) -> RedisBackend {
        RedisBackend {
            topology: Box::new(topology),
            connection: OnceLock::new(),
            deadline,
            connect_timeout,
            test_clock,
            clock: Arc::clone(fallback.local.clock()),
            fallback,
            breaker: Breaker::new(breaker),
            denied: sparing.deny_cache.then(DenyCache::default),
            coalescer: sparing
                .coalesce
                .then(|| Coalescer::new(sparing.across_keys)),
            leases: Leases::default(),
            permits: Arc::default(),
        }
    }

    /// Describes where Redis is, without a password.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn describe(&self) -> String {
        self.topology.describe()
    }

    /// Returns what the permits need of Redis ([`RedisAccess`]), when a connection can be had.
    pub(crate) fn reach(&self) -> Option<RedisAccess> {
        Some(RedisAccess {
            connection: self.connection().ok()?,
            deadline: self.deadline,
            test_now: self.test_now(),
        })
    }

    /// Returns the shared connection (created on first use, inside the caller's Tokio runtime).
    pub(crate) fn connection(&self) -> Result<Connection, BackendError> {
        if let Some(connection) = self.connection.get() {
            return Ok(connection.clone());
        }
        let connection = self.topology.connect()?;
        Ok(self.connection.get_or_init(|| connection).clone())
    }

    /// Makes the shared connection if none is (connects, authenticates, selects the database), within the
    /// connection's own bound: a decision's deadline is for Redis to decide, not to be connected to.
    pub(crate) async fn establish(&self) -> Result<Connection, BackendError> {
        let connection = self.connection()?;
        if connection.is_made() {
            return Ok(connection);
        }
        let bound = self.connect_timeout;
        match tokio::time::timeout(bound, connection.establish()).await {
            Ok(made) => made.map(|()| connection).map_err(BackendError::from),
            Err(_) => Err(BackendError::Connect(bound)),
        }
    }

    /// Returns the shared connection, when it is made: a call on it spends no time connecting.
    #[inline]
    fn made(&self) -> Option<Connection> {
        self.connection.get().filter(|c| c.is_made()).cloned()
    }

    /// Checks whether Redis can be used as set up: connected, authenticated, the database selected, every decision
    /// script loaded; else what failed.
    pub(crate) async fn ready(&self) -> Result<(), Error> {
        let bound = self.connect_timeout.max(Duration::from_secs(5));
        let work = async { script::load(&mut self.establish().await?).await };
        let failed = match tokio::time::timeout(bound, work).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(cause)) => cause.to_string(),
            Err(_) => format!("no answer within {bound:?}"),
        };
        Err(Error::NotReady {
            redis: self.topology.describe(),
            cause: failed,
        })
    }

    /// Opens a connection of its own for pub/sub (see [`Topology::pubsub`]).
    pub(crate) async fn pubsub(&self, attempt: usize) -> redis::RedisResult<redis::aio::PubSub> {
        self.topology.pubsub(attempt).await
    }

    /// Returns whether the breaker is open: Redis is not being called, only probed.
    pub(crate) fn breaker_open(&self) -> bool {
        self.breaker.is_open()
    }

    /// Returns how many permits in flight this node holds.
    pub(crate) fn permits_held(&self) -> u64 {
        self.permits.held() as u64
    }

    /// Counts the decisions made in degraded mode so far (calls).
    pub(crate) fn degraded_count(&self) -> u64 {
        self.fallback.count()
    }

    /// Gives back the memory of the `local` fallback (see [`Fallback::tidy`]).
    pub(crate) fn tidy_local(&self) {
        self.fallback.tidy(self.breaker.is_failing());
    }

    /// Forgets every denial: limits changed, and what Redis said of them no longer holds.
    pub(crate) fn forget_denials(&self) {
        if let Some(cache) = &self.denied {
            cache.clear();
        }
    }

    /// Forgets the denials of limits under `prefix` (of `key` alone, when given): a limit there changed, and what Redis
    /// said of it no longer holds.
    pub(crate) fn forget_denials_of(&self, prefix: &str, key: Option<&str>) {
        let Some(cache) = &self.denied else { return };
        match key {
            Some(key) => cache.remove(KeyRef { prefix, rest: key }),
            None => cache.clear(),
        }
    }

    /// Returns how long work off the decisions' path may take (a heartbeat, an operator's read): the decisions'
    /// deadline, but at least [`PATIENT`].
    pub(crate) fn patience(&self) -> Duration {
        self.deadline.max(PATIENT)
    }

    /// Reads `limit`'s key without charging it (one read-only script call, within [`patience`]), and whether
    /// this node holds a denial of it: what an operator inspects.
    ///
    /// [`patience`]: RedisBackend::patience
    pub(crate) async fn inspect(&self, limit: &CallLimit<'_>) -> Result<(Peek, u64, bool), Error> {
        let connection = self.establish().await.map_err(read_failed)?;
        let (script, command) = script::inspect_command(limit, self.test_now());
        let reply = within(script::send(script, connection, command), self.patience())
            .await
            .map_err(|failed| read_failed(failed.cause))?;
        let (peek, now) = script::read_inspected(&reply, limit).map_err(read_failed)?;
        let denied = self
            .denied
            .as_ref()
            .is_some_and(|cache| cache.holds(limit.key.parts(), self.clock.now()));
        Ok((peek, now, denied))
    }

    /// Returns every live node's report (this one's too), and how long ago each was written: one script call, within
    /// [`patience`](RedisBackend::patience).
    pub(crate) async fn reports(&self) -> Result<Vec<(NodeReport, Duration)>, Error> {
        let mut connection = self.establish().await.map_err(read_failed)?;
        let reports = self.fallback.instances.reports(&mut connection);
        let reports = self.within_patience(reports).await?;
        Ok(reports
            .into_iter()
            .filter_map(|(text, age)| Some((NodeReport::decode(&text)?, age)))
            .collect())
    }

    /// Runs `read`, an operator's read of Redis, within the [`patience`](RedisBackend::patience); its failure an
    /// [`Error::Read`].
    pub(crate) async fn within_patience<T>(
        &self,
        read: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, Error> {
        match tokio::time::timeout(self.patience(), read).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(read_failed(error)),
            Err(_) => Err(read_failed(format!(
                "no answer within {:?}",
                self.patience()
            ))),
        }
    }

    /// Returns the "now" passed to the script, in a test that drives Redis's time.
    fn test_now(&self) -> Option<u64> {
        self.test_clock.as_ref().map(|clock| as_micros(clock.now()))
    }
}

impl fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBackend")
            .field("redis", &self.topology)
            .field("deadline", &self.deadline)
            .field("test_clock", &self.test_clock)
            .finish_non_exhaustive()
    }
}

/// Turns an operator's read that failed into the error it is.
fn read_failed(cause: impl fmt::Display) -> Error {
    Error::Read(cause.to_string())
}
