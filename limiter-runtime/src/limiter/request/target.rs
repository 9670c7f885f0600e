//! What a request limits: one rule and a key ([`One`]), a resolved [`Limit`](crate::Limit) and a key
//! ([`OfLimit`]), or several limits decided as one ([`All`]). Each builds the request's call, the one way
//! every verb starts.

use std::fmt;

use crate::call::{Ask, Call, RuleRef};
use crate::key::StoreKey;
use crate::limiter::{LimitList, Limiter};
use crate::{Limit, Priority, Rule};

/// One limit for one key: what [`Limiter::check`] and its sibling verbs ask.
#[derive(Debug, Clone, Copy)]
pub struct One<'a, K> {
    limiter: &'a Limiter,
    rule: &'a Rule,
    key: K,
    plan: Option<&'a str>,
}

/// A resolved [`Limit`] for one key already written out: what [`Limit::check`] and its sibling verbs ask.
#[derive(Debug, Clone, Copy)]
pub struct OfLimit<'a> {
    pub(crate) limit: &'a Limit,
    key: &'a str,
    plan: Option<&'a str>,
}

/// Several limits of one call, decided as one: admitted only when every limit admits it, and then counted by
/// each; else counted by none. What [`Limiter::all`] returns: ask it with the same verbs as one limit
/// ([`check`](All::check), [`enforce`](All::enforce), [`acquire`](All::acquire),
/// [`estimate`](All::estimate), [`turn`](All::turn)).
#[derive(Debug, Clone)]
pub struct All<'a, L> {
    limiter: &'a Limiter,
    limits: L,
    plan: Option<&'a str>,
}

impl<'a, K: fmt::Display> One<'a, K> {
    #[inline(always)]
    pub(crate) fn new(limiter: &'a Limiter, rule: &'a Rule, key: K) -> One<'a, K> {
        One {
            limiter,
            rule,
            key,
            plan: None,
        }
    }

    /// Returns the limiter asked.
    #[inline(always)]
    pub(crate) fn limiter(&self) -> &'a Limiter {
        self.limiter
    }

    /// Builds the call, weighing `cost`, of `priority`: the rule as the limiter's defaults resolve it
    /// (borrowed when they change nothing), the key written out.
    #[inline(always)]
    pub(crate) fn call_of(&self, cost: u64, priority: Priority) -> Call<'a> {
        let pipeline = &self.limiter.pipeline;
        let rule = match pipeline.defaults.resolved(self.rule) {
            std::borrow::Cow::Borrowed(rule) => RuleRef::Borrowed(rule),
            std::borrow::Cow::Owned(rule) => RuleRef::Shared(std::sync::Arc::new(rule)),
        };
        let key = StoreKey::new(rule.prefix_value(), format_args!("{}", self.key));
        pipeline.call([Ask::of(rule, key, cost, priority).on_plan(self.plan)])
    }
}

impl<'a> OfLimit<'a> {
    #[inline(always)]
    pub(crate) fn new(limit: &'a Limit, key: &'a str) -> OfLimit<'a> {
        OfLimit {
            limit,
            key,
            plan: None,
        }
    }

    /// Builds the call, weighing `cost`, of `priority`: the limit's rule, resolved already.
    #[inline(always)]
    pub(crate) fn call_of(&self, cost: u64, priority: Priority) -> Call<'a> {
        let rule = self.limit.current();
        let key = StoreKey::of_str(rule.prefix_value(), self.key);
        let ask = Ask::of(rule, key, cost, priority).on_plan(self.plan);
        self.limit.limiter.pipeline.call([ask])
    }
}

impl<'a, L> All<'a, L> {
    pub(crate) fn new(limiter: &'a Limiter, limits: L) -> All<'a, L> {
        All {
            limiter,
            limits,
            plan: None,
        }
    }
}

/// What a request's boxed verbs build their call from: its limits' asks, owning what they hold (the rules
/// shared, the keys written out), so that the future keeps nothing the caller lent.
pub(crate) trait Target<'a> {
    /// Returns the limiter asked.
    fn limiter(&self) -> &'a Limiter;
    /// Returns the asks of the call, each limit weighing `cost` unless it says otherwise, of `priority`.
    fn asks(&self, cost: u64, priority: Priority) -> Vec<Ask<'static>>;
}

/// Returns the ask of `rule` (resolved against `limiter`'s defaults, shared) for `key`.
fn ask(
    limiter: &Limiter,
    rule: &Rule,
    key: fmt::Arguments<'_>,
    cost: u64,
    priority: Priority,
) -> Ask<'static> {
    let rule = limiter.pipeline.defaults.resolve(rule, "");
    let key = StoreKey::new(rule.prefix_value(), key);
    Ask::of(
        RuleRef::Shared(std::sync::Arc::new(rule)),
        key,
        cost,
        priority,
    )
}

impl<'a, K: fmt::Display> Target<'a> for One<'a, K> {
    fn limiter(&self) -> &'a Limiter {
        self.limiter
    }

    fn asks(&self, cost: u64, priority: Priority) -> Vec<Ask<'static>> {
        let key = format_args!("{}", self.key);
        vec![ask(self.limiter, self.rule, key, cost, priority).on_plan(self.plan)]
    }
}

impl<'a> Target<'a> for OfLimit<'a> {
    fn limiter(&self) -> &'a Limiter {
        &self.limit.limiter
    }

    fn asks(&self, cost: u64, priority: Priority) -> Vec<Ask<'static>> {
        let rule = self.limit.current();
        let key = StoreKey::of_str(rule.prefix_value(), self.key);
        let rule = RuleRef::Shared(std::sync::Arc::new(Rule::clone(&rule)));
        vec![Ask::of(rule, key, cost, priority).on_plan(self.plan)]
    }
}

impl<'a, L: LimitList> Target<'a> for All<'a, L> {
    fn limiter(&self) -> &'a Limiter {
        self.limiter
    }

    fn asks(&self, cost: u64, priority: Priority) -> Vec<Ask<'static>> {
        let mut asks = Vec::new();
        self.limits.each(&mut |rule, key, own_cost| {
            let cost = own_cost.unwrap_or(cost);
            asks.push(ask(self.limiter, rule, key, cost, priority).on_plan(self.plan));
        });
        asks
    }
}

/// A request's target, which names the plan of the call (sealed: [`One`], [`OfLimit`] and [`All`]; see
/// [`Request::plan`](super::Request::plan)).
pub trait OnPlan<'a> {
    #[doc(hidden)]
    fn name_plan(&mut self, plan: &'a str);
}

impl<'a, K> OnPlan<'a> for One<'a, K> {
    fn name_plan(&mut self, plan: &'a str) {
        self.plan = Some(plan);
    }
}

impl<'a> OnPlan<'a> for OfLimit<'a> {
    fn name_plan(&mut self, plan: &'a str) {
        self.plan = Some(plan);
    }
}

impl<'a, L> OnPlan<'a> for All<'a, L> {
    fn name_plan(&mut self, plan: &'a str) {
        self.plan = Some(plan);
    }
}
