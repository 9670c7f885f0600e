//! A rule resolved once against one limiter: the hot path's handle, for keys that are already strings.

use std::fmt;

use super::request::{ask, OfLimit, Request};
use crate::{Limiter, Rule};

/// A [`Rule`] resolved once against a [`Limiter`] (its defaults filled in), to check many keys against:
/// what [`Limiter::resolve`] returns.
///
/// [`Limiter::check`] resolves its rule and formats its key (any `Display`) on every call. A `Limit` has
/// done the first once, and takes keys already written out (`&str`): for a hot path, such as an in-memory
/// limit in front of every request. Its decisions are otherwise the same, in the
/// same counts: a `Limit` and `Limiter::check` with the same rule and key share one count, and run-time
/// [overrides](crate::Override) and the switches ([`set_enabled`](Limiter::set_enabled)) apply to both, on
/// every call.
///
/// A `Limit`'s request decides at its first poll: it completes there when the decision needs nothing but this
/// process (in memory, a cached denial, the switch off, the breaker open), and awaits only a Redis round trip
/// (or a leaky bucket's slot) otherwise.
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
/// let per_client = limiter.resolve(&rule);
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
    pub(crate) limiter: Limiter,
    /// The rule as the limiter resolved it, once, every part set. A call applies only the overrides in force
    /// (the plain API's resolution, from this point on).
    pub(crate) rule: Rule,
    /// The rule as written, and the generation of the defaults it was resolved at: once the limits file is
    /// reloaded, each call resolves it again.
    written: Rule,
    generation: u64,
}

impl Limit {
    pub(crate) fn new(limiter: Limiter, written: &Rule) -> Limit {
        let defaults = &limiter.pipeline.defaults;
        let generation = defaults.generation();
        let rule = defaults.resolve(written, "").completed();
        Limit {
            limiter,
            rule,
            written: written.clone(),
            generation,
        }
    }

    /// Returns the rule as resolved now: the one resolved once, unless the limits file was reloaded since.
    #[inline]
    pub(crate) fn current(&self) -> crate::call::RuleRef<'_> {
        let defaults = &self.limiter.pipeline.defaults;
        if defaults.generation() == self.generation {
            return crate::call::RuleRef::Borrowed(&self.rule);
        }
        let rule = defaults.resolve(&self.written, "").completed();
        crate::call::RuleRef::Shared(std::sync::Arc::new(rule))
    }

    /// Returns the rule as resolved: every part that the limiter's defaults filled in is set.
    pub fn rule(&self) -> Rule {
        Rule::clone(&self.current())
    }
}

impl Limit {
    /// Counts one call for `key` and says whether it may go ahead: [`Limiter::check`] with this rule.
    #[inline(always)]
    pub fn check<'a>(&'a self, key: &'a str) -> Request<ask::Check, OfLimit<'a>> {
        Request::new(OfLimit::new(self, key))
    }

    /// Works like [`check`](Limit::check), but a rejection is the [`RateLimited`](crate::RateLimited) error,
    /// and an admitted call that must wait for its slot waits: [`Limiter::enforce`] with this rule.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limit = Limiter::in_memory().resolve(&Rule::new().max(1).message("one is enough"));
    /// assert!(limit.enforce("k").await.is_ok());
    /// assert_eq!(limit.enforce("k").await.unwrap_err().to_string(), "one is enough");
    /// # }
    /// ```
    #[inline(always)]
    pub fn enforce<'a>(&'a self, key: &'a str) -> Request<ask::Enforce, OfLimit<'a>> {
        Request::new(OfLimit::new(self, key))
    }

    /// Takes a permit for `key`: [`Limiter::acquire`] with this rule.
    pub fn acquire<'a>(&'a self, key: &'a str) -> Request<ask::Acquire, OfLimit<'a>> {
        Request::new(OfLimit::new(self, key))
    }

    /// Charges an estimate for `key`, to settle later: [`Limiter::estimate`] with this rule.
    pub fn estimate<'a>(&'a self, key: &'a str) -> Request<ask::Estimate, OfLimit<'a>> {
        Request::new(OfLimit::new(self, key))
    }

    /// Waits for the turn of a call to an upstream for `key`: [`Limiter::turn`] with this rule.
    pub fn turn<'a>(&'a self, key: &'a str) -> Request<ask::Turn, OfLimit<'a>> {
        Request::new(OfLimit::new(self, key))
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
