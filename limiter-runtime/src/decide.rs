//! The pipeline: every call goes through here, from the plain API, a [`Limit`](crate::Limit) and the
//! attribute alike, as a batch of its limits (one, or several stacked), decided as one.
//!
//! 1. The switch: off, every call is admitted, with no store traffic at all.
//! 2. Each limit's rule, resolved against the limiter's defaults by the caller, meets the overrides in force
//!    for its key ([`Rule::charge`]); a limit that admits nothing, or one the call skips, is decided here.
//! 3. The backend decides the call: admitted when every limit that vetoes admits it, then charged to each,
//!    else charged to none. In memory at once; with Redis, at once what this process knows (a denial Redis
//!    already gave, the breaker open), else one script call within the deadline, degraded by `on_error`.
//! 4. For an enforced call, the verdict: a rejection names the first limit that refused (a shadow limit only
//!    reports), and an admitted call first waits for its slot.
//!
//! Each decision is reported where it is made: to the metrics, and to the quotas a response advertises when a
//! request's scope records them ([`quota`](crate::quota)).
//!
//! What this process decides is decided when called, with the limiter borrowed; only a Redis round trip or a
//! slot to wait for is left to await.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{BoxFuture, Either};

use crate::algorithm::Outcome;
use crate::backend::redis::{call_key, Question, Refund};
use crate::backend::{admitted, Answer, Ask, Backend, Charged, Preset, RedisBackend};
use crate::budget::{now, Now};
use crate::error::LimitState;
use crate::key::KeyRef;
use crate::quota::{applies, counted, PolicyName, Recorder};
use crate::{Decision, Limiter, OnError, RateLimited, Reason, Rule};

/// A result ready at once, or the rest of it to await, boxed: a Redis round trip's future is large, and
/// should not weigh on every call's future.
pub(crate) type Deciding<'a, T> = Either<Now<T>, BoxFuture<'a, T>>;

/// One limit of one call: its rule resolved against the limiter's defaults, the store key, and what the
/// call weighs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'r, 'k> {
    pub(crate) rule: &'r Rule,
    pub(crate) key: KeyRef<'k>,
    pub(crate) cost: u64,
    /// The call skips this limit (its `skip_if` held): admitted, and counted nowhere.
    pub(crate) skip: bool,
}

/// What was decided of one call: each limit's answer, and whether the call goes ahead.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decided<const N: usize> {
    pub(crate) answers: [Answer; N],
    pub(crate) admitted: bool,
}

/// What only Redis can decide of a call: the question, the backend to ask, and what the call's limits are
/// as the verdict and the quotas see them.
pub(crate) struct Pending<const N: usize> {
    redis: Arc<RedisBackend>,
    question: Box<Question<N>>,
    /// Which limits the call skips (`skip_if`).
    skipped: [bool; N],
    recorder: Recorder<N>,
}

impl<'r, 'k> Request<'r, 'k> {
    /// One limit of a call that weighs `cost`.
    pub(crate) fn new(rule: &'r Rule, key: KeyRef<'k>, cost: u64) -> Self {
        Request {
            rule,
            key,
            cost,
            skip: false,
        }
    }
}

impl Limiter {
    /// Decides a call's limits as far as this process can: what was decided, or what Redis must answer.
    /// Always inlined: a decision made at once is then built in the caller's future, not built here and
    /// copied there.
    #[inline(always)]
    pub(crate) fn decide<const N: usize>(
        &self,
        batch: &[Request<'_, '_>; N],
    ) -> Result<Decided<N>, Pending<N>> {
        let inner = &*self.inner;
        if let ([request], Backend::Memory(memory), true) = (
            batch.as_slice(),
            &inner.backend,
            inner.overrides.is_enabled(),
        ) {
            // A call of one limit in memory (the common call): built in place.
            let ask = self.ask_of(request);
            let (outcome, at) = memory.decide_one(&ask);
            let admitted = outcome.allowed || !ask.vetoes;
            let answers = [Answer::of(&ask, outcome, at, admitted); N];
            inner
                .metrics
                .decision(request.key.prefix, &answers[0].decision);
            Recorder::of(batch).record(&answers);
            return Ok(Decided { answers, admitted });
        }
        let asks = batch.each_ref().map(|request| self.ask_of(request));
        let enabled = inner.overrides.is_enabled();
        let answers = if !enabled {
            let now = inner.clock.now_micros();
            asks.map(|ask| {
                Answer::uncharged(Decision::new(
                    &ask.charge,
                    Outcome::admit(ask.charge.max),
                    now,
                    false,
                ))
            })
        } else if all_preset(&asks) {
            let now = inner.clock.now_micros();
            asks.map(|ask| {
                let outcome = ask.preset.map_or(Outcome::admit(ask.charge.max), |preset| {
                    preset.outcome(&ask.charge)
                });
                Answer::uncharged(Decision::new(&ask.charge, outcome, now, false))
            })
        } else {
            match &inner.backend {
                Backend::Memory(memory) => {
                    let (outcomes, at) = memory.decide(&asks);
                    let admitted = admitted(&asks, |i| outcomes[i].allowed);
                    std::array::from_fn(|i| Answer::of(&asks[i], outcomes[i], at, admitted))
                }
                Backend::Redis(redis) => match redis.try_answer(&asks) {
                    Ok(answers) => answers,
                    Err(question) => {
                        return Err(Pending {
                            redis: Arc::clone(redis),
                            question,
                            skipped: batch.each_ref().map(|request| request.skip),
                            recorder: Recorder::of(batch),
                        })
                    }
                },
            }
        };
        for (request, answer) in batch.iter().zip(&answers) {
            inner.metrics.decision(request.key.prefix, &answer.decision);
        }
        if enabled {
            // Switched off, no limit applies: none is advertised.
            Recorder::of(batch).record(&answers);
        }
        let admitted = admitted(&asks, |i| answers[i].decision.allowed);
        Ok(Decided { answers, admitted })
    }

    /// What one limit of a call asks of the backend: its charge, with the overrides in force for its key.
    #[inline(always)]
    fn ask_of<'k>(&self, request: &Request<'_, 'k>) -> Ask<'k> {
        let Request {
            rule,
            key,
            cost,
            skip,
        } = *request;
        let overrides = self.inner.overrides.lookup(key.prefix, key.rest);
        let charge = rule.charge(overrides, cost);
        let preset = if skip {
            Some(Preset::Skipped)
        } else if charge.max == 0 {
            Some(Preset::Closed)
        } else {
            None
        };
        Ask {
            algorithm: rule.algorithm_value(),
            key,
            charge,
            vetoes: !rule.shadow_value(),
            on_error: rule.on_error_value(),
            preset,
            lease: rule.lease_terms(),
        }
    }

    /// What Redis answers to `pending` (degraded when it cannot), counted.
    pub(crate) async fn ask<const N: usize>(&self, pending: &Pending<N>) -> Decided<N> {
        let inner = &*self.inner;
        inner
            .background
            .call_once(|| self.spawn_background(&pending.redis));
        let timer = crate::observe::Timer::start();
        let (answers, admitted) = pending.redis.ask(&pending.question).await;
        let keys = pending.question.keys();
        inner
            .metrics
            .redis(keys.iter().map(|key| key.prefix), timer);
        for (key, answer) in keys.iter().zip(&answers) {
            inner.metrics.decision(key.prefix, &answer.decision);
        }
        pending.recorder.record(&answers);
        Decided { answers, admitted }
    }

    /// [`decide`](Limiter::decide), as `done` makes of it, ready at once or with the round trip left to
    /// await.
    #[inline(always)]
    pub(crate) fn check_batch<'a, const N: usize, T: Send + 'a>(
        &'a self,
        batch: &[Request<'_, '_>; N],
        done: fn(Decided<N>) -> T,
    ) -> Deciding<'a, T> {
        match self.decide(batch) {
            Ok(decided) => Either::Left(now(done(decided))),
            Err(pending) => Either::Right(Box::pin(async move { done(self.ask(&pending).await) })),
        }
    }

    /// [`decide`](Limiter::decide) for an enforced call: its verdict (see [`verdict`](Limiter::verdict)), as
    /// `done` makes of an admission, ready at once or with the round trip (and the slot) left to await.
    pub(crate) fn enforce_batch<'a, const N: usize, T: Send + 'a>(
        &'a self,
        batch: &[Request<'a, '_>; N],
        done: fn(Decided<N>) -> T,
    ) -> Deciding<'a, Result<T, RateLimited>> {
        let rules = batch.each_ref().map(|request| request.rule);
        match self.decide(batch) {
            Ok(decided) => {
                let keys = batch.each_ref().map(|request| request.key);
                let skipped = batch.each_ref().map(|request| request.skip);
                match self.verdict(&rules, &keys, &skipped, &decided) {
                    Ok(wait) if !wait.is_zero() => {
                        Either::Right(Box::pin(after(wait, Ok(done(decided)))))
                    }
                    verdict => Either::Left(now(verdict.map(|_| done(decided)))),
                }
            }
            Err(pending) => Either::Right(Box::pin(async move {
                self.enforce_pending(pending, rules).await.map(done)
            })),
        }
    }

    /// The rest of an enforced call that Redis must decide: asked, judged, and, admitted, held until its
    /// slot.
    pub(crate) async fn enforce_pending<const N: usize>(
        &self,
        pending: Pending<N>,
        rules: [&Rule; N],
    ) -> Result<Decided<N>, RateLimited> {
        let decided = self.ask(&pending).await;
        let keys = pending.question.keys();
        let wait = self.verdict(&rules, &keys, &pending.skipped, &decided)?;
        Ok(after(wait, decided).await)
    }

    /// What a call's decisions mean for it: a rejection ([`RateLimited`], naming the first limit that
    /// refused; the others' states beside it), or how long an admitted call waits for its slot first. A shadow
    /// limit never rejects or holds a call: what it would have rejected is reported.
    pub(crate) fn verdict<const N: usize>(
        &self,
        rules: &[&Rule; N],
        keys: &[KeyRef<'_>; N],
        skipped: &[bool; N],
        decided: &Decided<N>,
    ) -> Result<Duration, RateLimited> {
        let mut wait = Duration::ZERO;
        let mut refused = None;
        for (i, ((rule, key), answer)) in rules.iter().zip(keys).zip(&decided.answers).enumerate() {
            let (decision, shadow) = (&answer.decision, rule.shadow_value());
            if decision.allowed && !shadow {
                wait = wait.max(decision.delay);
            } else if !decision.allowed && shadow && decided.admitted {
                self.inner.shadowed.fetch_add(1, Ordering::Relaxed);
                self.inner.metrics.shadow_rejection(key.prefix);
                tracing::info!(
                    key = %key,
                    limit = decision.limit,
                    "rate limiter: would have limited (shadow mode)"
                );
            } else if !decision.allowed && !shadow && refused.is_none() {
                refused = Some(i);
            }
        }
        let Some(refused) = refused.filter(|_| !decided.admitted) else {
            return Ok(wait);
        };
        let (rule, key, decision) = (
            rules[refused],
            keys[refused],
            decided.answers[refused].decision,
        );
        if !decision.degraded {
            tracing::debug!(%key, limit = decision.limit, retry_after = ?decision.retry_after, "rate limiter: limited");
        }
        // Each limit's state, when there are several (one is the rejection's own); a shadow or skipped limit,
        // or a decision made without a count, is not advertised in quota headers.
        let limits = match N {
            1 => Vec::new(),
            _ => (0..N)
                .map(|i| {
                    let (rule, decision) = (rules[i], decided.answers[i].decision);
                    LimitState {
                        policy: PolicyName::of(rule),
                        decision,
                        advertised: applies(rule, skipped[i])
                            && counted(rule.on_error_value(), &decision),
                    }
                })
                .collect(),
        };
        // Only a limit that fails closed answers "unavailable": a local decision over this node's share is a
        // limit like any other, with its message and quota.
        let reason = if decision.degraded && rule.on_error_value() == OnError::Closed {
            Reason::Unavailable
        } else {
            Reason::Limited
        };
        Err(RateLimited::new(
            rule.message_value().clone(),
            PolicyName::of(rule),
            key.to_store_key(),
            decision,
            counted(rule.on_error_value(), &decision),
            limits,
            reason,
        ))
    }

    /// Gives back `units` of what each limit of an admitted call charged, now: exactly, unless a charge has
    /// left its limit already (then nothing), never more. In memory at once; with Redis, one script call.
    pub(crate) fn refund<'a, const N: usize>(
        &'a self,
        batch: &[Request<'_, '_>; N],
        decided: &Decided<N>,
        units: [u64; N],
    ) -> Deciding<'a, ()> {
        let asks = batch.each_ref().map(|request| self.ask_of(request));
        let mut in_redis = Vec::new();
        for ((ask, answer), units) in asks.iter().zip(&decided.answers).zip(units) {
            let units = units.min(ask.charge.cost);
            match (&self.inner.backend, answer.charged) {
                (_, Charged::Nothing) => {}
                (Backend::Memory(memory), _) => memory.refund(ask, units, &answer.receipt),
                (Backend::Redis(redis), Charged::Local) => {
                    redis.refund_local(ask, units, &answer.receipt)
                }
                (Backend::Redis(redis), Charged::Lease) => {
                    redis.leases.refund(ask.key, units, &answer.receipt)
                }
                (Backend::Redis(_), Charged::Store) => {
                    in_redis.push(Refund::new(ask, units, answer.receipt))
                }
            }
        }
        match &self.inner.backend {
            Backend::Redis(redis) if !in_redis.is_empty() => {
                let call = call_key(&asks);
                Either::Right(Box::pin(redis.refund(in_redis, call)))
            }
            _ => Either::Left(now(())),
        }
    }
}

/// Whether every limit of a call was decided before any store was asked.
#[inline(always)]
fn all_preset<const N: usize>(asks: &[Ask<'_>; N]) -> bool {
    for ask in asks {
        if ask.preset.is_none() {
            return false;
        }
    }
    true
}

impl<const N: usize> Decided<N> {
    /// Each limit's decision.
    pub(crate) fn decisions(self) -> [Decision; N] {
        self.answers.map(|answer| answer.decision)
    }
}

impl Decided<1> {
    /// The one limit's decision.
    pub(crate) fn decision(self) -> Decision {
        let [answer] = self.answers;
        answer.decision
    }
}

/// `value`, once `wait` (an admitted call's slot, leaky bucket) has passed.
pub(crate) async fn after<T>(wait: Duration, value: T) -> T {
    if !wait.is_zero() {
        // Boxed, as the Redis round trip is: a timer is large, and rarely needed.
        Box::pin(tokio::time::sleep(wait)).await;
    }
    value
}
