//! What the handles that hold a charge ([`Permit`](crate::Permit), [`Estimate`](crate::Estimate),
//! [`Turn`](crate::Turn)) keep of an admitted call ([`HeldCall`]), and the one vocabulary they share:
//! `decision()`/`decisions()`, [`settle`](crate::Estimate::settle) with what was [`Used`], and `cancel()`,
//! which gives everything back.

use std::future::Future as _;

use crate::call::{Call, Ruling};
use crate::{Decision, Limiter};

/// An admitted call, and what each of its limits charged: enough to give any of it back.
pub(crate) struct HeldCall {
    pub(crate) limiter: Limiter,
    pub(crate) call: Call<'static>,
    pub(crate) decided: Ruling,
}

impl HeldCall {
    /// Gives back `units[i]` of limit `i`'s charge (at most what it charged).
    pub(crate) async fn give_back(&self, units: &[u64]) {
        let pipeline = &self.limiter.pipeline;
        pipeline.give_back(&self.call, &self.decided, units).await;
    }

    /// Returns each limit's cost: what it charged.
    pub(crate) fn costs(&self) -> Vec<u64> {
        self.call
            .limits()
            .iter()
            .map(|limit| limit.terms.cost)
            .collect()
    }

    /// Returns what gives back its permits in flight and nothing of its rates ([`Call::permits`]).
    pub(crate) fn permits(&self) -> Vec<u64> {
        self.call.permits()
    }

    /// Returns what settles the call as having used `used`: of each limit, the part of its charge not used,
    /// and at least its permit in flight (the call is over).
    pub(crate) fn unused(&self, used: &(impl Used + ?Sized)) -> Vec<u64> {
        let permits = self.call.permits();
        self.costs()
            .iter()
            .enumerate()
            .map(|(i, &cost)| {
                let unused = used.used(i).map_or(0, |used| cost.saturating_sub(used));
                unused.max(permits[i])
            })
            .collect()
    }

    /// Returns the first limit's decision.
    pub(crate) fn decision(&self) -> Decision {
        self.decided.decision()
    }

    /// Returns each limit's decision, in the order given.
    pub(crate) fn decisions(&self) -> Vec<Decision> {
        self.decided.decisions().collect()
    }

    /// Gives back `units` now, from a destructor: in memory (and a permit in flight) at once, what Redis must
    /// hear on a task of its own (with no Tokio runtime to run it, the charge stays: the limit admits less,
    /// never more; a permit expires after its time to live).
    pub(crate) fn give_back_now(self, units: Vec<u64>) {
        if units.iter().all(|&units| units == 0) {
            return;
        }
        let mut giving = Box::pin(async move { self.give_back(&units).await });
        let waker = futures_util::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        if giving.as_mut().poll(&mut cx).is_pending() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(giving);
            }
        }
    }
}

/// What a settled call used of each of its limits: what [`Estimate::settle`](crate::Estimate::settle),
/// [`Turn::settle`](crate::Turn::settle) and [`Permit::settle`](crate::Permit::settle) take. Sealed.
///
/// - a number: what the first limit used (the only one, for a call of one limit); the others used what
///   they were charged;
/// - an array, a slice or a `Vec`: what each limit used, in the order given (a limit past its end used what
///   it was charged);
/// - [`AsCharged`]: every limit used what it was charged.
///
/// Each limit gives back the part of its charge not used (nothing when it used as much or more), and its
/// permit in flight, if it holds one: the call is over.
pub trait Used: sealed::Sealed {
    /// Returns what limit `i` used, or `None` when it used what it was charged.
    #[doc(hidden)]
    fn used(&self, i: usize) -> Option<u64>;
}

/// Every limit used what it was charged: settled so, a call gives back only its permits in flight (what
/// dropping a [`Permit`](crate::Permit) does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AsCharged;

mod sealed {
    pub trait Sealed {}
}

impl sealed::Sealed for u64 {}
impl Used for u64 {
    fn used(&self, i: usize) -> Option<u64> {
        (i == 0).then_some(*self)
    }
}

impl sealed::Sealed for AsCharged {}
impl Used for AsCharged {
    fn used(&self, _: usize) -> Option<u64> {
        None
    }
}

impl sealed::Sealed for [u64] {}
impl Used for [u64] {
    fn used(&self, i: usize) -> Option<u64> {
        self.get(i).copied()
    }
}

impl<const N: usize> sealed::Sealed for [u64; N] {}
impl<const N: usize> Used for [u64; N] {
    fn used(&self, i: usize) -> Option<u64> {
        self.get(i).copied()
    }
}

impl sealed::Sealed for Vec<u64> {}
impl Used for Vec<u64> {
    fn used(&self, i: usize) -> Option<u64> {
        self.get(i).copied()
    }
}

impl<U: Used + ?Sized> sealed::Sealed for &U {}
impl<U: Used + ?Sized> Used for &U {
    fn used(&self, i: usize) -> Option<u64> {
        (**self).used(i)
    }
}
