//! The order of a decision on Redis, written here alone, for a lone call and a batch alike: now (a lease, the
//! deny cache, the breaker, a batch to join), then the round trip within the deadline, then what follows (the
//! breaker told, the deny cache and the permits); a call, or a batch's member, that Redis cannot decide is
//! decided by its limits' `on_error`, and Redis's late answer reconciled.
//!
//! The walk of [`Limit::check`](crate::Limit::check) on one token bucket, from the public call to Redis and
//! back. Each file is entered once per half (the store's accessors in `redis/mod.rs` aside), and none calls
//! back into a file that called it:
//!
//! 1. Now, when called: `limiter/limit.rs` (the call of one limit, made by `call/mod.rs` with the overrides in
//!    force) → `pipeline.rs` (the switch, a preset) → `backend/mod.rs` ([`decide`](crate::backend::Backend::decide))
//!    → here, [`decide_now`](RedisBackend::decide_now): `sparing/lease`, `sparing/deny_cache`,
//!    `failure/breaker.rs`, `sparing/coalesce` (a full line joined) → `pending.rs` (what is left: [`ToAsk`]).
//! 2. Later, when polled: `pipeline.rs` ([`Reported`](crate::pipeline::Reported)) → `backend/mod.rs`
//!    ([`Settling`](crate::backend::Settling)) → here, [`decide_later`](RedisBackend::decide_later) and
//!    [`ask`](RedisBackend::ask) (the line led) → `round_trip.rs` (one script call within the budget) →
//!    `wire/script` (the command; the reply read and replayed by `algorithm/token_bucket.rs`) →
//!    `wire/connection.rs` → Redis; back here, [`answered`](RedisBackend::answered) (the breaker) and
//!    [`follow_up`](RedisBackend::follow_up) (the deny cache, the permits) → `pipeline.rs` (reported, the decision).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use super::pending::{InLine, LeaseStep, ToAsk};
use super::round_trip::{
    asked, call_key, costs_of, decided_of, named, read_one, within_held, Failed, Late,
    MemberOutcomes,
};
use crate::algorithm::Algorithm;
use crate::backend::redis::failure::breaker::{Route, Transition};
use crate::backend::redis::failure::degraded;
use crate::backend::redis::sparing::coalesce::{
    Batch, Coalescer, Joining, Line, Member, Place, Waiting,
};
use crate::backend::redis::sparing::deny_cache::Lookup;
use crate::backend::redis::sparing::lease;
use crate::backend::redis::sparing::lease::Take;
use crate::backend::redis::wire::script::nonce;
use crate::backend::redis::wire::Connection;
use crate::backend::redis::RedisBackend;
use crate::call::{Call, CallLimit, Charged, LimitRuling, OneOrMany, Ruling};
use crate::error::BackendError;
use crate::key::KeyRef;
use crate::OnError;

impl InLine {
    /// Polls for what the batch says of `call` (degraded by the batch's sender when Redis did not answer in time), once
    /// it is decided.
    #[inline]
    pub(crate) fn poll_ruling(&mut self, call: &Call<'_>, cx: &mut Context<'_>) -> Poll<Ruling> {
        let mut decided = ready!(Pin::new(&mut self.waiting).poll(cx));
        let key = call.limits()[0].key.parts();
        let (sent, cached, probe) = (self.sent, self.cached, self.probe);
        self.redis
            .follow_up(call, key, &mut decided, sent, cached, probe);
        Poll::Ready(decided)
    }
}

/// A script call of a line in flight: handed on, to the first batch gathering behind it, when it ends,
/// however it ends (answered, past its deadline, or dropped with its caller).
pub(in crate::backend::redis) struct Leading<'a> {
    redis: &'a Arc<RedisBackend>,
    coalescer: &'a Coalescer,
    line: Line,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        if let Some(next) = self.coalescer.pass_on(&self.line) {
            tokio::spawn(Arc::clone(self.redis).drive(next));
        }
    }
}

impl RedisBackend {
    /// Decides `call` from what this process knows (a lease it holds, a denial Redis already gave, the breaker
    /// open); else what Redis is to decide.
    #[inline]
    pub(crate) fn decide_now(self: &Arc<Self>, call: &Call<'_>) -> Result<Ruling, ToAsk> {
        let sent = self.clock.now();
        // A call that can never fit has only a nominal `retry_after`: nothing to keep.
        let fits = call.limits().iter().all(CallLimit::can_fit);
        // A call of one leased limit spends this node's lease, if it holds enough of one.
        let leased = match call.limits() {
            [limit] if fits && limit.preset.is_none() => limit.lease.map(|terms| (limit, terms)),
            _ => None,
        };
        if let Some(answer) = leased.and_then(|(limit, _)| self.leases.spend(limit, sent)) {
            return Ok(Ruling {
                admitted: answer.decision.allowed,
                limits: OneOrMany::One(answer),
            });
        }
        let cache = self.denied.as_ref().filter(|_| fits);
        let mut lookup = Lookup::Miss;
        if let Some(cache) = cache.filter(|cache| !cache.is_empty()) {
            let fails = self.breaker.is_failing();
            let joined = call_key(call);
            let marks = call.limits().iter().map(terms_mark);
            lookup = cache.get(named(call, &joined), marks, sent, self.deadline, fails);
        }
        if let Lookup::Denied(decisions) = lookup {
            return Ok(Ruling {
                limits: decisions.map(|decision| LimitRuling::uncharged(*decision)),
                admitted: false,
            });
        }
        // A request that already met a failing Redis waits for it no more: one deadline per request.
        if self.breaker.is_failing() && crate::observe::degraded_in_request() {
            return Ok(self.fallback.decide(call, self.breaker.probe_every()));
        }
        let permit = self.breaker.permit();
        if permit == Route::Skip {
            return Ok(self.fallback.decide(call, self.breaker.probe_every()));
        }
        let lease = match leased {
            Some((limit, terms)) => match self.leases.take(limit, sent, self.taking_stale()) {
                Take::Lease(back) => Some(LeaseStep::Take { terms, back }),
                Take::Wait(taken) => Some(LeaseStep::Wait(taken)),
                Take::Spent(answer) => {
                    return Ok(Ruling {
                        admitted: answer.decision.allowed,
                        limits: OneOrMany::One(answer),
                    })
                }
            },
            None => None,
        };
        // A probe must reach Redis, to close the breaker or keep it open: it waits for no lease.
        let lease =
            lease.filter(|step| permit == Route::Call || !matches!(step, LeaseStep::Wait(_)));
        let mut waiting = None;
        if let (Some(coalescer), None, Route::Call) = (&self.coalescer, &lease, permit) {
            waiting = self.wait_in_line(coalescer, call, sent);
        }
        Err(ToAsk {
            redis: Arc::clone(self),
            permit,
            sent,
            cached: cache.is_some(),
            probe: matches!(lookup, Lookup::Probe),
            lease,
            waiting,
        })
    }

    /// Returns what this node was told of `call` (named `key`) if it is a block still in force: the refusal it
    /// answers while Redis cannot be asked.
    fn known_block(&self, call: &Call<'_>, key: KeyRef<'_>) -> Option<Ruling> {
        let cache = self.denied.as_ref()?;
        let marks = call.limits().iter().map(terms_mark);
        match cache.get(key, marks, self.clock.now(), self.deadline, true) {
            Lookup::Denied(decisions) => Some(Ruling {
                limits: decisions.map(|decision| LimitRuling::uncharged(*decision)),
                admitted: false,
            }),
            Lookup::Miss | Lookup::Probe => None,
        }
    }

    /// Makes a call of one limit whose line is full wait in the line's batch: joined now, with no round trip of
    /// its own to prepare.
    #[inline]
    pub(in crate::backend::redis) fn wait_in_line(
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
    pub(crate) async fn decide_later(call: &Call<'_>, later: ToAsk) -> Ruling {
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
                return Ruling {
                    admitted: answer.decision.allowed,
                    limits: OneOrMany::One(answer),
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
            Ok(decided) if decided.limits.iter().any(|a| a.decision.degraded) => decided,
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
        redis.follow_up(
            call,
            key,
            &mut decided,
            later.sent,
            later.cached,
            later.probe,
        );
        decided
    }

    /// Decides `call` in Redis: one script call, alone or in a batch with the calls that arrived while its
    /// line was full (when coalescing is on), or, on a cluster whose slots split the call's keys, one per
    /// slot.
    pub(in crate::backend::redis) async fn ask(
        self: &Arc<Self>,
        call: &Call<'_>,
        permit: Route,
        budget: Duration,
        connection: Connection,
    ) -> Result<Ruling, Failed> {
        let asked = asked(call);
        if asked.len() > 1 {
            let keys: Vec<&str> = asked.iter().map(|limit| &*limit.key).collect();
            if let Some(groups) = connection.slots_apart(&keys) {
                return Box::pin(self.ask_across_slots(call, groups)).await;
            }
        }
        let nonce = nonce();
        // A probe must reach Redis, to close the breaker or keep it open: it goes alone.
        let coalescer = self.coalescer.as_ref().filter(|_| permit == Route::Call);
        // The turn is this call's to hand on however its round trip ends: answered, past its deadline, or
        // dropped with its caller.
        let mut turn = None;
        if let Some(coalescer) = coalescer {
            let keys = asked.iter().map(|limit| &*limit.key);
            let line = coalescer.line_of(connection.is_cluster(), keys);
            let join = Joining {
                member: || Member {
                    call: call.for_store(),
                    nonce,
                },
                limits: asked.len(),
                until: self.clock.now() + budget,
            };
            match coalescer.join(&line, join) {
                Place::Wait(batch, index) => return Ok(batch.wait(index).await),
                Place::Lead => {
                    turn = Some(Leading {
                        redis: self,
                        coalescer,
                        line,
                    });
                }
            }
        }
        let costs = costs_of(&asked);
        let mut flight = self.send_one(call, &asked, nonce, &costs, connection);
        let reply = within_held(&mut flight.sent, budget)
            .await
            .map_err(|failed| failed.named(nonce))?;
        drop(turn);
        Ok(read_one(call, &asked, nonce, &costs, &reply)?)
    }

    /// Sends `batch` once a round trip of its line has ended: decides each of its calls within the batch's
    /// deadline (degraded when Redis cannot, each by its own `on_error`, and reconciled with Redis's late
    /// answer), then hands the line on.
    pub(in crate::backend::redis) fn drive(
        self: Arc<Self>,
        batch: Arc<Batch>,
    ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move { self.send_batch(batch).await })
    }

    /// Sends `batch`, as [`drive`](RedisBackend::drive) does.
    pub(in crate::backend::redis) async fn send_batch(self: Arc<Self>, batch: Arc<Batch>) {
        let (members, until) = batch.members();
        let budget = until.saturating_sub(self.clock.now());
        let trip = match (budget.is_zero(), self.connection()) {
            (true, _) => Err(Failed::from(BackendError::Timeout(self.deadline))),
            (false, Err(cause)) => Err(Failed::from(cause)),
            (false, Ok(connection)) => self.batch_trip(&members, budget, connection).await,
        };
        let coalescer = self.coalescer.as_ref();
        if let Some(next) = coalescer.and_then(|c| c.pass_on(&batch.line)) {
            tokio::spawn(Arc::clone(&self).drive(next));
        }
        let failed = match trip {
            Ok((each, now)) => {
                let decided = self.ruling_of_members(&members, each, now);
                batch.deliver(members, decided, self.orphans());
                return;
            }
            Err(failed) => failed,
        };
        let first = &members[0].call;
        let on_error = members
            .iter()
            .flat_map(|m| m.call.limits().iter().map(|l| l.on_error));
        let joined = call_key(first);
        let retry = self.failed(Route::Call, named(first, &joined), on_error, &failed.cause);
        let degraded: Vec<Ruling> = members
            .iter()
            .map(|member| self.fallback.decide(&member.call, retry))
            .collect();
        let refused: Vec<bool> = degraded.iter().map(|d| !d.admitted).collect();
        let late = match failed.late {
            Some(Late::Script(late, _)) => Some((late, members.clone())),
            _ => None,
        };
        batch.deliver(members, degraded, self.orphans());
        if let Some((late, members)) = late {
            self.reconcile_batch(late, &members, &refused).await;
        }
    }

    /// Returns what Redis's answer (`each`, at `now`) says of each of `members`: a call whose group met a fault of
    /// its own keys is decided by its own `on_error`, the others by Redis.
    fn ruling_of_members(
        &self,
        members: &[Member],
        each: Vec<MemberOutcomes>,
        now: u64,
    ) -> Vec<Ruling> {
        let mut answered = false;
        let decided = members
            .iter()
            .zip(each)
            .map(|(member, outcome)| {
                let call = &member.call;
                match outcome {
                    Ok(outcome) => {
                        answered = true;
                        decided_of(call, &costs_of(&asked(call)), &outcome, now)
                    }
                    Err(fault) => {
                        let joined = call_key(call);
                        let on_error = call.limits().iter().map(|limit| limit.on_error);
                        let retry =
                            self.failed(Route::Call, named(call, &joined), on_error, &fault);
                        self.fallback.decide(call, retry)
                    }
                }
            })
            .collect();
        if answered {
            let first = &members[0].call;
            self.answered(Route::Call, first.limits()[0].key.parts());
        }
        decided
    }
    /// Tells the breaker Redis answered a round trip (and, if Redis was failing, the log).
    pub(in crate::backend::redis) fn answered(&self, permit: Route, key: KeyRef<'_>) {
        if self.breaker.succeeded(permit) == Transition::Recovered {
            self.fallback.recovered();
            tracing::warn!(key = %key, "rate limiter: Redis answers again; deciding in Redis");
        }
    }

    /// Tells the breaker a round trip failed with `cause`. A fault of the call's own keys
    /// ([`BackendError::is_the_keys`]) is an answer from Redis, which the breaker hears as one: one key's fault never
    /// turns Redis off for every other key. Any other failure counts toward the breaker. Either way the call is then
    /// decided by its limits' `on_error`: returns how long a `closed` refusal tells it to wait.
    pub(in crate::backend::redis) fn failed(
        &self,
        permit: Route,
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

    /// Follows up a decision Redis made (or the failure policy made for it): a leased limit's refusal holds
    /// no longer than a lease's life, and the deny cache hears the answer.
    pub(in crate::backend::redis) fn follow_up(
        &self,
        call: &Call<'_>,
        key: KeyRef<'_>,
        decided: &mut Ruling,
        sent: Duration,
        cached: bool,
        probe: bool,
    ) {
        if let ([limit], [answer]) = (call.limits(), &mut *decided.limits) {
            if let Some(terms) = limit.lease {
                // Units other nodes hold in leases come back within a lease's time to live (and a sweep): a
                // refusal of a leased limit holds no longer.
                let back = lease::back_within(terms);
                answer.decision.retry_after = answer.decision.retry_after.min(back);
            }
        }
        if decided.admitted {
            // The permits in flight it took are this node's to renew while they are held.
            for (limit, answer) in call.limits().iter().zip(decided.limits.iter()) {
                if limit.algorithm == Algorithm::InFlight && answer.charged == Charged::Store {
                    let (ttl, mark) = (limit.terms.window, answer.receipt.mark);
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
            let marks = call.limits().iter().map(terms_mark);
            cache.answered(key, marks, &decisions, decided.admitted, sent, probe);
        }
    }
}

/// Returns what the deny cache tells a call's limits apart by: each one's cost and terms (max, window, burst, wait, a
/// calendar's current period, the share kept above its priority), so that a denial made under other terms (an
/// override since, the same key in another zone or on another billing day, a call of another priority) is
/// never taken for this call's.
fn terms_mark(limit: &CallLimit<'_>) -> u64 {
    use std::hash::BuildHasher;
    let charge = &limit.terms;
    let terms = (charge.cost, charge.max, charge.window, charge.burst);
    let hasher = foldhash::fast::FixedState::with_seed(0);
    hasher.hash_one((terms, charge.max_wait, charge.ends[1], charge.kept))
}
