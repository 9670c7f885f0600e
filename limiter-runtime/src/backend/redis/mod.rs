//! The Redis backend: one script call per decision on one shared, reconnecting connection, and what keeps
//! each decision within its deadline when Redis fails.
//!
//! - Every Redis decision has a deadline; missing it is a failure, never retried (it may have been applied).
//! - The breaker stops calling Redis after repeated failures, so a dead Redis costs no latency, and probes for
//!   recovery one call at a time.
//! - A rule's [`OnError`] says what decides meanwhile; `local` divides its limit by the live instances.
//! - The deny cache answers, until their `retry_after`, keys Redis said are limited.

mod breaker;
mod connection;
mod deny_cache;
mod instances;
mod script;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use self::breaker::{Breaker, Permit, Transition};
use self::deny_cache::{DenyCache, Lookup};
use super::MemoryStore;
use crate::algorithm::{Algorithm, Charge, Outcome};
use crate::clock::{as_micros, Clock};
use crate::error::BackendError;
use crate::key::{KeyRef, StoreKey};
use crate::rule::share;
use crate::{Decision, OnError};

pub(crate) use self::breaker::BreakerConfig;
pub(crate) use self::connection::{Connection, Topology};
pub(crate) use self::instances::{spawn_heartbeat, Instances};
pub(crate) use self::script::LuaScript;

/// How one connection attempt may take: the deadline, but at least 250 ms, so that a tight deadline still
/// lets a connection be made (the first call fails, a later one finds the connection up).
pub(crate) fn connect_timeout(deadline: Duration) -> Duration {
    deadline.max(Duration::from_millis(250))
}

/// Redis, and what decides when it cannot.
pub(crate) struct RedisBackend {
    topology: Box<Topology>,
    /// Created on the first decision, inside the caller's Tokio runtime; it connects lazily and reconnects in
    /// the background after a failure.
    connection: OnceLock<Connection>,
    deadline: Duration,
    /// Test-only: pass "now" from this clock instead of reading Redis `TIME`.
    test_clock: Option<Arc<dyn Clock>>,
    /// This process's clock: the time of the decisions made without Redis.
    clock: Arc<dyn Clock>,
    breaker: Breaker,
    /// The in-process limiter of `on_error = local`.
    local: MemoryStore,
    pub(crate) instances: Instances,
    /// Keys Redis said are limited, answered here until their `retry_after` (unless switched off).
    denied: Option<DenyCache>,
    /// Decisions made in degraded mode.
    degraded: AtomicU64,
}

/// What a decision Redis must make settled before asking. Owned, so that asking can outlive the borrows of
/// the call it was settled for.
pub(crate) struct Question {
    pub(crate) algorithm: Algorithm,
    pub(crate) key: StoreKey,
    pub(crate) charge: Charge,
    pub(crate) on_error: OnError,
    permit: Permit,
    /// Whether the deny cache is to hear what Redis answers (it may hold this call's denial).
    cached: bool,
    sent: Duration,
    /// This call re-asks Redis for a key whose cached denial ran out.
    probe: bool,
}

impl RedisBackend {
    pub(crate) fn new(
        topology: Topology,
        deadline: Duration,
        test_clock: Option<Arc<dyn Clock>>,
        clock: Arc<dyn Clock>,
        breaker: BreakerConfig,
        instances: Instances,
        deny_cache: bool,
    ) -> RedisBackend {
        RedisBackend {
            topology: Box::new(topology),
            connection: OnceLock::new(),
            deadline,
            test_clock,
            local: MemoryStore::new(clock.clone()),
            clock,
            breaker: Breaker::new(breaker),
            instances,
            denied: deny_cache.then(DenyCache::default),
            degraded: AtomicU64::new(0),
        }
    }

    /// The bound on one decision.
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

    /// A connection of its own for pub/sub (see [`Topology::pubsub`]).
    pub(crate) async fn pubsub(&self, attempt: usize) -> redis::RedisResult<redis::aio::PubSub> {
        self.topology.pubsub(attempt).await
    }

    /// Decisions made in degraded mode so far.
    pub(crate) fn degraded_count(&self) -> u64 {
        self.degraded.load(Ordering::Relaxed)
    }

    /// Whether the breaker is open: Redis is not being called, only probed.
    pub(crate) fn breaker_open(&self) -> bool {
        self.breaker.is_open()
    }

    /// Limits changed: what Redis said of them no longer holds.
    pub(crate) fn forget_denials(&self) {
        if let Some(cache) = &self.denied {
            cache.clear();
        }
    }

    /// Answers a call from what this process knows (a denial Redis already gave, the breaker open); else
    /// the question to ask Redis.
    pub(crate) fn try_answer(
        &self,
        algorithm: Algorithm,
        key: KeyRef<'_>,
        charge: Charge,
        on_error: OnError,
    ) -> Result<Decision, Box<Question>> {
        let sent = self.clock.now();
        let cache = self.denied.as_ref().filter(|_| charge.can_fit(algorithm));
        let lookup = cache.map_or(Lookup::Miss, |cache| {
            cache.get(key, charge.cost, sent, self.deadline)
        });
        if let Lookup::Denied(decision) = lookup {
            return Ok(decision);
        }
        let permit = self.breaker.permit();
        if permit == Permit::Skip {
            return Ok(self.degraded(algorithm, key, &charge, on_error));
        }
        Err(Box::new(Question {
            algorithm,
            key: key.to_store_key(),
            charge,
            on_error,
            permit,
            cached: cache.is_some(),
            sent,
            probe: matches!(lookup, Lookup::Probe),
        }))
    }

    /// Asks Redis, within the deadline; decides in degraded mode when it cannot answer.
    pub(crate) async fn ask(&self, question: &Question) -> Decision {
        let Question {
            algorithm,
            ref key,
            ref charge,
            on_error,
            permit,
            cached,
            sent,
            probe,
        } = *question;
        let answer = match self.connection() {
            Ok(mut connection) => {
                let test_now = self.test_clock.as_ref().map(|clock| as_micros(clock.now()));
                let call = script::decide(&mut connection, algorithm, key, charge, test_now);
                match tokio::time::timeout(self.deadline, call).await {
                    Ok(answer) => answer,
                    Err(_) => Err(BackendError::Timeout(self.deadline)),
                }
            }
            Err(error) => Err(error),
        };
        let decision = match answer {
            Ok((outcome, at)) => {
                if self.breaker.succeeded(permit) == Transition::Recovered {
                    tracing::warn!(
                        key = &**key,
                        "rate limiter: Redis answers again; deciding in Redis"
                    );
                }
                Decision::new(charge, outcome, at, false)
            }
            Err(cause) => {
                failed(key, on_error, &cause, self.breaker.failed(permit));
                self.degraded(algorithm, key.parts(), charge, on_error)
            }
        };
        if let Some(cache) = self.denied.as_ref().filter(|_| cached) {
            // What Redis said (a degraded decision: nothing, and the cache forgets the key).
            cache.answered(key.parts(), charge.cost, &decision, sent, probe);
        }
        decision
    }

    /// A decision without Redis, by the rule's [`OnError`] policy (counted).
    fn degraded(
        &self,
        algorithm: Algorithm,
        key: KeyRef<'_>,
        charge: &Charge,
        on_error: OnError,
    ) -> Decision {
        self.degraded.fetch_add(1, Ordering::Relaxed);
        let now = self.clock.now_micros();
        match on_error {
            OnError::Open => Decision::new(charge, Outcome::admit(charge.max), now, true),
            OnError::Closed => {
                let retry_after = as_micros(self.breaker.probe_every());
                Decision::new(charge, Outcome::denied(0, retry_after, 0), now, true)
            }
            OnError::Local => {
                // This node's share of the limit, among the runtimes last seen sharing it.
                let instances = self.instances.live();
                let local = Charge {
                    max: share(charge.max, instances),
                    burst: share(charge.burst, instances),
                    ..*charge
                };
                let (outcome, at) = self.local.decide(algorithm, key, &local);
                Decision::new(&local, outcome, at, true)
            }
        }
    }
}

/// Logs a failure: the first after a healthy period at warn level (with the key, the cause and the policy
/// deciding meanwhile), the rest at debug.
fn failed(key: &str, on_error: OnError, cause: &BackendError, transition: Transition) {
    if transition == Transition::FirstFailure {
        tracing::warn!(
            key,
            %cause,
            %on_error,
            "rate limiter: Redis failed; deciding in degraded mode until it answers again (fail {on_error})",
        );
    } else {
        tracing::debug!(key, %cause, "rate limiter: Redis failed");
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
