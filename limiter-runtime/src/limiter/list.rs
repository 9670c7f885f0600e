//! [`LimitList`]: the limits of one call of several, as [`Limiter::all`](crate::Limiter::all) takes them:
//! arrays, `Vec`s and slices of `(rule, key)` or `(rule, key, cost)`.

use std::fmt;

use crate::{Decision, Rule};

/// The limits of one call of several, each `(rule, key)` or `(rule, key, cost)`: an array (answered with an
/// array of decisions), a `Vec` or a slice (answered with a `Vec`). What
/// [`Limiter::all`](crate::Limiter::all) takes.
pub trait LimitList: sealed::Sealed {
    /// Each limit's decision, in the order given.
    type Decisions: Send + 'static;
    /// Calls `each` with each limit's rule, key, and cost of its own (if it gives one).
    #[doc(hidden)]
    fn each(&self, each: &mut dyn FnMut(&Rule, fmt::Arguments<'_>, Option<u64>));
    #[doc(hidden)]
    fn decisions(decisions: impl ExactSizeIterator<Item = Decision>) -> Self::Decisions;
}

mod sealed {
    pub trait Sealed {}
}

/// A limit of a list: `(rule, key)` weighs what the request says ([`cost`](crate::Request::cost), 1 unless
/// told), `(rule, key, cost)` its own cost.
pub trait ListedLimit: sealed::Sealed {
    #[doc(hidden)]
    fn parts(&self) -> (&Rule, &dyn fmt::Display, Option<u64>);
}

impl<K: fmt::Display> sealed::Sealed for (&Rule, K) {}
impl<K: fmt::Display> ListedLimit for (&Rule, K) {
    fn parts(&self) -> (&Rule, &dyn fmt::Display, Option<u64>) {
        (self.0, &self.1, None)
    }
}

impl<K: fmt::Display> sealed::Sealed for (&Rule, K, u64) {}
impl<K: fmt::Display> ListedLimit for (&Rule, K, u64) {
    fn parts(&self) -> (&Rule, &dyn fmt::Display, Option<u64>) {
        (self.0, &self.1, Some(self.2))
    }
}

/// Calls `each` with each of `limits`.
fn each_of<L: ListedLimit>(
    limits: &[L],
    each: &mut dyn FnMut(&Rule, fmt::Arguments<'_>, Option<u64>),
) {
    for limit in limits {
        let (rule, key, cost) = limit.parts();
        each(rule, format_args!("{key}"), cost);
    }
}

impl<L, const N: usize> sealed::Sealed for [L; N] {}
impl<L: ListedLimit, const N: usize> LimitList for [L; N] {
    type Decisions = [Decision; N];
    fn each(&self, each: &mut dyn FnMut(&Rule, fmt::Arguments<'_>, Option<u64>)) {
        each_of(self, each);
    }
    fn decisions(decisions: impl ExactSizeIterator<Item = Decision>) -> [Decision; N] {
        let mut decisions = decisions;
        std::array::from_fn(|_| decisions.next().expect("one decision per limit"))
    }
}

impl<L> sealed::Sealed for Vec<L> {}
impl<L: ListedLimit> LimitList for Vec<L> {
    type Decisions = Vec<Decision>;
    fn each(&self, each: &mut dyn FnMut(&Rule, fmt::Arguments<'_>, Option<u64>)) {
        each_of(self, each);
    }
    fn decisions(decisions: impl ExactSizeIterator<Item = Decision>) -> Vec<Decision> {
        decisions.collect()
    }
}

impl<L> sealed::Sealed for &[L] {}
impl<L: ListedLimit> LimitList for &[L] {
    type Decisions = Vec<Decision>;
    fn each(&self, each: &mut dyn FnMut(&Rule, fmt::Arguments<'_>, Option<u64>)) {
        each_of(self, each);
    }
    fn decisions(decisions: impl ExactSizeIterator<Item = Decision>) -> Vec<Decision> {
        decisions.collect()
    }
}
