//! What operators change at run time, for every runtime sharing the Redis: limits ([`Override`]) and the
//! switch.

use crate::backend::Backend;
use crate::{Error, Limiter, Override};

use super::{sync, Change};

impl Limiter {
    /// Changes a limit at run time, for every runtime sharing this Redis (for this one alone in memory): the
    /// change is stored in Redis and announced; every runtime applies it within a second, and a decision
    /// never pays a round trip to read it. Setting an override again replaces it.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Override, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
    /// let limiter = Limiter::in_memory();
    /// let rule = Rule::new().prefix("rate_limit:emp:").max(5);
    /// limiter.set_override(Override::key("rate_limit:emp:", "1001").max(1)).await?;
    /// assert!(limiter.check(&rule, "1001").await.allowed);
    /// assert!(!limiter.check(&rule, "1001").await.allowed);
    /// assert!(limiter.check(&rule, "1002").await.allowed);
    /// # Ok(()) }
    /// ```
    pub async fn set_override(&self, change: Override) -> Result<(), Error> {
        self.change(Change::Set(change)).await
    }

    /// Removes the override of `target`'s prefix (and key): only its target matters, not what it set.
    pub async fn clear_override(&self, target: &Override) -> Result<(), Error> {
        self.change(Change::Clear(target.clone())).await
    }

    /// The overrides in force, as this runtime last saw them.
    pub fn overrides(&self) -> Vec<Override> {
        self.inner.overrides.list()
    }

    /// Makes `change` in Redis and announces it to every runtime, then applies it here at once; in memory,
    /// applies it here.
    async fn change(&self, change: Change) -> Result<(), Error> {
        let version = match &self.inner.backend {
            Backend::Redis(redis) => Some(sync::publish(redis, &change).await?),
            Backend::Memory(_) => None,
        };
        self.inner.overrides.apply(&change, version);
        if let Backend::Redis(redis) = &self.inner.backend {
            redis.forget_denials_of(&change);
        }
        Ok(())
    }

    /// Turns limiting off (`false`) for every runtime sharing this Redis, within a second, until it is turned
    /// back on (`true`): every call goes ahead, with no Redis traffic for decisions. A switch for a Redis under
    /// pressure, or for an incident; it is kept in Redis, so a runtime started later finds it. In memory, it
    /// switches this runtime.
    ///
    /// An error means Redis did not take the change, and no runtime's switch moved: when Redis itself is the
    /// problem, [`set_enabled_here`](Limiter::set_enabled_here) switches this runtime without asking it.
    /// Limiting is on while both switches are.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
    /// let limiter = Limiter::in_memory();
    /// let rule = Rule::new().prefix("api:").max(1);
    /// limiter.set_enabled(false).await?;
    /// assert!(limiter.check(&rule, "k").await.allowed && limiter.check(&rule, "k").await.allowed);
    /// limiter.set_enabled(true).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_enabled(&self, enabled: bool) -> Result<(), Error> {
        self.change(Change::Switch(enabled)).await
    }

    /// Turns limiting off (`false`) in this runtime alone, at once and without a word to Redis, until it is
    /// turned back on (`true`): every call goes ahead, and this runtime sends Redis nothing at all, not even in
    /// the background. The switch for when Redis itself is the problem. Limiting is on while both this switch
    /// and [the one of every runtime](Limiter::set_enabled) are.
    pub fn set_enabled_here(&self, enabled: bool) {
        self.inner.overrides.set_enabled_here(enabled);
    }

    /// Whether limiting is on: this runtime's own switch and the one of every runtime both are.
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.inner.overrides.is_enabled()
    }
}
