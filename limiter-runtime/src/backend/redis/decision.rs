//! The order of a decision on Redis, and only here: now (a lease, the deny cache, the breaker, a batch to
//! join), then the round trip within the deadline, then what follows (the breaker told, the deny cache and the
//! permits); a call Redis cannot decide is decided by its limits' `on_error`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::sync::watch;

use super::breaker::{Pass, Transition};
use super::coalesce::{Coalescer, Joining, Member, Waiting};
use super::deny_cache::Lookup;
use super::lease::{HeldLease, Take};
use super::round_trip::{call_key, named, Failed};
use super::script::nonce;
use super::RedisBackend;
use super::{degraded, lease};
use crate::algorithm::Algorithm;
use crate::call::{Answer, Call, CallLimit, Charged, Decided, LeaseTerms, OneOrMany};
use crate::error::BackendError;
use crate::key::KeyRef;
use crate::OnError;

/// What Redis is to decide of a call this process could not decide at once.
pub(crate) struct Later {
    redis: Arc<RedisBackend>,
    permit: Pass,
    /// When the call was asked (this node's clock).
    sent: Duration,
    /// Whether the deny cache is to hear what Redis answers (it may hold this call's denial).
    cached: bool,
    /// This call re-asks Redis for a call whose cached denial ran out.
    probe: bool,
    /// This call (of one leased limit) takes a lease on it, or waits for the one another call is taking.
    lease: Option<LeaseStep>,
    /// The batch the call waits in, joined at once (see [`RedisBackend::wait_in_line`]).
    waiting: Option<Waiting>,
}

impl Later {
    /// The call's place in the batch it waits in, if it waits in one; else this, for a round trip.
    #[inline]
    pub(crate) fn batched(self) -> Result<Batched, Later> {
        match self.waiting {
            Some(waiting) => Ok(Batched {
                waiting,
                redis: self.redis,
                sent: self.sent,
                cached: self.cached,
                probe: self.probe,
            }),
            None => Err(self),
        }
    }
}

/// A call of one limit waiting in a batch ([`Later::batched`]): its place, and what follows its decision (see
/// [`after`](RedisBackend::after)). Polled in place by its caller: nothing boxed, no timer, no channel.
pub(crate) struct Batched {
    waiting: Waiting,
    redis: Arc<RedisBackend>,
    sent: Duration,
    cached: bool,
    probe: bool,
}

impl Batched {
    /// What the batch says of `call` (degraded by the batch's sender when Redis did not answer in time), once
    /// it is decided.
    #[inline]
    pub(crate) fn poll_decided(&mut self, call: &Call<'_>, cx: &mut Context<'_>) -> Poll<Decided> {
        let mut decided = ready!(Pin::new(&mut self.waiting).poll(cx));
        let key = call.limits()[0].key.parts();
        let (sent, cached, probe) = (self.sent, self.cached, self.probe);
        self.redis
            .after(call, key, &mut decided, sent, cached, probe);
        Poll::Ready(decided)
    }
}

/// What a call of one leased limit does about its lease before asking Redis.
pub(super) enum LeaseStep {
    /// Take one, with its terms, giving back what is left of the lease this node held before.
    Take {
        terms: LeaseTerms,
        back: Option<Box<HeldLease>>,
    },
    /// Wait until the call taking one is done (the receiver says when), then spend it.
    Wait(watch::Receiver<()>),
}

impl RedisBackend {
    /// Decides `call` from what this process knows (a lease it holds, a denial Redis already gave, the breaker
    /// open); else what Redis is to decide.
    #[inline]
    pub(crate) fn decide_now(self: &Arc<Self>, call: &Call<'_>) -> Result<Decided, Later> {
        let sent = self.clock.now();
        // A call that can never fit has only a nominal `retry_after`: nothing to keep.
        let fits = call.limits().iter().all(CallLimit::can_fit);
        // A call of one leased limit spends this node's lease, if it holds enough of one.
        let leased = match call.limits() {
            [limit] if fits && limit.preset.is_none() => limit.lease.map(|terms| (limit, terms)),
            _ => None,
        };
        if let Some(answer) = leased.and_then(|(limit, _)| self.leases.spend(limit, sent)) {
            return Ok(Decided {
                admitted: answer.decision.allowed,
                answers: OneOrMany::One(answer),
            });
        }
        let cache = self.denied.as_ref().filter(|_| fits);
        let mut lookup = Lookup::Miss;
        if let Some(cache) = cache.filter(|cache| !cache.is_empty()) {
            let fails = self.breaker.is_failing();
            let joined = call_key(call);
            let weighings = call.limits().iter().map(weighing);
            lookup = cache.get(named(call, &joined), weighings, sent, self.deadline, fails);
        }
        if let Lookup::Denied(decisions) = lookup {
            return Ok(Decided {
                answers: decisions.map(|decision| Answer::uncharged(*decision)),
                admitted: false,
            });
        }
        // A request that already met a failing Redis waits for it no more: one deadline per request.
        if self.breaker.is_failing() && crate::observe::degraded_in_request() {
            return Ok(self.fallback.decide(call, self.breaker.probe_every()));
        }
        let permit = self.breaker.permit();
        if permit == Pass::Skip {
            return Ok(self.fallback.decide(call, self.breaker.probe_every()));
        }
        let lease =
            leased.map(
                |(limit, terms)| match self.leases.take(limit, sent, self.taking_stale()) {
                    Take::Lease(back) => LeaseStep::Take { terms, back },
                    Take::Wait(taken) => LeaseStep::Wait(taken),
                },
            );
        // A probe must reach Redis, to close the breaker or keep it open: it waits for no lease.
        let lease =
            lease.filter(|step| permit == Pass::Call || !matches!(step, LeaseStep::Wait(_)));
        let mut waiting = None;
        if let (Some(coalescer), None, Pass::Call) = (&self.coalescer, &lease, permit) {
            waiting = self.wait_in_line(coalescer, call, sent);
        }
        Err(Later {
            redis: Arc::clone(self),
            permit,
            sent,
            cached: cache.is_some(),
            probe: matches!(lookup, Lookup::Probe),
            lease,
            waiting,
        })
    }

    /// What this node was told of `call` (named `key`) if it is a block still in force: the refusal it
    /// answers while Redis cannot be asked.
    fn known_block(&self, call: &Call<'_>, key: KeyRef<'_>) -> Option<Decided> {
        let cache = self.denied.as_ref()?;
        let weighings = call.limits().iter().map(weighing);
        match cache.get(key, weighings, self.clock.now(), self.deadline, true) {
            Lookup::Denied(decisions) => Some(Decided {
                answers: decisions.map(|decision| Answer::uncharged(*decision)),
                admitted: false,
            }),
            Lookup::Miss | Lookup::Probe => None,
        }
    }

    /// A call of one limit whose line is full waits in the line's batch: joined now, with no round trip of
    /// its own to prepare.
    #[inline]
    pub(super) fn wait_in_line(
        &self,
        coalescer: &Coalescer,
        call: &Call<'_>,
        sent: Duration,
    ) -> Option<Waiting> {
        let [limit] = call.limits() else {
            return None;
        };
        let connection = self.connection.get().filter(|c| c.is_made())?;
        let join = Joining {
            member: || Member {
                call: call.for_store(),
                nonce: nonce(),
            },
            limits: 1,
            until: sent + self.deadline,
        };
        let line = coalescer.line_of(connection.is_cluster(), [&*limit.key].into_iter());
        coalescer.join_waiting(&line, join)
    }

    /// Asks Redis what [`decide_now`](RedisBackend::decide_now) could not answer, within the deadline;
    /// decides in degraded mode when Redis cannot answer in time, and reconciles its late answer.
    pub(crate) async fn decide_later(call: &Call<'_>, later: Later) -> Decided {
        let redis = &*later.redis;
        let mut lease = later.lease;
        // A call's deadline is for Redis to answer it, all of it: what it waited for a lease comes off it.
        let mut budget = redis.deadline;
        if let (Some(LeaseStep::Wait(taken)), [limit]) = (&mut lease, call.limits()) {
            // The call taking the lease is done within its deadline, and this call waits no longer than its
            // own; then it spends the lease, or, when it brings nothing, asks Redis with what is left of it.
            let _ = Box::pin(tokio::time::timeout(redis.deadline, taken.changed())).await;
            let now = redis.clock.now();
            if let Some(answer) = redis.leases.spend(limit, now) {
                return Decided {
                    admitted: answer.decision.allowed,
                    answers: OneOrMany::One(answer),
                };
            }
            budget = budget.saturating_sub(now.saturating_sub(later.sent));
        }
        let joined = call_key(call);
        let key = named(call, &joined);
        let takes_lease = matches!(lease, Some(LeaseStep::Take { .. }));
        // Making the connection spends no decision's deadline: it has a bound of its own. What is rare (making
        // it, taking a lease) is boxed, so that the common call's future stays small.
        let connection = match redis.made() {
            Some(connection) => Ok(connection),
            None => Box::pin(redis.establish()).await,
        };
        let asked = match connection {
            Ok(connection) => match lease {
                Some(LeaseStep::Take { terms, back }) => {
                    Box::pin(later.redis.take_lease(call, later.sent, terms, back)).await
                }
                _ => {
                    let redis = &later.redis;
                    redis.ask(call, later.permit, budget, connection).await
                }
            },
            Err(cause) => Err(Failed::from(cause)),
        };
        let mut decided = match asked {
            // A batch it waited in, that Redis did not answer in time: decided (and counted) degraded by the
            // batch's sender.
            Ok(decided) if decided.answers.iter().any(|a| a.decision.degraded) => decided,
            Ok(decided) => {
                redis.answered(later.permit, key);
                decided
            }
            Err(failed) => {
                if takes_lease {
                    redis.leases.abandon(call.limits()[0].key.parts());
                }
                let on_error = call.limits().iter().map(|limit| limit.on_error);
                let retry = redis.failed(later.permit, key, on_error, &failed.cause);
                // A block this node was told of holds to its end whatever `on_error` says.
                let decided = match redis.known_block(call, key) {
                    Some(blocked) => blocked,
                    None => redis.fallback.decide(call, retry),
                };
                if let Some(late) = failed.late {
                    let call = call.detached();
                    let refused = !decided.admitted;
                    let redis = Arc::clone(&later.redis);
                    tokio::spawn(async move { redis.reconcile(late, &call, refused).await });
                }
                decided
            }
        };
        redis.after(
            call,
            key,
            &mut decided,
            later.sent,
            later.cached,
            later.probe,
        );
        decided
    }

    /// Redis answered a round trip: the breaker hears it (and, if Redis was failing, the log).
    pub(super) fn answered(&self, permit: Pass, key: KeyRef<'_>) {
        if self.breaker.succeeded(permit) == Transition::Recovered {
            self.fallback.recovered();
            tracing::warn!(key = %key, "rate limiter: Redis answers again; deciding in Redis");
        }
    }

    /// A round trip failed with `cause`. A fault of the call's own keys ([`BackendError::is_the_keys`]) is an
    /// answer from Redis, which the breaker hears as one: one key's fault never turns Redis off for every
    /// other key. Any other failure counts toward the breaker. Either way the call is then decided by its
    /// limits' `on_error`: returns how long a `closed` refusal tells it to wait.
    pub(super) fn failed(
        &self,
        permit: Pass,
        key: KeyRef<'_>,
        on_error: impl Iterator<Item = OnError>,
        cause: &BackendError,
    ) -> Duration {
        if cause.is_the_keys() {
            self.answered(permit, key);
            self.fallback.log_key_fault(&key.to_string(), cause);
        } else {
            let transition = self.breaker.failed(permit);
            degraded::log_failure(&key.to_string(), on_error, cause, transition);
        }
        self.breaker.probe_every()
    }

    /// What follows a decision Redis made (or the failure policy made for it): a leased limit's refusal holds
    /// no longer than a lease's life, and the deny cache hears the answer.
    pub(super) fn after(
        &self,
        call: &Call<'_>,
        key: KeyRef<'_>,
        decided: &mut Decided,
        sent: Duration,
        cached: bool,
        probe: bool,
    ) {
        if let ([limit], [answer]) = (call.limits(), &mut *decided.answers) {
            if let Some(terms) = limit.lease {
                // Units other nodes hold in leases come back within a lease's time to live (and a sweep): a
                // refusal of a leased limit holds no longer.
                let back = lease::back_within(terms);
                answer.decision.retry_after = answer.decision.retry_after.min(back);
            }
        }
        if decided.admitted {
            // The permits in flight it took are this node's to renew while they are held.
            for (limit, answer) in call.limits().iter().zip(decided.answers.iter()) {
                if limit.algorithm == Algorithm::InFlight && answer.charged == Charged::Store {
                    let (ttl, mark) = (limit.charge.window, answer.receipt.mark);
                    self.permits.hold(&limit.key, ttl, mark);
                }
            }
        }
        if let Some(cache) = self.denied.as_ref().filter(|_| cached) {
            if decided.admitted && !probe {
                // The common answer: the call's counts changed, and any denial of it is stale.
                cache.remove(key);
                return;
            }
            // What Redis said (a degraded decision: nothing, and the cache forgets the call).
            let decisions: Vec<_> = decided.decisions().collect();
            let weighings = call.limits().iter().map(weighing);
            cache.answered(key, weighings, &decisions, decided.admitted, sent, probe);
        }
    }
}

/// What the deny cache tells a call's limits apart by: each one's cost and terms (max, window, burst, wait, a
/// calendar's current period), so that a denial made under other terms (an override since, the same key in
/// another zone or on another billing day) is never taken for this call's.
fn weighing(limit: &CallLimit<'_>) -> u64 {
    use std::hash::BuildHasher;
    let charge = &limit.charge;
    let terms = (charge.cost, charge.max, charge.window, charge.burst);
    foldhash::fast::FixedState::with_seed(0).hash_one((terms, charge.max_wait, charge.ends[1]))
}
