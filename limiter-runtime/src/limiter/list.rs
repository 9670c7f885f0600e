//! [`LimitList`]: the limits of one call of several, as the plain API takes them (`check_all`, `enforce_all`,
//! `acquire_all`): arrays, `Vec`s and slices of `(rule, key)`, `(rule, key, cost)` or `(rule, key, cost,
//! priority)`.

use std::fmt;

use crate::{Decision, Priority, Rule};

/// The limits of one call of several, each `(rule, key)` or `(rule, key, cost)`: an array (answered with an
/// array of decisions), a `Vec` or a slice (answered with a `Vec`). What
/// [`check_all`](crate::Limiter::check_all) and [`enforce_all`](crate::Limiter::enforce_all) take.
pub trait LimitList: sealed::Sealed {
    /// Each limit's decision, in the order given.
    type Decisions;
    #[doc(hidden)]
    fn each(&self, each: &mut dyn FnMut(&Rule, fmt::Arguments<'_>, u64, Priority));
    #[doc(hidden)]
    fn decisions(decisions: impl ExactSizeIterator<Item = Decision>) -> Self::Decisions;
}

mod sealed {
    pub trait Sealed {}
}

/// A limit of a list: `(rule, key)` weighs 1, `(rule, key, cost)` its cost, and `(rule, key, cost, priority)`
/// says how much the call matters to this limit ([`Priority`]; `Normal` otherwise).
pub trait ListedLimit: sealed::Sealed {
    #[doc(hidden)]
    fn parts(&self) -> (&Rule, &dyn fmt::Display, u64, Priority);
}

impl<K: fmt::Display> sealed::Sealed for (&Rule, K) {}
impl<K: fmt::Display> ListedLimit for (&Rule, K) {
    fn parts(&self) -> (&Rule, &dyn fmt::Display, u64, Priority) {
        (self.0, &self.1, 1, Priority::Normal)
    }
}

impl<K: fmt::Display> sealed::Sealed for (&Rule, K, u64) {}
impl<K: fmt::Display> ListedLimit for (&Rule, K, u64) {
    fn parts(&self) -> (&Rule, &dyn fmt::Display, u64, Priority) {
        (self.0, &self.1, self.2, Priority::Normal)
    }
}

impl<K: fmt::Display> sealed::Sealed for (&Rule, K, u64, Priority) {}
impl<K: fmt::Display> ListedLimit for (&Rule, K, u64, Priority) {
    fn parts(&self) -> (&Rule, &dyn fmt::Display, u64, Priority) {
        (self.0, &self.1, self.2, self.3)
    }
}

impl<L: ListedLimit, const N: usize> sealed::Sealed for [L; N] {}
impl<L: ListedLimit, const N: usize> LimitList for [L; N] {
    type Decisions = [Decision; N];
    fn each(&self, each: &mut dyn FnMut(&Rule, fmt::Arguments<'_>, u64, Priority)) {
        for limit in self {
            let (rule, key, cost, priority) = limit.parts();
            each(rule, format_args!("{key}"), cost, priority);
        }
    }
    fn decisions(decisions: impl ExactSizeIterator<Item = Decision>) -> [Decision; N] {
        let mut decisions = decisions;
        std::array::from_fn(|_| decisions.next().expect("one decision per limit"))
    }
}

impl<L: ListedLimit> sealed::Sealed for Vec<L> {}
impl<L: ListedLimit> LimitList for Vec<L> {
    type Decisions = Vec<Decision>;
    fn each(&self, each: &mut dyn FnMut(&Rule, fmt::Arguments<'_>, u64, Priority)) {
        self.as_slice().each(each);
    }
    fn decisions(decisions: impl ExactSizeIterator<Item = Decision>) -> Vec<Decision> {
        decisions.collect()
    }
}

impl<L: ListedLimit> sealed::Sealed for &[L] {}
impl<L: ListedLimit> LimitList for &[L] {
    type Decisions = Vec<Decision>;
    fn each(&self, each: &mut dyn FnMut(&Rule, fmt::Arguments<'_>, u64, Priority)) {
        for limit in self.iter() {
            let (rule, key, cost, priority) = limit.parts();
            each(rule, format_args!("{key}"), cost, priority);
        }
    }
    fn decisions(decisions: impl ExactSizeIterator<Item = Decision>) -> Vec<Decision> {
        decisions.collect()
    }
}
