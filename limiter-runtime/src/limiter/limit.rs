//! A rule resolved once against one limiter: the hot path's handle, for keys that are already strings.

use std::fmt;
use std::future::Future;

use futures_util::future::Either;
use futures_util::FutureExt as _;

use crate::call::{Ask, Call, RuleRef};
use crate::key::StoreKey;
use crate::{Decision, Limiter, Priority, RateLimited, Rule};

/// A [`Rule`] resolved once against a [`Limiter`] (its defaults filled in), to check many keys against:
/// what [`Limiter::limit`] returns.
///
/// [`Limiter::check`] resolves its rule and formats its key (any `Display`) on every call. A `Limit` has
/// done the first once, and takes keys already written out (`&str`): for a hot path, such as an in-memory
/// limit in front of every request. Its decisions are otherwise the same, in the
/// same counts: a `Limit` and `Limiter::check` with the same rule and key share one count, and run-time
/// [overrides](crate::Override) and the switches ([`set_enabled`](Limiter::set_enabled)) apply to both, on
/// every call.
///
/// A `Limit` decides when it is called: the future it returns is already complete when the decision needed
/// nothing but this process (in memory, a cached denial, the switch off, the breaker open), and awaits only a
/// Redis round trip (or a leaky bucket's slot) otherwise. Await it at once, as with any call.
///
/// Cheap to clone (a handle to the limiter and the rule); build one per rule, at start-up, and keep it.
///
/// ```
/// use limiter_runtime::{Limiter, Rule};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = Limiter::in_memory();
/// let rule = Rule::new().prefix("api:").max(2).window(Duration::from_secs(1));
/// let per_client = limiter.limit(&rule);
///
/// assert!(per_client.check("10.0.0.7").await.allowed);
/// assert!(per_client.check("10.0.0.7").await.allowed);
/// assert!(!per_client.check("10.0.0.7").await.allowed);
/// // The same count as the plain API's, for the same rule and key.
/// assert!(!limiter.check(&rule, "10.0.0.7").await.allowed);
/// # }
/// ```
#[derive(Clone)]
pub struct Limit {
    limiter: Limiter,
    /// The rule as the limiter resolved it, once, every part set. A call applies only the overrides in force
    /// (the plain API's resolution, from this point on).
    rule: Rule,
}

impl Limit {
    pub(crate) fn new(limiter: Limiter, rule: Rule) -> Limit {
        Limit { limiter, rule }
    }

    /// Returns the rule as resolved: every part that the limiter's defaults filled in is set.
    pub fn rule(&self) -> Rule {
        self.rule.clone()
    }

    /// Counts one call for `key`, and says whether it may go ahead: [`Limiter::check`] with this rule.
    #[inline]
    pub fn check<'a>(&'a self, key: &str) -> impl Future<Output = Decision> + use<'a> {
        self.check_cost(key, 1)
    }

    /// Does what [`check`](Limit::check) does, for a call that weighs `cost` units.
    #[inline]
    pub fn check_cost<'a>(
        &'a self,
        key: &str,
        cost: u64,
    ) -> impl Future<Output = Decision> + use<'a> {
        self.check_with(key, cost, Priority::Normal)
    }

    /// Does what [`check_cost`](Limit::check_cost) does, for a call of `priority`: [`Limiter::check_with`] with
    /// this rule.
    #[inline]
    pub fn check_with<'a>(
        &'a self,
        key: &str,
        cost: u64,
        priority: Priority,
    ) -> impl Future<Output = Decision> + use<'a> {
        let call = self.call(key, cost, priority);
        let pipeline = &self.limiter.pipeline;
        if call.holds_permits() {
            // Its permit given back before the decision is handed over (see `Limiter::let_go`).
            return Either::Right(Box::pin(async move {
                let (call, decided) = pipeline.ruling_owned(call).await;
                self.limiter.let_go(&call, &decided).await;
                decided.decision()
            }));
        }
        Either::Left(pipeline.decision_owned(call))
    }

    /// Returns the call of one limit, this one, for `key`, weighing `cost`, of `priority`.
    #[inline(always)]
    fn call(&self, key: &str, cost: u64, priority: Priority) -> Call<'_> {
        let key = StoreKey::of_str(self.rule.prefix_value(), key);
        let ask = Ask::of(RuleRef::Borrowed(&self.rule), key, cost, priority);
        self.limiter.pipeline.call([ask])
    }

    /// Works like [`check`](Limit::check), but a rejection is the [`RateLimited`] error, and an admitted call that
    /// must wait for its slot sleeps until then: [`Limiter::enforce`] with this rule.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limit = Limiter::in_memory().limit(&Rule::new().max(1).message("one is enough"));
    /// assert!(limit.enforce("k").await.is_ok());
    /// assert_eq!(limit.enforce("k").await.unwrap_err().to_string(), "one is enough");
    /// # }
    /// ```
    pub fn enforce<'a>(
        &'a self,
        key: &str,
    ) -> impl Future<Output = Result<Decision, RateLimited>> + use<'a> {
        self.enforce_cost(key, 1)
    }

    /// Does what [`enforce`](Limit::enforce) does, for a call that weighs `cost` units.
    pub fn enforce_cost<'a>(
        &'a self,
        key: &str,
        cost: u64,
    ) -> impl Future<Output = Result<Decision, RateLimited>> + use<'a> {
        self.enforce_with(key, cost, Priority::Normal)
    }

    /// Does what [`enforce_cost`](Limit::enforce_cost) does, for a call of `priority`: [`Limiter::enforce_with`]
    /// with this rule.
    pub fn enforce_with<'a>(
        &'a self,
        key: &str,
        cost: u64,
        priority: Priority,
    ) -> impl Future<Output = Result<Decision, RateLimited>> + use<'a> {
        let call = self.call(key, cost, priority);
        let pipeline = &self.limiter.pipeline;
        if call.holds_permits() {
            return Either::Right(Box::pin(async move {
                let (call, decided) = pipeline.enforce(call).await?;
                self.limiter.let_go(&call, &decided).await;
                Ok(decided.decision())
            }));
        }
        Either::Left(
            pipeline
                .enforce(call)
                .map(|enforced| enforced.map(|(_, decided)| decided.decision())),
        )
    }
}

impl fmt::Debug for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limit")
            .field("rule", &self.rule)
            .field("limiter", &self.limiter)
            .finish()
    }
}
