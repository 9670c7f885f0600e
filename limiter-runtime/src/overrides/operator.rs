//! What operators change at run time, for every runtime sharing the Redis: limits ([`Override`]) and the
//! switch.

use crate::backend::Backend;
use crate::{Error, Limiter, Override};

use super::sync;

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
        self.change_override(change, true).await
    }

    /// Removes the override of `target`'s prefix (and key): only its target matters, not what it set.
    pub async fn clear_override(&self, target: &Override) -> Result<(), Error> {
        self.change_override(target.clone(), false).await
    }

    /// The overrides in force, as this runtime last saw them.
    pub fn overrides(&self) -> Vec<Override> {
        self.inner.overrides.list()
    }

    async fn change_override(&self, change: Override, set: bool) -> Result<(), Error> {
        let version = match &self.inner.backend {
            Backend::Redis(redis) => Some(sync::publish(redis, &change, set).await?),
            Backend::Memory(_) => None,
        };
        self.inner.overrides.apply(&change, set, version);
        if let Backend::Redis(redis) = &self.inner.backend {
            // What Redis said under the old limit no longer holds.
            redis.forget_denials_of(&change);
        }
        Ok(())
    }

    /// Turns limiting off (`false`): every call goes ahead, with no Redis traffic at all, until it is turned
    /// back on (`true`). A switch for a Redis under pressure.
    pub fn set_enabled(&self, enabled: bool) {
        self.inner.overrides.set_enabled(enabled);
    }

    /// Whether limiting is on (see [`set_enabled`](Limiter::set_enabled)).
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.inner.overrides.is_enabled()
    }
}
