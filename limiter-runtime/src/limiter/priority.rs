//! The plain API's calls that say how much they matter ([`Priority`]): a call must leave free the shares its
//! rule keeps for the priorities above its own ([`Rule::reserve`]). Those that say nothing are `Normal`.

use std::fmt;

use super::Limiter;
use crate::{Decision, Permit, Priority, RateLimited, Rule};

impl Limiter {
    /// Does what [`check_cost`](Limiter::check_cost) does, for a call of `priority`: admitted only if its cost fits
    /// under its own ceiling, the limit less the shares [`reserve`](Rule::reserve)d for the priorities above
    /// it. Its decision counts against that ceiling (`limit`, `remaining`), and a refusal for a share kept
    /// above it is [`Verdict::Reserved`](crate::Verdict::Reserved).
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
    /// let checkout = limiter.check_with(&rule, "shop", 1, Priority::Critical).await;
    /// assert!(checkout.allowed);
    /// assert_eq!((checkout.limit, checkout.remaining), (10, 1));
    /// # }
    /// ```
    pub async fn check_with(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
        cost: u64,
        priority: Priority,
    ) -> Decision {
        let rule = self.pipeline.defaults.resolved(rule);
        let call = self.one(&rule, format_args!("{key}"), cost, priority);
        if call.holds_permits() {
            // Rare, and boxed: the common call's future stays small.
            return Box::pin(self.decision_letting_go(call)).await;
        }
        self.pipeline.decision(&call).await
    }

    /// Does what [`enforce_cost`](Limiter::enforce_cost) does, for a call of `priority` (see
    /// [`check_with`](Limiter::check_with)).
    pub async fn enforce_with(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
        cost: u64,
        priority: Priority,
    ) -> Result<Decision, RateLimited> {
        let rule = self.pipeline.defaults.resolved(rule);
        let call = self.one(&rule, format_args!("{key}"), cost, priority);
        let (call, decided) = self.pipeline.enforce(call).await?;
        self.let_go(&call, &decided).await;
        Ok(decided.decision())
    }

    /// Does what [`acquire`](Limiter::acquire) does, for a call of `priority`: with `in_flight(10)` and
    /// `reserve(Critical, 20)`, at most 8 calls below `Critical` hold a permit at once, and a `Critical` call
    /// finds one while they do.
    pub async fn acquire_with(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
        priority: Priority,
    ) -> Result<Permit, RateLimited> {
        self.acquire_all([(rule, key, 1, priority)]).await
    }
}
