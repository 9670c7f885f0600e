//! The one shape of asking: a verb of [`Limiter`](crate::Limiter), [`Limit`](crate::Limit) or [`All`]
//! names what is limited and returns a [`Request`], whose options ([`cost`](Request::cost),
//! [`priority`](Request::priority)) are methods on it; awaited as it is, it decides. Each verb's answer is
//! in [`ask`].

mod future;
mod target;
mod verbs;

pub use self::future::{CheckFuture, EnforceFuture};
pub use self::target::{All, OfLimit, One};
use self::target::{OnPlan, Target};

use std::fmt;
use std::future::IntoFuture;
use std::marker::PhantomData;

use futures_util::future::BoxFuture;

use super::{Estimate, LimitList, Permit, Turn};
use crate::{Decision, Priority, RateLimited};

/// A decision to ask: what is limited, the verb, and the call's options. Awaited as it is (it implements
/// [`IntoFuture`]), it decides; built by a verb, never by hand:
///
/// ```
/// use limiter_runtime::{Limiter, Priority, Rule};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = Limiter::in_memory();
/// let rule = Rule::new().prefix("search:").max(10);
/// let decision = limiter.check(&rule, "alice").await;
/// assert_eq!(decision.remaining, 9);
/// let decision = limiter.check(&rule, "alice").cost(3).priority(Priority::High).await;
/// assert_eq!(decision.remaining, 6);
/// # }
/// ```
///
/// The verbs, each a type of [`ask`]: [`check`](crate::Limiter::check) answers a
/// [`Decision`](crate::Decision), [`enforce`](crate::Limiter::enforce) a refusal as the [`RateLimited`]
/// error (and waits for a slot), [`acquire`](crate::Limiter::acquire) a [`Permit`] held while the call runs,
/// [`estimate`](crate::Limiter::estimate) an [`Estimate`] settled to the actual cost later, and
/// [`turn`](crate::Limiter::turn) a [`Turn`] to call an upstream.
#[must_use = "a request decides nothing until it is awaited"]
pub struct Request<V, T> {
    target: T,
    cost: u64,
    priority: Priority,
    verb: PhantomData<fn() -> V>,
}

impl<V, T> Request<V, T> {
    #[inline(always)]
    pub(crate) fn new(target: T) -> Request<V, T> {
        Request {
            target,
            cost: 1,
            priority: Priority::Normal,
            verb: PhantomData,
        }
    }

    /// Weighs the call `cost` units (1 unless told): a batch of 50 rows, a 3,000-token prompt. A limit listed
    /// with a cost of its own (`(rule, key, cost)`, see [`Limiter::all`](crate::Limiter::all)) keeps it. A
    /// cost of 0 charges nothing and reads the limit's state; a cost above what the limit can ever admit is
    /// refused at once, as [`Reason::TooLarge`](crate::Reason::TooLarge).
    #[inline(always)]
    pub fn cost(mut self, cost: u64) -> Self {
        self.cost = cost;
        self
    }

    /// Says how much the call matters ([`Priority::Normal`] unless told): it must leave free the shares its
    /// limits keep for the priorities above its own ([`Rule::reserve`](crate::Rule::reserve)), and its
    /// decision counts against that ceiling (`limit`, `remaining`); a refusal for a share kept above it is
    /// [`Verdict::Reserved`](crate::Verdict::Reserved). For a turn, a slot that comes goes to the most
    /// important call waiting on this node.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Priority, Rule, Verdict};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// // 10 calls, 2 of them kept for critical ones.
    /// let rule = Rule::new().prefix("checkout:").max(10).reserve(Priority::Critical, 20);
    /// for _ in 0..8 {
    ///     assert!(limiter.check(&rule, "shop").await.allowed);
    /// }
    /// let search = limiter.check(&rule, "shop").await;
    /// assert_eq!(search.verdict, Verdict::Reserved);
    /// let checkout = limiter.check(&rule, "shop").priority(Priority::Critical).await;
    /// assert!(checkout.allowed);
    /// assert_eq!((checkout.limit, checkout.remaining), (10, 1));
    /// # }
    /// ```
    #[inline(always)]
    pub fn priority(mut self, priority: Priority) -> Self {
        self.priority = priority;
        self
    }
}

impl<'a, V, T: OnPlan<'a>> Request<V, T> {
    /// Names the plan the call is on ([`Plan`](crate::Plan)): each value its rule's plan of that name sets
    /// replaces the rule's for this call (a key's own [override](crate::Override) still wins). A name the rule
    /// has no plan of leaves the call on the rule's own values, and is told once in the log. For a call of
    /// several limits, each limit that has the plan applies it.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Plan, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// let rule = Rule::new().prefix("api:").max(100).plan("pro", Plan::new().max(1_000));
    /// let tenant_plan = String::from("pro");
    /// let decision = limiter.check(&rule, "acme").plan(&tenant_plan).await;
    /// assert_eq!((decision.limit, decision.remaining), (1_000, 999));
    /// # }
    /// ```
    #[inline(always)]
    pub fn plan(mut self, plan: &'a str) -> Self {
        self.target.name_plan(plan);
        self
    }
}

impl<V, T: fmt::Debug> fmt::Debug for Request<V, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("verb", &std::any::type_name::<V>())
            .field("target", &self.target)
            .field("cost", &self.cost)
            .field("priority", &self.priority)
            .finish()
    }
}

/// The verbs a [`Request`] asks, one type each (never built: a request names its verb by them).
pub mod ask {
    /// Counts the call and says whether it may go ahead: a [`Decision`](crate::Decision) (or one per limit).
    #[derive(Debug)]
    pub enum Check {}
    /// Counts the call and refuses it as the [`RateLimited`](crate::RateLimited) error; an admitted call that
    /// must wait for its slot (a leaky bucket with a `max_wait`) waits in its node's line first.
    #[derive(Debug)]
    pub enum Enforce {}
    /// Enforces the call and holds a permit of each of its limits in flight while it runs: a
    /// [`Permit`](crate::Permit).
    #[derive(Debug)]
    pub enum Acquire {}
    /// Enforces the call at its estimated cost, to settle to the actual cost later: an
    /// [`Estimate`](crate::Estimate).
    #[derive(Debug)]
    pub enum Estimate {}
    /// Waits for the call's turn to go to an upstream, shared by every node: a [`Turn`](crate::Turn).
    #[derive(Debug)]
    pub enum Turn {}
}

// Each target's verbs, implemented for it by name: a bound relating lifetimes (`T: Target<'a>`) would not
// be provable of a request held across an await in a spawned task, whose lifetimes the compiler erases.

impl<'a, K: fmt::Display> IntoFuture for Request<ask::Check, One<'a, K>> {
    type Output = Decision;
    type IntoFuture = CheckFuture<'a>;

    #[inline(always)]
    fn into_future(self) -> Self::IntoFuture {
        let call = self.target.call_of(self.cost, self.priority);
        CheckFuture::new(self.target.limiter(), call)
    }
}

impl<'a, K: fmt::Display> IntoFuture for Request<ask::Enforce, One<'a, K>> {
    type Output = Result<Decision, RateLimited>;
    type IntoFuture = EnforceFuture<'a>;

    #[inline(always)]
    fn into_future(self) -> Self::IntoFuture {
        let call = self.target.call_of(self.cost, self.priority);
        EnforceFuture::new(self.target.limiter(), call, self.priority)
    }
}

impl<'a> IntoFuture for Request<ask::Check, OfLimit<'a>> {
    type Output = Decision;
    type IntoFuture = CheckFuture<'a>;

    #[inline(always)]
    fn into_future(self) -> Self::IntoFuture {
        let call = self.target.call_of(self.cost, self.priority);
        CheckFuture::new(&self.target.limit.limiter, call)
    }
}

impl<'a> IntoFuture for Request<ask::Enforce, OfLimit<'a>> {
    type Output = Result<Decision, RateLimited>;
    type IntoFuture = EnforceFuture<'a>;

    #[inline(always)]
    fn into_future(self) -> Self::IntoFuture {
        let call = self.target.call_of(self.cost, self.priority);
        EnforceFuture::new(&self.target.limit.limiter, call, self.priority)
    }
}

impl<'a, L: LimitList> IntoFuture for Request<ask::Check, All<'a, L>> {
    type Output = L::Decisions;
    type IntoFuture = BoxFuture<'a, L::Decisions>;

    fn into_future(self) -> Self::IntoFuture {
        let asks = self.target.asks(self.cost, self.priority);
        let answer: verbs::Answer<L::Decisions> = |decisions| L::decisions(decisions);
        Box::pin(verbs::check(self.target.limiter(), asks, answer))
    }
}

impl<'a, L: LimitList> IntoFuture for Request<ask::Enforce, All<'a, L>> {
    type Output = Result<L::Decisions, RateLimited>;
    type IntoFuture = BoxFuture<'a, Result<L::Decisions, RateLimited>>;

    fn into_future(self) -> Self::IntoFuture {
        let asks = self.target.asks(self.cost, self.priority);
        let answer: verbs::Answer<L::Decisions> = |decisions| L::decisions(decisions);
        Box::pin(verbs::enforce(
            self.target.limiter(),
            asks,
            self.priority,
            answer,
        ))
    }
}

/// Implements the verbs that hold a charge (boxed: each keeps a call of its own) for a target.
macro_rules! holding_verbs {
    ($([$($generics:tt)*] $target:ty;)*) => {$(
        impl<$($generics)*> IntoFuture for Request<ask::Acquire, $target> {
            type Output = Result<Permit, RateLimited>;
            type IntoFuture = BoxFuture<'a, Result<Permit, RateLimited>>;

            fn into_future(self) -> Self::IntoFuture {
                let asks = self.target.asks(self.cost, self.priority);
                Box::pin(verbs::acquire(self.target.limiter(), asks, self.priority))
            }
        }

        impl<$($generics)*> IntoFuture for Request<ask::Estimate, $target> {
            type Output = Result<Estimate, RateLimited>;
            type IntoFuture = BoxFuture<'a, Result<Estimate, RateLimited>>;

            fn into_future(self) -> Self::IntoFuture {
                let asks = self.target.asks(self.cost, self.priority);
                Box::pin(verbs::estimate(self.target.limiter(), asks, self.priority))
            }
        }

        impl<$($generics)*> IntoFuture for Request<ask::Turn, $target> {
            type Output = Result<Turn, RateLimited>;
            type IntoFuture = BoxFuture<'a, Result<Turn, RateLimited>>;

            fn into_future(self) -> Self::IntoFuture {
                let asks = self.target.asks(self.cost, self.priority);
                Box::pin(verbs::turn(self.target.limiter(), asks, self.priority))
            }
        }
    )*};
}

holding_verbs! {
    ['a, K: fmt::Display] One<'a, K>;
    ['a] OfLimit<'a>;
    ['a, L: LimitList] All<'a, L>;
}

impl<'a, L: LimitList> All<'a, L> {
    /// Checks the call under every limit at once: [`Limiter::check`](crate::Limiter::check) for several
    /// limits, answered with each limit's decision, in the order given (an array for an array, a `Vec`
    /// otherwise).
    pub fn check(self) -> Request<ask::Check, Self> {
        Request::new(self)
    }

    /// Enforces what [`check`](All::check) decides: a refusal is the [`RateLimited`] error, naming the first
    /// limit that refused, with every limit's state.
    pub fn enforce(self) -> Request<ask::Enforce, Self> {
        Request::new(self)
    }

    /// Takes a permit of each of the limits in flight, beside the rates:
    /// [`Limiter::acquire`](crate::Limiter::acquire) for several limits (all or nothing; a call refused holds
    /// nothing).
    pub fn acquire(self) -> Request<ask::Acquire, Self> {
        Request::new(self)
    }

    /// Charges an estimate to every limit, to settle later: [`Limiter::estimate`](crate::Limiter::estimate)
    /// for several limits.
    pub fn estimate(self) -> Request<ask::Estimate, Self> {
        Request::new(self)
    }

    /// Waits for the call's turn to go to an upstream under every limit: the first is the upstream's own
    /// (what [`Turn::answered`] pauses), the others beside it (say tokens a minute, settled later).
    pub fn turn(self) -> Request<ask::Turn, Self> {
        Request::new(self)
    }
}
