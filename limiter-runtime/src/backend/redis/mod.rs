//! The Redis backend: one script call per decision (all of a call's limits at once) on one shared,
//! reconnecting connection, and what keeps each decision within its deadline when Redis fails.
//!
//! - Every Redis decision has a deadline; missing it is a failure, never retried (it may have been applied).
//! - The breaker stops calling Redis after repeated failures, so a dead Redis costs no latency, and probes for
//!   recovery one call at a time.
//! - A limit's [`OnError`](crate::OnError) says what decides meanwhile (`degraded`).
//! - The deny cache answers, until their `retry_after`, calls Redis said are limited.
//!
//! On one server (and Sentinel's master) a call's limits are one atomic script call. On a cluster, the keys of
//! one slot go together, slot after slot; when one slot's limits deny the call, what the others charged is
//! given back before the call returns (meanwhile those charges count: the cluster may briefly admit less,
//! never more).

mod breaker;
mod call;
mod cluster;
mod coalesce;
mod connection;
mod degraded;
mod deny_cache;
mod instances;
mod lease;
mod script;
mod server;
mod tls;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use self::breaker::{Breaker, Permit, Transition};
use self::call::{joined, nonce, LeaseStep, Owned};
use self::coalesce::Coalescer;
use self::deny_cache::{DenyCache, Lookup};
use self::lease::{Leases, Take};
use super::{admitted, Answer, Ask, MemoryStore};
use crate::clock::{as_micros, Clock};
use crate::error::{BackendError, Error};
use crate::key::KeyRef;
use crate::overrides::Change;

pub(crate) use self::breaker::BreakerConfig;
pub(crate) use self::call::{call_key, Question, Refund};
pub(crate) use self::connection::{Connection, Topology};
pub(crate) use self::instances::{spawn_heartbeat, Instances};
pub(crate) use self::lease::spawn_lease_sweep;
pub(crate) use self::script::LuaScript;
pub(crate) use self::tls::{redacted, Tls};

/// How long one connection attempt may take: the deadline, but at least 250 ms, so that a tight deadline still
/// lets a connection be made (the first call fails, a later one finds the connection up).
pub(crate) fn connect_timeout(deadline: Duration) -> Duration {
    deadline.max(Duration::from_millis(250))
}

/// What spares Redis calls: the deny cache, and coalescing (both on by default).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sparing {
    pub(crate) deny_cache: bool,
    pub(crate) coalesce: bool,
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
    /// The in-process limiter of `on_error = local` (on this process's clock).
    pub(crate) local: MemoryStore,
    pub(crate) instances: Instances,
    /// Calls Redis said are limited, answered here until their `retry_after` (unless switched off).
    denied: Option<DenyCache>,
    /// The lines of calls waiting to go to Redis together (unless switched off).
    coalescer: Option<Arc<Coalescer>>,
    /// The leases this node holds.
    pub(crate) leases: Leases,
    /// Calls decided in degraded mode.
    degraded: AtomicU64,
    /// When Redis last decided again after failing (µs on this process's clock; 0: not since the local
    /// fallback was last forgotten).
    recovered_at: AtomicU64,
}

/// How long the `local` fallback's state is kept once Redis decides again: its counts bridge a Redis that
/// flaps (fails again at once), and go once Redis has decided for this long.
const LOCAL_KEPT: Duration = Duration::from_secs(60);

impl RedisBackend {
    pub(crate) fn new(
        topology: Topology,
        deadline: Duration,
        test_clock: Option<Arc<dyn Clock>>,
        local: MemoryStore,
        breaker: BreakerConfig,
        instances: Instances,
        sparing: Sparing,
    ) -> RedisBackend {
        RedisBackend {
            topology: Box::new(topology),
            connection: OnceLock::new(),
            deadline,
            test_clock,
            clock: Arc::clone(local.clock()),
            local,
            breaker: Breaker::new(breaker),
            instances,
            denied: sparing.deny_cache.then(DenyCache::default),
            coalescer: sparing.coalesce.then(Arc::default),
            leases: Leases::default(),
            degraded: AtomicU64::new(0),
            recovered_at: AtomicU64::new(0),
        }
    }

    /// Gives back the memory of the `local` fallback: keys whose limit is full again at once, and every key
    /// once Redis has decided again for [`LOCAL_KEPT`]. (The heartbeat calls it on each beat.)
    pub(crate) fn tidy_local(&self) {
        if self.local.keys() == 0 {
            return;
        }
        self.local.sweep();
        let since = self.recovered_at.load(Ordering::Relaxed);
        let now = self.clock.now_micros();
        if since != 0
            && !self.breaker.is_failing()
            && now.saturating_sub(since) >= as_micros(LOCAL_KEPT)
        {
            self.local.clear();
            self.recovered_at.store(0, Ordering::Relaxed);
        }
    }

    /// Where Redis is, without a password.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn describe(&self) -> String {
        self.topology.describe()
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

    /// Makes the shared connection if none is (connects, authenticates, selects the database), within the
    /// connection's own bound: a decision's deadline is for Redis to decide, not to be connected to.
    pub(crate) async fn establish(&self) -> Result<(), BackendError> {
        let connection = self.connection()?;
        if connection.is_made() {
            return Ok(());
        }
        let bound = connect_timeout(self.deadline);
        match tokio::time::timeout(bound, connection.establish()).await {
            Ok(made) => Ok(made?),
            Err(_) => Err(BackendError::Connect(bound)),
        }
    }

    /// Whether Redis can be used as set up: connected, authenticated, the database selected, every decision
    /// script loaded; else what failed.
    pub(crate) async fn ready(&self) -> Result<(), Error> {
        let bound = connect_timeout(self.deadline).max(Duration::from_secs(5));
        let work = async {
            self.establish().await?;
            script::load(&mut self.connection()?).await
        };
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

    /// A connection of its own for pub/sub (see [`Topology::pubsub`]).
    pub(crate) async fn pubsub(&self, attempt: usize) -> redis::RedisResult<redis::aio::PubSub> {
        self.topology.pubsub(attempt).await
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

    /// What Redis said under a limit that `change` changes no longer holds: forgets the denials of its key, or
    /// of every key under its prefix. The switch changes no limit.
    pub(crate) fn forget_denials_of(&self, change: &Change) {
        let (Some(cache), Change::Set(o) | Change::Clear(o)) = (&self.denied, change) else {
            return;
        };
        match o.target_key() {
            Some(key) => cache.remove(KeyRef {
                prefix: o.target_prefix(),
                rest: key,
            }),
            None => cache.clear(),
        }
    }

    /// "Now" passed to the script, in a test that drives Redis's time.
    fn test_now(&self) -> Option<u64> {
        self.test_clock.as_ref().map(|clock| as_micros(clock.now()))
    }

    /// Answers a call from what this process knows (a denial Redis already gave, the breaker open); else
    /// the question to ask Redis.
    pub(crate) fn try_answer<const N: usize>(
        &self,
        asks: &[Ask<'_>; N],
    ) -> Result<[Answer; N], Box<Question<N>>> {
        let sent = self.clock.now();
        let costs = asks.each_ref().map(|ask| ask.charge.cost);
        // A call that can never fit has only a nominal `retry_after`: nothing to keep.
        let fits = asks.iter().all(|ask| ask.charge.can_fit(ask.algorithm));
        // A call of one leased limit spends this node's lease, if it holds enough of one.
        let leased = match asks.as_slice() {
            [ask] if fits && ask.preset.is_none() => ask.lease.map(|terms| (ask, terms)),
            _ => None,
        };
        if let Some(answer) = leased.and_then(|(ask, _)| self.leases.spend(ask, sent)) {
            return Ok(std::array::from_fn(|_| answer));
        }
        let cache = self.denied.as_ref().filter(|_| fits);
        let mut lookup = Lookup::Miss;
        if let Some(cache) = cache.filter(|cache| !cache.is_empty()) {
            let fails = self.breaker.is_failing();
            lookup = match asks.as_slice() {
                [one] => cache.get(one.key, costs, sent, self.deadline, fails),
                _ => cache.get(joined(asks).parts(), costs, sent, self.deadline, fails),
            };
        }
        if let Lookup::Denied(decisions) = lookup {
            return Ok(decisions.map(Answer::uncharged));
        }
        let permit = self.breaker.permit();
        if permit == Permit::Skip {
            return Ok(self.degraded(asks));
        }
        let lease =
            leased.map(
                |(ask, terms)| match self.leases.take(ask, sent, self.taking_stale()) {
                    Take::Lease(back) => LeaseStep::Take { terms, back },
                    Take::Wait(taken) => LeaseStep::Wait(taken),
                },
            );
        // A probe must reach Redis, to close the breaker or keep it open: it waits for no lease.
        let lease =
            lease.filter(|step| permit == Permit::Call || !matches!(step, LeaseStep::Wait(_)));
        Err(Box::new(Question {
            limits: asks.each_ref().map(|ask| Owned {
                algorithm: ask.algorithm,
                key: ask.key.to_store_key(),
                charge: ask.charge,
                vetoes: ask.vetoes,
                on_error: ask.on_error,
                preset: ask.preset,
                lease: ask.lease,
            }),
            call: call_key(asks),
            nonce: nonce(),
            permit,
            cached: cache.is_some(),
            sent,
            probe: matches!(lookup, Lookup::Probe),
            lease,
        }))
    }

    /// Asks Redis, within the deadline; decides in degraded mode when it cannot answer. Each limit's answer,
    /// and whether the call was admitted.
    pub(crate) async fn ask<const N: usize>(&self, question: &Question<N>) -> ([Answer; N], bool) {
        if let (Some(LeaseStep::Wait(taken)), [owned]) =
            (&question.lease, question.limits.as_slice())
        {
            // The call taking the lease is done within its deadline, and this call waits no longer than its
            // own; then it spends the lease, or, when it brings nothing, asks Redis after all.
            let mut taken = taken.clone();
            let _ = tokio::time::timeout(self.deadline, taken.changed()).await;
            let ask = owned.ask();
            if let Some(answer) = self.leases.spend(&ask, self.clock.now()) {
                return (std::array::from_fn(|_| answer), answer.decision.allowed);
            }
        }
        // Making the connection spends no decision's deadline: it has a bound of its own.
        let asked = match self.establish().await {
            Ok(()) => tokio::time::timeout(self.deadline, self.decide(question))
                .await
                .unwrap_or(Err(BackendError::Timeout(self.deadline))),
            Err(cause) => Err(cause),
        };
        let answers = match asked {
            Ok(answers) => {
                if self.breaker.succeeded(question.permit) == Transition::Recovered {
                    let now = self.clock.now_micros().max(1);
                    self.recovered_at.store(now, Ordering::Relaxed);
                    tracing::warn!(
                        key = &*question.call,
                        "rate limiter: Redis answers again; deciding in Redis"
                    );
                }
                answers
            }
            Err(cause) => {
                if let Some(LeaseStep::Take { .. }) = question.lease {
                    self.leases.abandon(question.limits[0].key.parts());
                }
                let transition = self.breaker.failed(question.permit);
                degraded::log_failure(
                    &question.call,
                    question.limits.each_ref().map(|l| l.on_error),
                    &cause,
                    transition,
                );
                self.degraded(&question.limits.each_ref().map(Owned::ask))
            }
        };
        let mut answers = answers;
        if let [owned] = question.limits.as_slice() {
            if let (Some(terms), [answer]) = (owned.lease, answers.as_mut_slice()) {
                // Units other nodes hold in leases come back within a lease's time to live (and a sweep):
                // a refusal of a leased limit holds no longer.
                let back = lease::back_within(terms);
                answer.decision.retry_after = answer.decision.retry_after.min(back);
            }
        }
        let decisions = answers.map(|answer| answer.decision);
        let asks = question.limits.each_ref().map(Owned::ask);
        let admitted = admitted(&asks, |i| decisions[i].allowed);
        if let Some(cache) = self.denied.as_ref().filter(|_| question.cached) {
            // What Redis said (a degraded decision: nothing, and the cache forgets the call).
            let costs = question.limits.each_ref().map(|limit| limit.charge.cost);
            let (sent, probe) = (question.sent, question.probe);
            cache.answered(
                question.call.parts(),
                costs,
                &decisions,
                admitted,
                sent,
                probe,
            );
        }
        (answers, admitted)
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
