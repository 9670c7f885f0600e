//! The pipeline: every call goes through here, from the plain API, a [`Limit`](crate::Limit), the attribute
//! and the tower layer alike, as one [`Call`] of its limits (one, or several stacked), decided as one.
//!
//! 1. The switch: off, every call is admitted, with no store traffic at all.
//! 2. A limit the call skips is decided here (its call was built with the overrides in force:
//!    [`Call::new`]); so is a call that a misconfigured limit (one of zero) refuses, its other limits not
//!    asked.
//! 3. The backend decides the call: admitted when every limit that vetoes admits it, and then charged to each,
//!    else charged to none. In memory at once; with Redis, at once what this process knows (a denial Redis
//!    already gave, a lease, the breaker open), else one script call within the deadline, degraded by
//!    `on_error`.
//! 4. For an enforced call, the verdict: a rejection names the first limit that refused (a shadow limit only
//!    reports), and an admitted call first waits for its slot.
//!
//! Each decision is reported once, where it is made, to the limiter's [`Observers`].
//! What this process decides is decided at once (at a request's first poll, or when the attribute's call is
//! made), with the limiter borrowed; only a Redis round trip is left to await, and a slot to wait for is the
//! limiter's (`limiter/waiting.rs`).

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::future::{BoxFuture, Either};

use crate::backend::{Backend, GivingBack, Pending, Settling, Then};
use crate::budget::{now, Now};
use crate::call::{AsCall, Ask, Call, LimitRuling, OneOrMany, Preset, Ruling};
use crate::clock::Clock;
use crate::error::LimitState;
use crate::observe::{Observers, Timer};
use crate::overrides::Overrides;
use crate::rule::{Defaults, Live};
use crate::{Decision, OnError, Priority, RateLimited, Reason};

/// The id of the next pipeline built.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// What decides a limiter's calls: its backend, its defaults, the overrides and switches in force, and who
/// hears of each decision. A [`Limiter`](crate::Limiter) is a handle to one.
pub(crate) struct Pipeline {
    /// Unique in this process, for as long as it runs: what a resolution kept for this limiter is kept under.
    pub(crate) id: u64,
    pub(crate) backend: Backend,
    pub(crate) defaults: Live,
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
    /// The calls waiting here for their turn to go to an upstream, by key ([`Limiter::turn`](crate::Limiter::turn)).
    pub(crate) lines: crate::outbound::Lines,
    /// The limits file this node reads, if it reads one: what a pushed file's errors name.
    pub(crate) limits_file: std::sync::OnceLock<std::path::PathBuf>,
}

/// A ruling ready at once; or a ruling to await, then reported and `then` of it, polled in place (the store's
/// [`Settling`] boxes only a round trip of its own). `C` is the call, owned or borrowed; `T` what the caller
/// makes of the ruling.
pub(crate) enum Deciding<'a, C: AsCall, T> {
    Now(Now<T>),
    Waits(Settling<'a, C, Reported<'a, C, T>>),
}

impl<C: AsCall, T> Future for Deciding<'_, C, T> {
    type Output = T;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match self.get_mut() {
            Deciding::Now(now) => Pin::new(now).poll(cx),
            Deciding::Waits(settling) => Pin::new(settling).poll(cx),
        }
    }
}

/// What the caller makes of a call and its ruling (the pipeline at hand).
pub(crate) type ThenFn<C, T> = fn(&Pipeline, C, Ruling) -> T;

/// What follows a pending ruling: reported (how long it took, from `timer`), and then `then` of it.
pub(crate) struct Reported<'a, C, T> {
    pipeline: &'a Pipeline,
    timer: Timer,
    then: ThenFn<C, T>,
}

impl<C: AsCall, T> Then<C> for Reported<'_, C, T> {
    type Output = T;

    #[inline]
    fn then(self, call: C, mut ruling: Ruling) -> T {
        self.pipeline
            .report(call.as_call(), &mut ruling, self.timer);
        (self.then)(self.pipeline, call, ruling)
    }
}

/// An admitted call, what was decided of it, and how long it waits for its slot (a leaky bucket's that
/// waits; zero for any other): the slot is waited for in its node's line, above the pipeline (see
/// [`Owner::after_slot`]).
pub(crate) struct Enforced<'r> {
    pub(crate) call: Call<'r>,
    pub(crate) decided: Ruling,
    pub(crate) slot: Duration,
}

/// What an enforced call comes to: admitted, or refused.
pub(crate) type Admitted<'r> = Result<Enforced<'r>, RateLimited>;

/// What a caller keeps of an enforced call ([`Pipeline::enforce_owned`]), or its refusal: at once, or boxed
/// with the rest to await.
pub(crate) type Enforcing<T> =
    Either<Now<Result<T, RateLimited>>, BoxFuture<'static, Result<T, RateLimited>>>;

/// What a future that outlives its caller owns to reach a pipeline: a [`Limiter`](crate::Limiter).
pub(crate) trait Owner: Clone + Send + Sync + 'static {
    fn pipeline(&self) -> &Pipeline;

    /// Waits for the slot of an admitted call of `priority` in its node's line: the call and its ruling once
    /// its turn comes, or a refusal when a more important call took the slot past its deadline. Dropped
    /// before, it leaves the line and gives back what the call charged. A call with no slot to wait for
    /// (none waits in its line) comes back at once.
    fn after_slot(
        &self,
        enforced: Enforced<'static>,
        priority: Priority,
    ) -> BoxFuture<'static, Result<(Call<'static>, Ruling), RateLimited>>;
}

impl Pipeline {
    pub(crate) fn new(backend: Backend, defaults: Defaults, clock: Arc<dyn Clock>) -> Pipeline {
        Pipeline {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            backend,
            defaults: Live::new(defaults),
            clock,
            overrides: Arc::default(),
            background: Once::new(),
            shadowed: AtomicU64::new(0),
            observers: Observers::default(),
            lines: crate::outbound::Lines::default(),
            limits_file: std::sync::OnceLock::new(),
        }
    }

    /// Starts what keeps a Redis limiter's view current while it lives, once: its heartbeat, the override
    /// sync, and the sweep of idle leases.
    pub(crate) fn start_background(&self) {
        self.background.call_once(|| {
            self.backend
                .operations()
                .start(&self.overrides, &self.observers.watch)
        });
    }

    /// Builds the call of `asks`, with the overrides in force applied: the one constructor of a call.
    #[inline(always)]
    pub(crate) fn call<'r>(&self, asks: impl IntoIterator<Item = Ask<'r>>) -> Call<'r> {
        Call::new(&self.overrides, &*self.clock, asks)
    }

    /// Decides `call` as far as this process can: its ruling (reported), or what the store left pending.
    #[inline(always)]
    pub(crate) fn decide_now(&self, call: &Call<'_>) -> Result<Ruling, Pending> {
        let inner = self;
        // The switch opens every limit but the admin door's own.
        let enabled = inner.overrides.is_enabled()
            || call.limits().iter().any(|limit| limit.rule.ignores_switch);
        // A misconfigured limit refuses its call before any store is asked: none of its limits is charged.
        let misconfigured = enabled && call.misconfigured();
        let mut decided = if !enabled || call.all_preset() || misconfigured {
            // Switched off, no limit applies; a limit decided before any store was asked, as it was; the
            // others of a misconfigured call, not asked, are skipped.
            let now = inner.clock.now_micros();
            let answers = call
                .limits()
                .iter()
                .map(|limit| {
                    let outcome = match limit.preset.filter(|_| enabled) {
                        Some(preset) => preset.outcome(&limit.terms),
                        None => crate::algorithm::Outcome::admit(limit.terms.max),
                    };
                    LimitRuling::uncharged(limit.decision(&limit.terms, outcome, now, false))
                })
                .collect::<OneOrMany<LimitRuling>>();
            let admitted = call.admits(|i| answers[i].decision.allowed);
            Ruling {
                limits: answers,
                admitted,
            }
        } else {
            inner.backend.decide(call)?
        };
        decided.judge(call, enabled);
        // A misconfigured call's decisions were not counted: a response advertises none of them.
        inner
            .observers
            .decided(call, &decided, enabled && !misconfigured);
        Ok(decided)
    }

    /// Returns the future of `call`'s pending ruling, and then `then` of the call and its ruling.
    #[inline(always)]
    fn deciding<'a, C, T>(
        &'a self,
        call: C,
        pending: Pending,
        then: ThenFn<C, T>,
    ) -> Deciding<'a, C, T>
    where
        C: AsCall + Send + 'a,
        T: Send + 'a,
    {
        self.start_background();
        let reported = Reported {
            pipeline: self,
            timer: Timer::start(),
            then,
        };
        Deciding::Waits(pending.settle(call, reported))
    }

    /// Returns what the store rules of `call` once `pending` is settled (degraded when Redis cannot),
    /// reported: unboxed, for a caller whose future is boxed already.
    pub(crate) async fn ruling_later(&self, call: &Call<'_>, pending: Pending) -> Ruling {
        self.start_background();
        let timer = Timer::start();
        let mut ruling = pending.ruling(call).await;
        self.report(call, &mut ruling, timer);
        ruling
    }

    /// Reports what Redis decided of `call` (or its failure policy did, in time): once, to the observers.
    fn report(&self, call: &Call<'_>, decided: &mut Ruling, timer: Timer) {
        decided.judge(call, true);
        self.observers.redis(call, timer);
        self.observers.decided(call, decided, true);
    }

    /// Decides `call`, borrowed: at once (handed over through Tokio's budget), in the batch it waits in, or
    /// after the round trip, boxed (its future is large: the caller's stays small).
    #[inline(always)]
    pub(crate) fn ruling<'a, 'r>(
        &'a self,
        call: &'a Call<'r>,
    ) -> Deciding<'a, &'a Call<'r>, Ruling> {
        match self.decide_now(call) {
            Ok(decided) => Deciding::Now(now(decided)),
            Err(pending) => self.deciding(call, pending, |_, _, decided| decided),
        }
    }

    /// Decides `call` (owned, or borrowed from where it stays put), and returns `then` of it and its ruling: at
    /// once, or with the round trip left to await (an owned call is moved into the future only then).
    /// What a check keeps (each limit's decision, or the call beside its ruling) is `then`'s to make.
    #[inline(always)]
    pub(crate) fn decide<'a, C: AsCall + Send + 'a, T: Send + 'a>(
        &'a self,
        call: C,
        then: ThenFn<C, T>,
    ) -> Deciding<'a, C, T> {
        match self.decide_now(call.as_call()) {
            Ok(decided) => Deciding::Now(now(then(self, call, decided))),
            Err(pending) => self.deciding(call, pending, then),
        }
    }

    /// Decides `call` for an enforced call: its [verdict](Pipeline::slot_or_refusal) (a rejection, or,
    /// admitted, the call, its answer and its slot to wait for), at once or with the round trip left to await.
    #[inline(always)]
    pub(crate) fn enforce<'a, 'r: 'a>(
        &'a self,
        call: Call<'r>,
    ) -> Deciding<'a, Call<'r>, Admitted<'r>> {
        self.decide(call, |pipeline, call, decided| {
            let slot = pipeline.slot_or_refusal(&call, &decided)?;
            Ok(Enforced {
                call,
                decided,
                slot,
            })
        })
    }

    /// Returns [`enforce`](Pipeline::enforce) for a caller whose future must own what it keeps (the
    /// attribute's, which outlives the borrow it finds its limiter by): the rest, when there is one, holds
    /// `owner`, and is boxed; a slot is waited for in its node's line (given back if the caller gives up).
    /// `then` makes what the caller keeps of an admitted call, given its owner.
    #[inline(always)]
    pub(crate) fn enforce_owned<O, T, F>(
        owner: &O,
        call: Call<'static>,
        priority: Priority,
        then: F,
    ) -> Enforcing<T>
    where
        O: Owner,
        T: Send + 'static,
        F: FnOnce(&O, Call<'static>, Ruling) -> T + Send + 'static,
    {
        let pipeline = owner.pipeline();
        let waits = call.may_wait_for_slot();
        match pipeline.decide_now(&call) {
            Ok(decided) if !waits => {
                let verdict = pipeline.slot_or_refusal(&call, &decided);
                Either::Left(now(verdict.map(|_| then(owner, call, decided))))
            }
            // Admitted or not, its slot (if any) is waited for in its node's line (rare).
            Ok(decided) => {
                let owner = owner.clone();
                Either::Right(Box::pin(async move {
                    let slot = owner.pipeline().slot_or_refusal(&call, &decided)?;
                    let enforced = Enforced {
                        call,
                        decided,
                        slot,
                    };
                    let (call, decided) = owner.after_slot(enforced, priority).await?;
                    Ok(then(&owner, call, decided))
                }))
            }
            // As `enforce`, with what the caller keeps made at once when there is no slot to wait for: one
            // future fewer around the round trip's (the attribute's Redis path counts about 800 instructions
            // less).
            Err(pending) => {
                let owner = owner.clone();
                Either::Right(Box::pin(async move {
                    let pipeline = owner.pipeline();
                    let decided = pipeline.ruling_later(&call, pending).await;
                    let slot = pipeline.slot_or_refusal(&call, &decided)?;
                    if !waits {
                        return Ok(then(&owner, call, decided));
                    }
                    let enforced = Enforced {
                        call,
                        decided,
                        slot,
                    };
                    let (call, decided) = owner.after_slot(enforced, priority).await?;
                    Ok(then(&owner, call, decided))
                }))
            }
        }
    }

    /// Returns what `decided` means for `call`: a rejection ([`RateLimited`], naming the first limit that refused; the
    /// others' states beside it), or how long an admitted call waits for its slot first. A shadow limit never
    /// rejects or holds a call: what it would have rejected is reported.
    pub(crate) fn slot_or_refusal(
        &self,
        call: &Call<'_>,
        decided: &Ruling,
    ) -> Result<Duration, RateLimited> {
        let mut wait = Duration::ZERO;
        let mut refused = None;
        let limits = call.limits();
        for (i, (limit, answer)) in limits.iter().zip(decided.limits.iter()).enumerate() {
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
        let (limit, decision) = (&limits[refused], decided.limits[refused].decision);
        if !decision.degraded {
            tracing::debug!(
                key = %limit.key.parts(),
                limit = decision.limit,
                retry_after = ?decision.retry_after,
                reason = decision.verdict.as_str(),
                priority = limit.priority.map(crate::Priority::as_str),
                plan = limit.applied().plan_label(),
                overridden = limit.overridden,
                "rate limiter: limited"
            );
        }
        // Each limit's state, when there are several (one is the rejection's own); a shadow or skipped limit,
        // or a decision made without a count, is not advertised in quota headers.
        let mut states = match limits {
            [_] => Vec::new(),
            _ => limits
                .iter()
                .zip(decided.decisions())
                .map(|(limit, decision)| LimitState {
                    policy: limit.rule.policy_name(),
                    applied: limit.applied(),
                    decision,
                    advertised: advertised(limit, &decision),
                })
                .collect(),
        };
        // Only a limit that fails closed answers "unavailable": a local decision over this node's share is a
        // limit like any other, with its message and quota. A call no wait can admit (a cost above the limit)
        // says so; a misconfigured limit says what is wrong with it, and advertises nothing.
        let (policy, mut message) = (limit.rule.policy_name(), limit.rule.message_value().clone());
        let reason = if let Some(Preset::Misconfigured(fault)) = limit.preset {
            message = Cow::Owned(fault.sentence(&policy));
            states.iter_mut().for_each(|state| state.advertised = false);
            Reason::Misconfigured
        } else if decision.degraded && limit.on_error == OnError::Closed {
            Reason::Unavailable
        } else if !limit.can_fit() {
            Reason::TooLarge
        } else {
            Reason::Limited
        };
        Err(RateLimited::new(
            message,
            (policy, limit.applied()),
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
        decided: &'a Ruling,
        units: &'a [u64],
    ) -> GivingBack<'a> {
        self.observers.given_back(call, units);
        self.backend.give_back(call, decided, units)
    }
}

/// Returns whether a limit's decision is advertised in quota headers: it applies to the call (not a shadow limit, not
/// one the call skips, not a misconfigured one), and was counted (not made by `on_error = open | closed` while
/// Redis failed: the count is unknown; a decision over this node's share, `local`, was counted).
pub(crate) fn advertised(limit: &crate::call::CallLimit<'_>, decision: &Decision) -> bool {
    let applies = limit.vetoes && limit.preset.is_none();
    applies && (!decision.degraded || limit.on_error == OnError::Local)
}
