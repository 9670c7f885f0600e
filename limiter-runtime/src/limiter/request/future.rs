//! The futures of a check and of an enforced call of one limit, unboxed on the hot path. What this process
//! decides is decided when the request is awaited (in memory, a cached denial, the switch off, the breaker
//! open); only a Redis round trip is left to poll. A call that holds a permit, or has a slot to wait for, is
//! boxed (rare).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;

use crate::call::Call;
use crate::pipeline::{Admitted, Deciding};
use crate::{Decision, Limiter, Priority, RateLimited};

/// The future of a [`check`](super::ask::Check) of one limit: what awaiting its
/// [`Request`](super::Request) polls.
#[must_use = "futures do nothing unless polled"]
pub struct CheckFuture<'a>(Checking<'a>);

// The decision in place, unboxed (the hot path's): far larger than a box, and polled far more often.
#[allow(clippy::large_enum_variant)]
enum Checking<'a> {
    Deciding(Deciding<'a, Call<'a>, Decision>),
    Boxed(BoxFuture<'a, Decision>),
}

/// The future of an [`enforce`](super::ask::Enforce)d call of one limit: what awaiting its
/// [`Request`](super::Request) polls.
#[must_use = "futures do nothing unless polled"]
pub struct EnforceFuture<'a>(Enforcing<'a>);

#[allow(clippy::large_enum_variant)]
enum Enforcing<'a> {
    Deciding(Deciding<'a, Call<'a>, Admitted<'a>>),
    Boxed(BoxFuture<'a, Result<Decision, RateLimited>>),
}

impl<'a> CheckFuture<'a> {
    /// Returns the future of a check of `call`: its decision; a permit it took given back at once (see
    /// [`Limiter::let_go`]).
    #[inline(always)]
    pub(crate) fn new(limiter: &'a Limiter, call: Call<'a>) -> CheckFuture<'a> {
        let pipeline = &limiter.pipeline;
        if call.holds_permits() {
            return CheckFuture(Checking::Boxed(Box::pin(async move {
                let (call, decided) = pipeline
                    .decide(call, |_, call, decided| (call, decided))
                    .await;
                limiter.let_go(&call, &decided).await;
                decided.decision()
            })));
        }
        CheckFuture(Checking::Deciding(
            pipeline.decide(call, |_, _, decided| decided.decision()),
        ))
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
            return EnforceFuture(Enforcing::Boxed(Box::pin(async move {
                let (call, decided) = limiter.admit(call, priority).await?;
                limiter.let_go(&call, &decided).await;
                Ok(decided.decision())
            })));
        }
        EnforceFuture(Enforcing::Deciding(limiter.pipeline.enforce(call)))
    }
}

impl Future for CheckFuture<'_> {
    type Output = Decision;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Decision> {
        match &mut self.get_mut().0 {
            Checking::Deciding(deciding) => Pin::new(deciding).poll(cx),
            Checking::Boxed(boxed) => boxed.as_mut().poll(cx),
        }
    }
}

impl Future for EnforceFuture<'_> {
    type Output = Result<Decision, RateLimited>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().0 {
            // No slot to wait for: the call's verdict is all there is.
            Enforcing::Deciding(deciding) => Pin::new(deciding)
                .poll(cx)
                .map(|admitted| admitted.map(|enforced| enforced.decided.decision())),
            Enforcing::Boxed(boxed) => boxed.as_mut().poll(cx),
        }
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
