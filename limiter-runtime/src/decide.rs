//! The pipeline: every decision goes through here, from the plain API, a [`Limit`](crate::Limit) and the
//! attribute alike.
//!
//! 1. The switch: off, every call is admitted, with no store traffic at all.
//! 2. The rule, resolved against the limiter's defaults by the caller, meets the overrides in force for its
//!    key ([`Rule::charge`]).
//! 3. The backend decides: in memory at once; with Redis, at once what this process knows (a denial Redis
//!    already gave, the breaker open), else one script call within the deadline, degraded by `on_error`.
//! 4. For an enforced call, the verdict: a rejection becomes [`RateLimited`] (a shadow rule only reports
//!    it), and an admitted call first waits for its slot.
//!
//! What this process decides is decided when called, with the limiter borrowed; only a Redis round trip or a
//! slot to wait for is left to await.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{self, BoxFuture, Either, Ready};

use crate::algorithm::Outcome;
use crate::backend::redis::Question;
use crate::backend::{Backend, RedisBackend};
use crate::key::KeyRef;
use crate::{Decision, Limiter, RateLimited, Rule};

/// A result ready at once, or the rest of it to await, boxed: a Redis round trip's future is large, and
/// should not weigh on every call's future.
pub(crate) type Decided<'a, T> = Either<Ready<T>, BoxFuture<'a, T>>;

/// One limit of one call: its rule resolved against the limiter's defaults, the store key, and what the
/// call weighs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'r, 'k> {
    pub(crate) rule: &'r Rule,
    pub(crate) key: KeyRef<'k>,
    pub(crate) cost: u64,
}

/// What only Redis can decide: the question, and the backend to ask.
pub(crate) struct Pending {
    redis: Arc<RedisBackend>,
    question: Box<Question>,
}

/// An enforced call's verdict: the decision and how long to wait for its slot, or the rejection.
pub(crate) type Verdict = Result<(Decision, Duration), RateLimited>;

impl Limiter {
    /// Decides `request` as far as this process can: the decision, or what Redis must answer. Always inlined:
    /// a decision made at once is then built in the caller's future, not built here and copied there.
    #[inline(always)]
    pub(crate) fn decide(&self, request: Request<'_, '_>) -> Result<Decision, Pending> {
        let inner = &*self.inner;
        let Request { rule, key, cost } = request;
        let overrides = inner.overrides.lookup(key.prefix, key.rest);
        let charge = rule.charge(overrides.as_ref(), cost);
        if !inner.overrides.is_enabled() {
            let now = inner.clock.now_micros();
            return Ok(Decision::new(
                &charge,
                Outcome::admit(charge.max),
                now,
                false,
            ));
        }
        if charge.max == 0 {
            // Nothing is ever admitted: no need to ask (and no algorithm divides by zero).
            let now = inner.clock.now_micros();
            let decision = Decision::new(&charge, Outcome::denied(0, charge.window, 0), now, false);
            inner.metrics.decision(key.prefix, &decision);
            return Ok(decision);
        }
        let algorithm = rule.algorithm_value();
        let decided = match &inner.backend {
            Backend::Memory(memory) => {
                let (outcome, at) = memory.decide(algorithm, key, &charge);
                Ok(Decision::new(&charge, outcome, at, false))
            }
            Backend::Redis(redis) => redis
                .try_answer(algorithm, key, charge, rule.on_error_value())
                .map_err(|question| Pending {
                    redis: Arc::clone(redis),
                    question,
                }),
        };
        if let Ok(decision) = &decided {
            inner.metrics.decision(key.prefix, decision);
        }
        decided
    }

    /// What Redis answers to `pending` (degraded when it cannot), counted.
    pub(crate) async fn ask(&self, pending: &Pending) -> Decision {
        let inner = &*self.inner;
        inner
            .background
            .call_once(|| self.spawn_background(&pending.redis));
        let timer = crate::observe::Timer::start();
        let decision = pending.redis.ask(&pending.question).await;
        let prefix = pending.question.key.parts().prefix;
        inner.metrics.redis(prefix, timer);
        inner.metrics.decision(prefix, &decision);
        decision
    }

    /// [`decide`](Limiter::decide), ready at once or with the round trip left to await.
    #[inline(always)]
    pub(crate) fn check_request<'a>(&'a self, request: Request<'_, '_>) -> Decided<'a, Decision> {
        match self.decide(request) {
            Ok(decision) => Either::Left(future::ready(decision)),
            Err(pending) => Either::Right(Box::pin(async move { self.ask(&pending).await })),
        }
    }

    /// [`decide`](Limiter::decide) for an enforced call: its verdict, ready at once or with the round trip
    /// (and the slot) left to await.
    pub(crate) fn enforce_request<'a>(
        &'a self,
        request: Request<'a, '_>,
    ) -> Decided<'a, Result<Decision, RateLimited>> {
        match self.decide(request) {
            Ok(decision) => waited(self.verdict(request.rule, request.key, decision), |d| d),
            Err(pending) => Either::Right(Box::pin(self.enforce_pending(pending, request.rule))),
        }
    }

    /// The rest of an enforced call that Redis must decide: asked, judged, and, admitted, held until its
    /// slot.
    pub(crate) async fn enforce_pending(
        &self,
        pending: Pending,
        rule: &Rule,
    ) -> Result<Decision, RateLimited> {
        let decision = self.ask(&pending).await;
        let (decision, wait) = self.verdict(rule, pending.question.key.parts(), decision)?;
        Ok(after(wait, decision).await)
    }

    /// What `decision` means for the call: a rejection becomes [`RateLimited`], unless the rule is a shadow
    /// (then it is only reported, and the call goes ahead); an admitted call waits for its slot first (a
    /// shadow rule never holds a call).
    pub(crate) fn verdict(&self, rule: &Rule, key: KeyRef<'_>, decision: Decision) -> Verdict {
        let shadow = rule.shadow_value();
        if decision.allowed {
            let wait = if shadow {
                Duration::ZERO
            } else {
                decision.delay
            };
            return Ok((decision, wait));
        }
        if shadow {
            self.inner.shadowed.fetch_add(1, Ordering::Relaxed);
            self.inner.metrics.shadow_rejection(key.prefix);
            tracing::info!(
                %key,
                limit = decision.limit,
                "rate limiter: would have limited (shadow mode)"
            );
            return Ok((decision, Duration::ZERO));
        }
        if !decision.degraded {
            tracing::debug!(%key, limit = decision.limit, retry_after = ?decision.retry_after, "rate limiter: limited");
        }
        let (message, policy) = (rule.message_value().clone(), rule.name_value().clone());
        Err(RateLimited::new(
            message,
            policy,
            key.to_store_key(),
            decision,
        ))
    }
}

/// A verdict made at once, as `done` of the decision: ready, unless the call must first wait for its slot.
pub(crate) fn waited<'a, T: Send + 'a>(
    verdict: Verdict,
    done: fn(Decision) -> T,
) -> Decided<'a, Result<T, RateLimited>> {
    match verdict {
        Ok((decision, wait)) if !wait.is_zero() => {
            Either::Right(Box::pin(
                async move { Ok(done(after(wait, decision).await)) },
            ))
        }
        verdict => Either::Left(future::ready(verdict.map(|(decision, _)| done(decision)))),
    }
}

/// `decision`, once `wait` (an admitted call's slot, leaky bucket) has passed.
async fn after(wait: Duration, decision: Decision) -> Decision {
    if !wait.is_zero() {
        // Boxed, as the Redis round trip is: a timer is large, and rarely needed.
        Box::pin(tokio::time::sleep(wait)).await;
    }
    decision
}
