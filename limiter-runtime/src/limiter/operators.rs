//! What operators ask of a [`Limiter`] and change in it at run time: its stats, overrides and switches,
//! a key's state (`inspect`, `usage`), and the service's view across nodes (`overview`, `top_limited`).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::Limiter;
use crate::algorithm::{calendar, Algorithm};
use crate::outbound::rate::WHOLE;
use crate::overrides::Change;
use crate::watch::Ceiling;
use crate::watch::{self, TopKeys};
use crate::{Error, Inspection, Override, Overview, Priority, Rule, TopKey, Usage};

/// What a limiter has seen: for dashboards and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Stats {
    /// Decisions made in degraded mode (Redis failed, too slow, or the breaker open) since start.
    pub degraded: u64,
    /// Whether the breaker is open: Redis is not being called, only probed.
    pub breaker_open: bool,
    /// Runtimes last seen sharing this Redis (this one included; 1 in memory).
    pub instances: u64,
    /// Calls a shadow rule would have rejected (and let through).
    pub shadowed: u64,
    /// Keys held in this process's memory: the in-memory store's, or the `local` fallback's.
    pub keys: u64,
    /// Keys this process's memory forgot before their expiry, to stay within
    /// [`max_keys`](crate::LimiterBuilder::max_keys).
    pub evicted: u64,
    /// Run-time overrides in force, as this runtime last saw them ([`Limiter::set_override`]).
    pub overrides: u64,
    /// Permits in flight this process holds in Redis, renewed while held ([`Rule::in_flight`]; 0 in memory).
    pub permits: u64,
}

impl Limiter {
    /// Returns what this limiter has seen so far.
    pub fn stats(&self) -> Stats {
        let pipeline = &*self.pipeline;
        let shadowed = pipeline.shadowed.load(Ordering::Relaxed);
        let overrides = pipeline.overrides.len() as u64;
        let backend = pipeline.backend.operations().stats();
        Stats {
            degraded: backend.degraded,
            breaker_open: backend.breaker_open,
            instances: backend.instances,
            shadowed,
            keys: backend.keys,
            evicted: backend.evicted,
            overrides,
            permits: backend.permits,
        }
    }

    /// Changes a limit at run time, for every runtime sharing this Redis (for this one alone in memory): the
    /// change is stored in Redis and announced; every runtime applies it within a second, and a decision
    /// never pays a round trip to read it. Setting an override again replaces it. An override of `max` 0 or of
    /// a window under a microsecond is refused ([`Error::InvalidOverride`]), and ignored if Redis holds one.
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
        let change = self.aim(change).await;
        self.change(Change::Set(change.valid()?)).await
    }

    /// Removes the override of `target`'s policy (and key): only its target matters, not what it set.
    pub async fn clear_override(&self, target: &Override) -> Result<(), Error> {
        let target = self.aim(target.clone()).await;
        self.change(Change::Clear(target)).await
    }

    /// Returns `change` aimed at the prefix of the policy it names: a prefix this node decides under is one
    /// already; a name this node, else another node (by the reports in Redis), knows is its policy's prefix;
    /// anything else is taken as a prefix.
    async fn aim(&self, change: Override) -> Override {
        let named = change.target_prefix();
        let watch = &self.pipeline.observers.watch;
        if watch.knows_prefix(named) {
            return change;
        }
        let prefix = match watch.prefix_named(named) {
            Some(prefix) => Some(prefix),
            None => match self.pipeline.backend.operations().reports().await {
                Ok(reports) => crate::watch::prefix_named_in(&reports, named),
                Err(_) => None,
            },
        };
        match prefix {
            Some(prefix) => change.aimed_at(prefix),
            None => change,
        }
    }

    /// Returns the overrides in force, as this runtime last saw them.
    pub fn overrides(&self) -> Vec<Override> {
        self.pipeline.overrides.list()
    }

    /// Makes `change` in Redis and announces it to every runtime, then applies it here at once; in memory,
    /// applies it here.
    pub(super) async fn change(&self, change: Change) -> Result<(), Error> {
        let version = self.pipeline.backend.operations().publish(&change).await?;
        self.pipeline.overrides.apply(&change, version);
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
        self.pipeline.overrides.set_enabled_here(enabled);
    }

    /// Returns whether limiting is on: this runtime's own switch and the one of every runtime both are.
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.pipeline.overrides.is_enabled()
    }

    /// Reads `rule`'s state for `key` without charging it: used, remaining, when one more unit fits and when
    /// the limit is full again, the permits held for a limit [in flight](Rule::in_flight), and whether this
    /// node refuses the key from a denial Redis gave. With Redis, one read-only script call on Redis's clock
    /// (a sliding log's reads the calls in its window); in memory, the key's state as the next call finds
    /// it. Overrides in force apply, as they do to a call.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
    /// let limiter = Limiter::in_memory();
    /// let rule = Rule::new().prefix("rate_limit:emp:").max(5);
    /// limiter.check(&rule, "1001").await;
    /// let state = limiter.inspect(&rule, "1001").await?;
    /// assert_eq!((state.used, state.remaining, state.key.as_str()), (1, 4, "1001"));
    /// assert_eq!(limiter.inspect(&rule, "1001").await?.used, 1); // reading charges nothing
    /// # Ok(()) }
    /// ```
    pub async fn inspect(&self, rule: &Rule, key: impl fmt::Display) -> Result<Inspection, Error> {
        let rule = self.pipeline.defaults.resolved(rule);
        let call = self.named(&rule, &key);
        let limit = &call.limits()[0];
        readable(limit)?;
        let (peek, at, deny_cached) = self.pipeline.backend.operations().inspect(limit).await?;
        // A key's block, where its calls read one: under a penalty, while a ban is in force under its policy,
        // or while an upstream's pause this node heard of is (else an inspection stays one read).
        let pauses = &self.pipeline.overrides.pauses;
        // And a line's (a leaky bucket that waits), which holds the rate its fleet learned from its upstream.
        let line = limit.algorithm == Algorithm::LeakyBucket && limit.terms.max_wait > 0;
        let learning = line
            || pauses
                .last_rate(&limit.key)
                .is_some_and(|rate| rate < WHOLE);
        let paused = pauses.until(&limit.key).is_some() || learning;
        let block = match limit.penalty.is_some() || paused {
            true => self.pipeline.backend.operations().block(limit).await?,
            false => None,
        };
        let blocked_for = block.and_then(|block| block.remaining(at)).unwrap_or(0);
        // The reserves in force: an override's, else the rule's (as the call was built).
        let key = limit.key.parts();
        let overridden = self.pipeline.overrides.lookup(key.prefix, key.rest);
        let reserves = overridden
            .and_then(|set| set.reserves)
            .unwrap_or_else(|| rule.reserves_value());
        let capacity = limit.terms.capacity(limit.algorithm);
        let ceilings = match reserves.is_none() {
            true => Vec::new(),
            false => Priority::ALL
                .into_iter()
                .rev()
                .map(|priority| {
                    let kept = reserves.kept(priority, capacity);
                    Ceiling {
                        priority,
                        ceiling: capacity.saturating_sub(kept),
                        remaining: peek.remaining.saturating_sub(kept),
                    }
                })
                .collect(),
        };
        Ok(Inspection {
            policy: rule.policy_name().to_string(),
            key: crate::key::unescaped(limit.key.parts().rest),
            limit: limit.terms.max,
            window: Duration::from_micros(limit.terms.window),
            used: peek.used,
            remaining: peek.remaining,
            retry_after: Duration::from_micros(peek.retry_after),
            reset_after: Duration::from_micros(peek.reset_after),
            in_flight: limit.algorithm == Algorithm::InFlight,
            deny_cached,
            read_at: Duration::from_micros(at),
            blocked_for: Duration::from_micros(blocked_for),
            banned: blocked_for > 0 && block.is_some_and(|block| block.banned),
            paused: block
                .and_then(|block| block.upstream)
                .filter(|_| blocked_for > 0),
            learned: match &self.pipeline.backend {
                crate::backend::Backend::Memory(_) => pauses.last_rate(&limit.key),
                _ => block.and_then(|block| block.learned),
            }
            .filter(|&rate| rate < WHOLE),
            offences: block.map_or(0, |block| block.offences),
            ceilings,
        })
    }

    /// Returns what `key` has used of `rule`'s quota, and when the quota starts again: for a calendar quota
    /// ([`Rule::period`]), the end of the period now is in (on the store's clock: Redis's `TIME`), written in
    /// the rule's zone as RFC 3339. A read, like [`inspect`](Limiter::inspect): nothing is charged. For a
    /// tenant's own zone, ask with the rule in that zone ([`Rule::tz`]).
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Period, Rule, Zone};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
    /// let limiter = Limiter::in_memory();
    /// let monthly = Rule::new().prefix("tokens:").period(Period::Month).anchor(15).max(1_000_000);
    /// let tenant = monthly.tz(Zone::get("Asia/Tokyo")?);
    /// limiter.check(&tenant, "acme").cost(1_200).await;
    /// let usage = limiter.usage(&tenant, "acme").await?;
    /// assert_eq!((usage.used, usage.remaining), (1_200, 998_800));
    /// assert!(usage.resets_at.ends_with("T00:00:00+09:00")); // the 15th, at midnight in Tokyo
    /// # Ok(()) }
    /// ```
    pub async fn usage(&self, rule: &Rule, key: impl fmt::Display) -> Result<Usage, Error> {
        let rule = self.pipeline.defaults.resolved(rule);
        // As `inspect`: the whole limit, seen from the priority that keeps nothing above it.
        let call = self.one(&rule, format_args!("{key}"), 1, Priority::Critical);
        let limit = &call.limits()[0];
        readable(limit)?;
        let (peek, at, _) = self.pipeline.backend.operations().inspect(limit).await?;
        let reset_after = match limit.algorithm {
            // Whatever is used: the period's end.
            Algorithm::Calendar => calendar::end(at, &limit.terms).saturating_sub(at),
            _ => peek.reset_after,
        };
        let names = (
            rule.policy_name().to_string(),
            crate::key::unescaped(limit.key.parts().rest),
        );
        let counts = (limit.terms.max, peek.used, peek.remaining);
        let zone = rule.calendar.zone(None);
        Ok(Usage::new(names, counts, at, reset_after, zone))
    }

    /// Returns the `n` keys most refused over the last minute (the limit reached) under `policy` (its name or its
    /// prefix; every policy's for `""`), for the whole service: each node keeps a bounded summary of its
    /// refused keys and reports it through Redis with its heartbeat, and this merges the reports. Heaviest
    /// first. An error means Redis did not answer ([`overview`](Limiter::overview) answers with this node
    /// alone then); in memory, this process's.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
    /// let limiter = Limiter::in_memory();
    /// let rule = Rule::new().prefix("rate_limit:emp:").policy("emp").max(1);
    /// for _ in 0..4 {
    ///     limiter.check(&rule, "1001").await;
    /// }
    /// let top = limiter.top_limited("emp", 10).await?;
    /// assert_eq!((top[0].key.as_str(), top[0].refused), ("1001", 3));
    /// # Ok(()) }
    /// ```
    pub async fn top_limited(&self, policy: &str, n: usize) -> Result<Vec<TopKey>, Error> {
        let (overview, refused, failed) = self.service().await;
        match failed {
            Some(error) => Err(error),
            None => Ok(watch::top_of(&overview, &refused, policy, n)),
        }
    }

    /// Shows the service at a glance: each policy's decisions and refusals (per second, and over the last minute)
    /// and each node's health (breaker, degraded decisions, switch), merged from the nodes' reports through
    /// Redis. When Redis does not answer, this node's view alone, marked [`partial`](Overview::partial).
    pub async fn overview(&self) -> Overview {
        self.service().await.0
    }

    /// Returns the service's view, the most refused keys of each policy, and why it is this node's alone, if it is.
    async fn service(&self) -> (Overview, BTreeMap<String, TopKeys>, Option<Error>) {
        let pipeline = &*self.pipeline;
        let backend = pipeline.backend.operations().stats();
        let this = pipeline.observers.watch.node_report(
            pipeline.backend.operations().node(),
            backend.breaker_open,
            backend.degraded,
            pipeline.overrides.is_enabled(),
        );
        let (others, failed) = match pipeline.backend.operations().reports().await {
            Ok(others) => (others, None),
            Err(error) => (Vec::new(), Some(error)),
        };
        let shared = pipeline.backend.is_shared();
        let (mut overview, refused) = watch::merge(this, others, shared, failed.is_some());
        // Every policy known before its first call is listed, idle.
        for (policy, prefix) in self.known_policies() {
            if !overview.policies.iter().any(|p| p.policy == policy) {
                overview
                    .policies
                    .push(crate::PolicyView::idle(policy, prefix));
            }
        }
        overview.policies.sort_by(|a, b| a.policy.cmp(&b.policy));
        (overview, refused, failed)
    }
}

/// Returns [`Error::Misconfigured`] for a limit of zero (which no call can pass, and whose state means
/// nothing): an operator's read of it reads nothing.
fn readable(limit: &crate::call::CallLimit<'_>) -> Result<(), Error> {
    match limit.preset {
        Some(crate::call::Preset::Misconfigured(fault)) => Err(Error::Misconfigured(
            fault.sentence(limit.key.parts().prefix),
        )),
        _ => Ok(()),
    }
}
