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
mod connection;
mod degraded;
mod deny_cache;
mod instances;
mod script;

use std::fmt::{self, Write as _};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use self::breaker::{Breaker, Permit, Transition};
use self::deny_cache::{DenyCache, Lookup};
use self::script::{nonce_text, Limit};
use super::{admitted, Answer, Ask, Charged, MemoryStore};
use crate::algorithm::{Algorithm, Charge, Outcome, Receipt};
use crate::clock::{as_micros, Clock};
use crate::error::BackendError;
use crate::key::{KeyRef, StoreKey};
use crate::{Decision, OnError};

pub(crate) use self::breaker::BreakerConfig;
pub(crate) use self::connection::{Connection, Topology};
pub(crate) use self::instances::{spawn_heartbeat, Instances};
pub(crate) use self::script::LuaScript;

/// How long one connection attempt may take: the deadline, but at least 250 ms, so that a tight deadline still
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
    /// Calls Redis said are limited, answered here until their `retry_after` (unless switched off).
    denied: Option<DenyCache>,
    /// Calls decided in degraded mode.
    degraded: AtomicU64,
}

/// What a call Redis must decide settled before asking. Owned, so that asking can outlive the borrows of the
/// call it was settled for.
pub(crate) struct Question<const N: usize> {
    limits: [Owned; N],
    /// Names the call in the deny cache: its one limit's key, or its limits' keys joined.
    call: StoreKey,
    /// Names the call's sliding-log members.
    nonce: u64,
    permit: Permit,
    /// Whether the deny cache is to hear what Redis answers (it may hold this call's denial).
    cached: bool,
    sent: Duration,
    /// This call re-asks Redis for a call whose cached denial ran out.
    probe: bool,
}

/// One limit of a [`Question`].
struct Owned {
    algorithm: Algorithm,
    key: StoreKey,
    charge: Charge,
    vetoes: bool,
    on_error: OnError,
    preset: Option<Outcome>,
}

impl Owned {
    fn ask(&self) -> Ask<'_> {
        Ask {
            algorithm: self.algorithm,
            key: self.key.parts(),
            charge: self.charge,
            vetoes: self.vetoes,
            on_error: self.on_error,
            preset: self.preset,
        }
    }

    fn limit(&self) -> Limit<'_> {
        Limit {
            algorithm: self.algorithm,
            key: &self.key,
            charge: &self.charge,
            vetoes: self.vetoes,
        }
    }
}

impl<const N: usize> Question<N> {
    /// The store key of each limit.
    pub(crate) fn keys(&self) -> [KeyRef<'_>; N] {
        self.limits.each_ref().map(|owned| owned.key.parts())
    }
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
        let cache = self.denied.as_ref().filter(|_| fits);
        let mut lookup = Lookup::Miss;
        if let Some(cache) = cache.filter(|cache| !cache.is_empty()) {
            lookup = match asks.as_slice() {
                [one] => cache.get(one.key, costs, sent, self.deadline),
                _ => cache.get(joined(asks).parts(), costs, sent, self.deadline),
            };
        }
        if let Lookup::Denied(decisions) = lookup {
            return Ok(decisions.map(Answer::uncharged));
        }
        let permit = self.breaker.permit();
        if permit == Permit::Skip {
            return Ok(self.degraded(asks));
        }
        Err(Box::new(Question {
            limits: asks.each_ref().map(|ask| Owned {
                algorithm: ask.algorithm,
                key: ask.key.to_store_key(),
                charge: ask.charge,
                vetoes: ask.vetoes,
                on_error: ask.on_error,
                preset: ask.preset,
            }),
            call: call_key(asks),
            nonce: nonce(),
            permit,
            cached: cache.is_some(),
            sent,
            probe: matches!(lookup, Lookup::Probe),
        }))
    }

    /// Asks Redis, within the deadline; decides in degraded mode when it cannot answer. Each limit's answer,
    /// and whether the call was admitted.
    pub(crate) async fn ask<const N: usize>(&self, question: &Question<N>) -> ([Answer; N], bool) {
        let asked = tokio::time::timeout(self.deadline, self.decide(question)).await;
        let answers = match asked.unwrap_or(Err(BackendError::Timeout(self.deadline))) {
            Ok(answers) => {
                if self.breaker.succeeded(question.permit) == Transition::Recovered {
                    tracing::warn!(
                        key = &*question.call,
                        "rate limiter: Redis answers again; deciding in Redis"
                    );
                }
                answers
            }
            Err(cause) => {
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

    /// Decides `question` in Redis: one script call, or, on a cluster whose slots split the call's keys, one
    /// per slot, giving back what the admitting slots charged when another's limits deny the call.
    async fn decide<const N: usize>(
        &self,
        question: &Question<N>,
    ) -> Result<[Answer; N], BackendError> {
        let mut connection = self.connection()?;
        let test_now = self.test_now();
        let nonce = nonce_text(question.nonce);
        // The limits Redis is asked about (not those decided before it was).
        let asked: Vec<usize> = (0..N)
            .filter(|&i| question.limits[i].preset.is_none())
            .collect();
        let keys: Vec<&str> = asked.iter().map(|&i| &*question.limits[i].key).collect();
        let groups = connection
            .slots_apart(&keys)
            .unwrap_or_else(|| vec![(0..asked.len()).collect()]);
        let mut outcomes = question
            .limits
            .each_ref()
            .map(|l| l.preset.unwrap_or(Outcome::admit(l.charge.max)));
        let mut now = 0;
        let mut charged_groups = Vec::new();
        let mut admitted = true;
        for group in &groups {
            let limits: Vec<Limit<'_>> = group
                .iter()
                .map(|&g| question.limits[asked[g]].limit())
                .collect();
            let (group_admitted, group_outcomes, at) =
                script::decide(&mut connection, &limits, &nonce, test_now).await?;
            now = now.max(at);
            for (&g, outcome) in group.iter().zip(group_outcomes) {
                outcomes[asked[g]] = outcome;
            }
            admitted &= group_admitted;
            if group_admitted {
                charged_groups.push(group);
            }
        }
        if !admitted && groups.len() > 1 {
            // The slots that admitted the call give back what it charged them, before it returns.
            for group in charged_groups {
                let charged: Vec<(Limit<'_>, u64, Receipt)> = group
                    .iter()
                    .map(|&g| asked[g])
                    .filter(|&i| outcomes[i].allowed)
                    .map(|i| {
                        (
                            question.limits[i].limit(),
                            question.limits[i].charge.cost,
                            outcomes[i].receipt,
                        )
                    })
                    .collect();
                script::refund(&mut connection, &charged, test_now).await?;
                for &g in group {
                    let i = asked[g];
                    if outcomes[i].allowed {
                        outcomes[i].remaining += question.limits[i].charge.cost;
                    }
                }
            }
        }
        let decided = |i: usize| {
            let (limit, outcome) = (&question.limits[i], outcomes[i]);
            let charged = if admitted && outcome.allowed && limit.preset.is_none() {
                Charged::Store
            } else {
                Charged::Nothing
            };
            Answer {
                decision: Decision::new(&limit.charge, outcome, now, false),
                receipt: outcome.receipt,
                charged,
            }
        };
        Ok(std::array::from_fn(decided))
    }

    /// Gives back what `refunds` say, the charges of the call `call` names: one script call (per slot on a
    /// cluster), within the deadline. A refund that fails is dropped (the limit then keeps the charge: it
    /// admits less, never more), and logged.
    pub(crate) async fn refund(&self, refunds: Vec<Refund>, call: StoreKey) {
        let limits: Vec<(Limit<'_>, u64, Receipt)> = refunds.iter().map(Refund::limit).collect();
        let test_now = self.test_now();
        let given = async {
            let mut connection = self.connection()?;
            let keys: Vec<&str> = limits.iter().map(|(limit, _, _)| limit.key).collect();
            match connection.slots_apart(&keys) {
                None => script::refund(&mut connection, &limits, test_now).await,
                Some(groups) => {
                    for group in groups {
                        let part: Vec<_> = group.iter().map(|&i| limits[i].clone()).collect();
                        script::refund(&mut connection, &part, test_now).await?;
                    }
                    Ok(())
                }
            }
        };
        match tokio::time::timeout(self.deadline, given).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::debug!(%error, "rate limiter: a charge could not be given back")
            }
            Err(_) => tracing::debug!("rate limiter: giving a charge back timed out"),
        }
        if let Some(cache) = &self.denied {
            // The call's limits have room again: what Redis said of it before no longer holds.
            cache.remove(call.parts());
        }
    }

    /// Gives back what a degraded `on_error = local` decision charged this process.
    pub(crate) fn refund_local(&self, ask: &Ask<'_>, units: u64, receipt: &Receipt) {
        self.local.refund(ask, units, receipt);
    }
}

/// A charge to give back, owned: its limit, how many units, and what the admission charged.
pub(crate) struct Refund {
    algorithm: Algorithm,
    key: StoreKey,
    charge: Charge,
    units: u64,
    receipt: Receipt,
}

impl Refund {
    pub(crate) fn new(ask: &Ask<'_>, units: u64, receipt: Receipt) -> Refund {
        Refund {
            algorithm: ask.algorithm,
            key: ask.key.to_store_key(),
            charge: ask.charge,
            units,
            receipt,
        }
    }

    fn limit(&self) -> (Limit<'_>, u64, Receipt) {
        let limit = Limit {
            algorithm: self.algorithm,
            key: &self.key,
            charge: &self.charge,
            vetoes: true,
        };
        (limit, self.units, self.receipt)
    }
}

/// What names a call in the deny cache: its one limit's store key, or its limits' keys joined.
pub(crate) fn call_key<const N: usize>(asks: &[Ask<'_>; N]) -> StoreKey {
    match asks.as_slice() {
        [one] => one.key.to_store_key(),
        _ => joined(asks),
    }
}

/// The deny cache's key of a call of several limits: each limit's store key, length first, so that no two
/// calls share one; `-` for a limit decided before any store was asked.
fn joined<const N: usize>(asks: &[Ask<'_>; N]) -> StoreKey {
    let mut key = StoreKey::new("", format_args!(""));
    for ask in asks {
        // Writing into a key cannot fail.
        let _ = match ask.preset {
            Some(_) => key.write_str("-|"),
            None => write!(key, "{}:{}|", ask.key.len(), ask.key),
        };
    }
    key
}

/// A number no other call of this process (nor, but by a chance of 2^-64, of another) is given: it names the
/// call's sliding-log members, so that they can be given back.
fn nonce() -> u64 {
    use std::cell::Cell;
    use std::hash::{BuildHasher, RandomState};
    thread_local! {
        static NEXT: Cell<u64> = Cell::new(RandomState::new().hash_one(std::thread::current().id()));
    }
    // A bijection of a counter (SplitMix64's finaliser): distinct counters, distinct nonces.
    let mut z = NEXT.with(|next| {
        let n = next.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        next.set(n);
        n
    });
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
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
