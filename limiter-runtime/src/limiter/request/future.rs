//! The futures of a check and of an enforced call of one limit, unboxed on the hot path. Each holds its call
//! in place and lends it to the decision (as an `async fn` would hold it in its frame): a round trip to Redis
//! boxes a borrow, not the call. What this process decides is decided at the first poll (in memory, a cached
//! denial, the switch off, the breaker open); only a Redis round trip is left to poll. A call that holds a
//! permit, or has a slot to wait for, is boxed whole (rare).

use std::future::Future;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;

use crate::call::Call;
use crate::pipeline::{Deciding, ThenFn};
use crate::{Decision, Limiter, Priority, RateLimited};

/// The future of a [`check`](super::ask::Check) of one limit: what awaiting its
/// [`Request`](super::Request) polls.
#[must_use = "futures do nothing unless polled"]
pub struct CheckFuture<'a>(Asked<'a, Decision>);

/// The future of an [`enforce`](super::ask::Enforce)d call of one limit: what awaiting its
/// [`Request`](super::Request) polls.
#[must_use = "futures do nothing unless polled"]
pub struct EnforceFuture<'a>(Asked<'a, Result<Decision, RateLimited>>);

/// A call asked: decided in place, lending the call it holds; or boxed whole.
// The call in place, unboxed (the hot path's): far larger than a box, and far more often taken.
#[allow(clippy::large_enum_variant)]
enum Asked<'a, T> {
    InPlace(InPlace<'a, T>),
    Boxed(BoxFuture<'a, T>),
}

/// A call decided where it lies. Pinned (`!Unpin`): the decision borrows `call`, which never moves once it
/// is polled, and is declared first, so that it is dropped before the call it borrows.
struct InPlace<'a, T> {
    deciding: Option<Deciding<'a, &'a Call<'a>, T>>,
    limiter: &'a Limiter,
    then: ThenFn<&'a Call<'a>, T>,
    call: Call<'a>,
    _pinned: PhantomPinned,
}

impl<'a, T: Send + 'a> InPlace<'a, T> {
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        // SAFETY: nothing is moved out of `self`, which is pinned: `call` stays where it is for as long as
        // `self` lives, and `deciding`, which borrows it, is dropped first (declared first; and replaced only
        // while empty). So the borrow made here, said to live for `'a`, ends before the call does.
        let this = unsafe { self.get_unchecked_mut() };
        let deciding = match &mut this.deciding {
            Some(deciding) => deciding,
            empty => {
                let call: &'a Call<'a> = unsafe { &*std::ptr::addr_of!(this.call) };
                empty.insert(this.limiter.pipeline.decide(call, this.then))
            }
        };
        Pin::new(deciding).poll(cx)
    }
}

impl<'a> CheckFuture<'a> {
    /// Returns the future of a check of `call`: its decision; a permit it took given back at once (see
    /// [`Limiter::let_go`]).
    #[inline(always)]
    pub(crate) fn new(limiter: &'a Limiter, call: Call<'a>) -> CheckFuture<'a> {
        if call.holds_permits() {
            let pipeline = &limiter.pipeline;
            return CheckFuture(Asked::Boxed(Box::pin(async move {
                let (call, decided) = pipeline
                    .decide(call, |_, call, decided| (call, decided))
                    .await;
                limiter.let_go(&call, &decided).await;
                decided.decision()
            })));
        }
        CheckFuture(Asked::InPlace(InPlace {
            deciding: None,
            limiter,
            then: |_, _, decided| decided.decision(),
            call,
            _pinned: PhantomPinned,
        }))
    }
}

impl<'a> EnforceFuture<'a> {
    /// Returns the future of an enforced `call` of `priority`: a refusal, or its decision once its slot has
    /// come.
    #[inline(always)]
    pub(crate) fn new(
        limiter: &'a Limiter,
        call: Call<'a>,
        priority: Priority,
    ) -> EnforceFuture<'a> {
        if call.holds_permits() || call.may_wait_for_slot() {
            return EnforceFuture(Asked::Boxed(Box::pin(async move {
                let (call, decided) = limiter.admit(call, priority).await?;
                limiter.let_go(&call, &decided).await;
                Ok(decided.decision())
            })));
        }
        // No slot to wait for: the call's verdict is all there is.
        EnforceFuture(Asked::InPlace(InPlace {
            deciding: None,
            limiter,
            then: |pipeline, call, decided| {
                let verdict = pipeline.slot_or_refusal(call, &decided);
                verdict.map(|_| decided.decision())
            },
            call,
            _pinned: PhantomPinned,
        }))
    }
}

impl<'a, T: Send + 'a> Asked<'a, T> {
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        // SAFETY: a pinned projection: neither variant is moved out of, and the in-place one is polled
        // pinned where it lies.
        match unsafe { self.get_unchecked_mut() } {
            Asked::InPlace(in_place) => unsafe { Pin::new_unchecked(in_place) }.poll(cx),
            Asked::Boxed(boxed) => boxed.as_mut().poll(cx),
        }
    }
}

impl Future for CheckFuture<'_> {
    type Output = Decision;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Decision> {
        // SAFETY: a pinned projection to the only field.
        unsafe { self.map_unchecked_mut(|future| &mut future.0) }.poll(cx)
    }
}

impl Future for EnforceFuture<'_> {
    type Output = Result<Decision, RateLimited>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: a pinned projection to the only field.
        unsafe { self.map_unchecked_mut(|future| &mut future.0) }.poll(cx)
    }
}

impl std::fmt::Debug for CheckFuture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckFuture").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for EnforceFuture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnforceFuture").finish_non_exhaustive()
    }
}
