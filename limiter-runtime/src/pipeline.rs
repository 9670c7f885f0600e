//! The pipeline: every call goes through here, from the plain API, a [`Limit`](crate::Limit), the attribute
//! and the tower layer alike, as one [`Call`] of its limits (one, or several stacked), decided as one.
//!
//! 1. The switch: off, every call is admitted, with no store traffic at all.
//! 2. A limit that admits nothing, or one the call skips, is decided here (its call was built with the
//!    overrides in force: [`Call::new`]).
//! 3. The backend decides the call: admitted when every limit that vetoes admits it, and then charged to each,
//!    else charged to none. In memory at once; with Redis, at once what this process knows (a denial Redis
//!    already gave, a lease, the breaker open), else one script call within the deadline, degraded by
//!    `on_error`.
//! 4. For an enforced call, the verdict: a rejection names the first limit that refused (a shadow limit only
//!    reports), and an admitted call first waits for its slot.
//!
//! Each decision is reported once, where it is made, to the limiter's [`Observers`].
//! What this process decides is decided when called, with the limiter borrowed; only a Redis round trip or a
//! slot to wait for is left to await.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_util::future::{BoxFuture, Either};

use crate::backend::{Backend, Batched, GivingBack, Later};
use crate::budget::{now, Now};
use crate::call::{Answer, Ask, Call, Decided, OneOrMany};
use crate::clock::Clock;
use crate::error::LimitState;
use crate::observe::{Observers, Timer};
use crate::overrides::Overrides;
use crate::rule::Defaults;
use crate::{Decision, OnError, RateLimited, Reason};

/// The id of the next pipeline built.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// What decides a limiter's calls: its backend, its defaults, the overrides and switches in force, and who
/// hears of each decision. A [`Limiter`](crate::Limiter) is a handle to one.
pub(crate) struct Pipeline {
    /// Unique in this process, for as long as it runs: what a resolution kept for this limiter is kept under.
    pub(crate) id: u64,
    pub(crate) backend: Backend,
    pub(crate) defaults: Defaults,
    /// This process's clock: the time of decisions made without the backend.
    pub(crate) clock: Arc<dyn Clock>,
    /// The operators' run-time changes: overrides of limits, and the switch. Shared with the task that keeps
    /// them in step with Redis.
    pub(crate) overrides: Arc<Overrides>,
    /// Starts the background tasks of a Redis limiter (heartbeat, override sync, lease sweep) once.
    pub(crate) background: Once,
    /// Calls a shadow rule would have rejected.
    pub(crate) shadowed: AtomicU64,
    /// Who hears of each decision: the metrics, and a service edge.
    pub(crate) observers: Observers,
}

/// A decision ready at once; or a call waiting in a batch, polled in place (nothing boxed: see [`Waited`]); or
/// the rest of a round trip to await, boxed (its future is large, and should not weigh on every call's
/// future). `C` is the call, owned or borrowed; `T` what the caller makes of the decision.
pub(crate) enum Deciding<'a, C, T> {
    Now(Now<T>),
    Waits(Waited<'a, C, T>),
    Later(BoxFuture<'a, T>),
}

impl<C: AsCall, T> Future for Deciding<'_, C, T> {
    type Output = T;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.get_mut() {
            Deciding::Now(now) => Pin::new(now).poll(cx),
            Deciding::Waits(waited) => Pin::new(waited).poll(cx),
            Deciding::Later(later) => later.as_mut().poll(cx),
        }
    }
}

/// A call, owned or borrowed, as its future holds it.
pub(crate) trait AsCall: Unpin {
    fn as_call(&self) -> &Call<'_>;
}

impl AsCall for Call<'_> {
    #[inline]
    fn as_call(&self) -> &Call<'_> {
        self
    }
}

impl AsCall for &Call<'_> {
    #[inline]
    fn as_call(&self) -> &Call<'_> {
        self
    }
}

/// What the caller makes of a call and its decision (the pipeline at hand).
type Then<C, T> = fn(&Pipeline, C, Decided) -> T;

/// A call waiting in a batch: what the batch says of it, reported, and then `then` of it. Polled in place, by
/// the caller's future: no box, no timer and no channel of its own.
pub(crate) struct Waited<'a, C, T> {
    pipeline: &'a Pipeline,
    /// Taken once decided.
    call: Option<C>,
    batched: Batched,
    timer: Timer,
    then: Then<C, T>,
}

impl<C: AsCall, T> Future for Waited<'_, C, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        let call = this
            .call
            .as_ref()
            .expect("a decision polled after it completed");
        let mut decided = ready!(this.batched.poll_decided(call.as_call(), cx));
        this.pipeline
            .report(call.as_call(), &mut decided, this.timer);
        let call = this
            .call
            .take()
            .expect("a decision polled after it completed");
        Poll::Ready((this.then)(this.pipeline, call, decided))
    }
}

/// What an enforced call comes to: admitted (after its slot), with the call and what was decided of it, or
/// refused.
pub(crate) type Enforced<'r> = Result<(Call<'r>, Decided), RateLimited>;

/// What a caller keeps of an enforced call ([`Pipeline::enforce_owned`]), or its refusal: at once, or boxed
/// with the rest to await.
pub(crate) type Ruled<T> =
    Either<Now<Result<T, RateLimited>>, BoxFuture<'static, Result<T, RateLimited>>>;

/// What a future that outlives its caller owns to reach a pipeline: a [`Limiter`](crate::Limiter).
pub(crate) trait Owner: Clone + Send + Sync + 'static {
    fn pipeline(&self) -> &Pipeline;
}

impl Pipeline {
    pub(crate) fn new(backend: Backend, defaults: Defaults, clock: Arc<dyn Clock>) -> Pipeline {
        Pipeline {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            backend,
            defaults,
            clock,
            overrides: Arc::default(),
            background: Once::new(),
            shadowed: AtomicU64::new(0),
            observers: Observers::default(),
        }
    }

    /// Starts what keeps a Redis limiter's view current while it lives, once: its heartbeat, the override
    /// sync, and the sweep of idle leases.
    pub(crate) fn start_background(&self) {
        self.background
            .call_once(|| self.backend.start(&self.overrides, &self.observers.watch));
    }

    /// The call of `asks`, with the overrides in force applied: the one constructor of a call.
    #[inline(always)]
    pub(crate) fn call<'r>(&self, asks: impl IntoIterator<Item = Ask<'r>>) -> Call<'r> {
        Call::new(&self.overrides, &*self.clock, asks)
    }

    /// Decides `call` as far as this process can: what was decided (reported), or what Redis must answer.
    #[inline(always)]
    pub(crate) fn decide_now(&self, call: &Call<'_>) -> Result<Decided, Later> {
        let inner = self;
        // The switch opens every limit but the admin door's own.
        let enabled = inner.overrides.is_enabled()
            || call.limits().iter().any(|limit| limit.rule.ignores_switch);
        let mut decided = if !enabled || call.all_preset() {
            // Switched off, no limit applies; a limit decided before any store was asked, as it was.
            let now = inner.clock.now_micros();
            let answers = call
                .limits()
                .iter()
                .map(|limit| {
                    let outcome = match limit.preset.filter(|_| enabled) {
                        Some(preset) => preset.outcome(&limit.charge),
                        None => crate::algorithm::Outcome::admit(limit.charge.max),
                    };
                    Answer::uncharged(limit.decision(&limit.charge, outcome, now, false))
                })
                .collect::<OneOrMany<Answer>>();
            let admitted = call.admits(|i| answers[i].decision.allowed);
            Decided { answers, admitted }
        } else {
            inner.backend.decide_now(call)?
        };
        decided.judge(call, enabled);
        inner.observers.decided(call, &decided, enabled);
        Ok(decided)
    }

    /// The rest of `call`'s decision (what `later` left to Redis), and then `then` of the call and what was
    /// decided: a call that waits in a batch is polled in place ([`Waited`]), a call that asks Redis is boxed
    /// (the round trip's future is large).
    #[inline(always)]
    fn later<'a, C, T>(&'a self, call: C, later: Later, then: Then<C, T>) -> Deciding<'a, C, T>
    where
        C: AsCall + Send + 'a,
        T: Send + 'a,
    {
        match later.batched() {
            Ok(batched) => Deciding::Waits(self.waited(call, batched, then)),
            Err(later) => Deciding::Later(Box::pin(self.asked(call, later, then))),
        }
    }

    /// `call`, waiting in a batch, and then `then` of it.
    #[inline(always)]
    fn waited<C, T>(&self, call: C, batched: Batched, then: Then<C, T>) -> Waited<'_, C, T> {
        Waited {
            pipeline: self,
            call: Some(call),
            batched,
            timer: Timer::start(),
            then,
        }
    }

    /// What Redis answers of `call` (degraded when it cannot), reported.
    pub(crate) async fn decide_later(&self, call: &Call<'_>, later: Later) -> Decided {
        match later.batched() {
            Ok(batched) => self.waited(call, batched, |_, _, decided| decided).await,
            Err(later) => self.asked(call, later, |_, _, decided| decided).await,
        }
    }

    /// What Redis answers of `call` after a round trip of its own (degraded when it cannot), reported, and then
    /// `then` of it.
    async fn asked<C: AsCall, T>(
        &self,
        call: C,
        later: Later,
        then: impl FnOnce(&Pipeline, C, Decided) -> T,
    ) -> T {
        self.start_background();
        let timer = Timer::start();
        let mut decided = Backend::decide_later(call.as_call(), later).await;
        self.report(call.as_call(), &mut decided, timer);
        then(self, call, decided)
    }

    /// Reports what Redis decided of `call` (or its failure policy did, in time): once, to the observers.
    fn report(&self, call: &Call<'_>, decided: &mut Decided, timer: Timer) {
        decided.judge(call, true);
        self.observers.redis(call, timer);
        self.observers.decided(call, decided, true);
    }

    /// Decides `call`, borrowed: at once (handed over through Tokio's budget), in the batch it waits in, or
    /// after the round trip, boxed (its future is large: the caller's stays small).
    #[inline(always)]
    pub(crate) fn decided<'a, 'r>(
        &'a self,
        call: &'a Call<'r>,
    ) -> Deciding<'a, &'a Call<'r>, Decided> {
        match self.decide_now(call) {
            Ok(decided) => Deciding::Now(now(decided)),
            Err(later) => self.later(call, later, |_, _, decided| decided),
        }
    }

    /// [`decision`](Pipeline::decision) of a call taken by value, for a caller that keeps nothing of it but
    /// its decision ([`Limit`](crate::Limit)): the call is moved into the future only when Redis must be
    /// asked; decided at once, nothing large is moved.
    #[inline(always)]
    pub(crate) fn decision_of<'a, 'r: 'a>(
        &'a self,
        call: Call<'r>,
    ) -> Deciding<'a, Call<'r>, Decision> {
        match self.decide_now(&call) {
            Ok(decided) => Deciding::Now(now(decided.decision())),
            Err(later) => self.later(call, later, |_, _, decided| decided.decision()),
        }
    }

    /// [`decided`](Pipeline::decided) for a call of one limit: its decision alone, so that what is kept across
    /// the await stays small.
    #[inline(always)]
    pub(crate) fn decision<'a, 'r>(
        &'a self,
        call: &'a Call<'r>,
    ) -> Deciding<'a, &'a Call<'r>, Decision> {
        match self.decide_now(call) {
            Ok(decided) => Deciding::Now(now(decided.decision())),
            Err(later) => self.later(call, later, |_, _, decided| decided.decision()),
        }
    }

    /// Decides `call`: at once, or with the round trip left to await. The call comes back beside its answer.
    #[inline(always)]
    pub(crate) fn decide<'a, 'r: 'a>(
        &'a self,
        call: Call<'r>,
    ) -> Deciding<'a, Call<'r>, (Call<'r>, Decided)> {
        match self.decide_now(&call) {
            Ok(decided) => Deciding::Now(now((call, decided))),
            Err(later) => self.later(call, later, |_, call, decided| (call, decided)),
        }
    }

    /// Decides `call` for an enforced call: its [verdict](Pipeline::verdict) (a rejection, or, admitted, the
    /// call and its answer once its slot has come), at once or with the round trip (and the slot) left to
    /// await.
    #[inline(always)]
    pub(crate) fn enforce<'a, 'r: 'a>(
        &'a self,
        call: Call<'r>,
    ) -> Deciding<'a, Call<'r>, Enforced<'r>> {
        match self.decide_now(&call) {
            Ok(decided) => match self.verdict(&call, &decided) {
                Ok(wait) if !wait.is_zero() => {
                    Deciding::Later(Box::pin(after(wait, Ok((call, decided)))))
                }
                verdict => Deciding::Now(now(verdict.map(|_| (call, decided)))),
            },
            // No slot to wait for once admitted: the verdict is all that follows the decision.
            Err(later) if !call.may_wait_for_slot() => {
                self.later(call, later, |pipeline, call, decided| {
                    pipeline.verdict(&call, &decided).map(|_| (call, decided))
                })
            }
            Err(later) => Deciding::Later(Box::pin(self.enforce_later(call, later))),
        }
    }

    /// The rest of an enforced call's decision that Redis is to make: its verdict, and, admitted, the call and
    /// its answer once its slot has come.
    async fn enforce_later<'r>(&self, call: Call<'r>, later: Later) -> Enforced<'r> {
        let decided = self.decide_later(&call, later).await;
        let wait = self.verdict(&call, &decided)?;
        Ok(after(wait, (call, decided)).await)
    }

    /// [`enforce`](Pipeline::enforce) for a caller whose future must own what it keeps (the attribute's, which
    /// outlives the borrow it finds its limiter by): the rest, when there is one, holds `owner`, and is boxed.
    /// `then` makes what the caller keeps of an admitted call, given its owner.
    #[inline(always)]
    pub(crate) fn enforce_owned<O, T, F>(owner: &O, call: Call<'static>, then: F) -> Ruled<T>
    where
        O: Owner,
        T: Send + 'static,
        F: FnOnce(&O, Call<'static>, Decided) -> T + Send + 'static,
    {
        let pipeline = owner.pipeline();
        match pipeline.decide_now(&call) {
            Ok(decided) => match pipeline.verdict(&call, &decided) {
                Ok(wait) if !wait.is_zero() => {
                    let kept = then(owner, call, decided);
                    Either::Right(Box::pin(after(wait, Ok(kept))))
                }
                verdict => Either::Left(now(verdict.map(|_| then(owner, call, decided)))),
            },
            // As `enforce_later`, with what the caller keeps made before the slot is waited for: one future
            // fewer around the round trip's (the attribute's Redis path counts about 800 instructions less).
            Err(later) => {
                let owner = owner.clone();
                Either::Right(Box::pin(async move {
                    let pipeline = owner.pipeline();
                    let decided = pipeline.decide_later(&call, later).await;
                    let wait = pipeline.verdict(&call, &decided)?;
                    let kept = then(&owner, call, decided);
                    Ok(after(wait, kept).await)
                }))
            }
        }
    }

    /// What `decided` means for `call`: a rejection ([`RateLimited`], naming the first limit that refused; the
    /// others' states beside it), or how long an admitted call waits for its slot first. A shadow limit never
    /// rejects or holds a call: what it would have rejected is reported.
    pub(crate) fn verdict(
        &self,
        call: &Call<'_>,
        decided: &Decided,
    ) -> Result<Duration, RateLimited> {
        let mut wait = Duration::ZERO;
        let mut refused = None;
        let limits = call.limits();
        for (i, (limit, answer)) in limits.iter().zip(decided.answers.iter()).enumerate() {
            let (decision, shadow) = (&answer.decision, !limit.vetoes);
            if decision.allowed && !shadow {
                wait = wait.max(decision.delay);
            } else if !decision.allowed && shadow && decided.admitted {
                self.shadowed.fetch_add(1, Ordering::Relaxed);
                let key = limit.key.parts();
                self.observers.shadow_rejection(key.prefix);
                tracing::info!(
                    key = %key,
                    limit = decision.limit,
                    reason = decision.verdict.as_str(),
                    "rate limiter: would have limited (shadow mode)"
                );
            } else if !decision.allowed && !shadow && refused.is_none() {
                refused = Some(i);
            }
        }
        let Some(refused) = refused.filter(|_| !decided.admitted) else {
            return Ok(wait);
        };
        let (limit, decision) = (&limits[refused], decided.answers[refused].decision);
        if !decision.degraded {
            tracing::debug!(key = %limit.key.parts(), limit = decision.limit, retry_after = ?decision.retry_after, reason = decision.verdict.as_str(), "rate limiter: limited");
        }
        // Each limit's state, when there are several (one is the rejection's own); a shadow or skipped limit,
        // or a decision made without a count, is not advertised in quota headers.
        let states = match limits {
            [_] => Vec::new(),
            _ => limits
                .iter()
                .zip(decided.decisions())
                .map(|(limit, decision)| LimitState {
                    policy: limit.rule.policy_name(),
                    decision,
                    advertised: advertised(limit, &decision),
                })
                .collect(),
        };
        // Only a limit that fails closed answers "unavailable": a local decision over this node's share is a
        // limit like any other, with its message and quota. A call no wait can admit (a cost above the limit)
        // says so.
        let reason = if decision.degraded && limit.on_error == OnError::Closed {
            Reason::Unavailable
        } else if !limit.can_fit() {
            Reason::TooLarge
        } else {
            Reason::Limited
        };
        Err(RateLimited::new(
            limit.rule.message_value().clone(),
            limit.rule.policy_name(),
            limit.key.clone(),
            decision,
            advertised(limit, &decision),
            states,
            reason,
        ))
    }

    /// Gives back `units[i]` of what each limit `i` of an admitted `call` charged (as `decided` says), now:
    /// as [`Backend::give_back`] does, never more. In memory at once; with
    /// Redis, one script call. Reported, so that what a response advertises counts the units as given back.
    pub(crate) fn give_back<'a>(
        &'a self,
        call: &'a Call<'a>,
        decided: &'a Decided,
        units: &'a [u64],
    ) -> GivingBack<'a> {
        self.observers.given_back(call, units);
        self.backend.give_back(call, decided, units)
    }
}

/// Whether a limit's decision is advertised in quota headers: it applies to the call (not a shadow limit, not
/// one the call skips), and was counted (not made by `on_error = open | closed` while Redis failed: the count
/// is unknown; a decision over this node's share, `local`, was counted).
pub(crate) fn advertised(limit: &crate::call::CallLimit<'_>, decision: &Decision) -> bool {
    let applies = limit.vetoes && limit.preset != Some(crate::call::Preset::Skipped);
    applies && (!decision.degraded || limit.on_error == OnError::Local)
}

/// `value`, once `wait` (an admitted call's slot, leaky bucket) has passed.
pub(crate) async fn after<T>(wait: Duration, value: T) -> T {
    if !wait.is_zero() {
        // Boxed, as the Redis round trip is: a timer is large, and rarely needed.
        Box::pin(tokio::time::sleep(wait)).await;
    }
    value
}
