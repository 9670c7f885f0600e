//! [`Limiter`]: the handle every decision is asked of, and its public methods.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use crate::backend::redis::{spawn_heartbeat, spawn_lease_sweep};
use crate::backend::{Backend, MemoryStore, RedisBackend, DEFAULT_MAX_KEYS};
use crate::decide::{Decided, Request};
use crate::key::StoreKey;
use crate::observe::Metrics;
use crate::overrides::{self, Overrides};
use crate::reservation::{Held, Reservation};
use crate::rule::Defaults;
use crate::{Clock, Decision, Error, Limit, LimiterBuilder, RateLimited, Rule, SystemClock};

/// The id of the next limiter built.
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

/// The default bound on one Redis decision.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(50);

/// The rate-limiting runtime: a backend (Redis or in-memory), crate-wide defaults and a failure policy.
///
/// `Limiter` is a cheap handle (`Clone` shares it). Build one at start-up and [`install`](Limiter::install) it:
/// every `#[rate_limit]` function then asks it. Code without the attribute asks it directly with
/// [`check`](Limiter::check) or [`enforce`](Limiter::enforce) — the attribute takes that same path.
///
/// # Example
///
/// ```no_run
/// use limiter_runtime::Limiter;
/// use std::time::Duration;
///
/// # fn main() -> Result<(), limiter_runtime::Error> {
/// Limiter::builder()
///     .redis("redis://127.0.0.1:6379/")
///     .prefix("my_service:")
///     .deadline(Duration::from_millis(20))
///     .build()?
///     .install()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Limiter {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// Unique in this process, for as long as it runs: what a resolution kept for this limiter is kept under.
    pub(crate) id: u64,
    pub(crate) backend: Backend,
    pub(crate) defaults: Defaults,
    /// This process's clock: the time of decisions made without the backend.
    pub(crate) clock: Arc<dyn Clock>,
    /// The operators' run-time changes: overrides of limits, and the switch. Shared with the task that keeps
    /// them in step with Redis.
    pub(crate) overrides: Arc<Overrides>,
    /// Starts the background tasks of a Redis limiter (heartbeat, override sync) on its first round trip.
    pub(crate) background: Once,
    /// Calls a shadow rule would have rejected.
    pub(crate) shadowed: AtomicU64,
    /// The `metrics` handles of every prefix seen (nothing without the feature).
    pub(crate) metrics: Metrics,
}

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
}

impl Limiter {
    pub(crate) fn new(backend: Backend, defaults: Defaults, clock: Arc<dyn Clock>) -> Limiter {
        Limiter {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                backend,
                defaults,
                clock,
                overrides: Arc::default(),
                background: Once::new(),
                shadowed: AtomicU64::new(0),
                metrics: Metrics::default(),
            }),
        }
    }

    /// Starts building a limiter (in-memory unless told [`redis`](LimiterBuilder::redis)).
    pub fn builder() -> LimiterBuilder {
        LimiterBuilder::default()
    }

    /// Whether the store can be used as set up, checked now: Redis connected, the password and the database
    /// accepted, every decision script loaded (always, in memory). Call it at start-up to find a refused
    /// port, a wrong password or a database that does not exist before the first request does;
    /// [`LimiterBuilder::connect`] builds and checks in one step.
    ///
    /// ```no_run
    /// # async fn start() -> Result<(), limiter_runtime::Error> {
    /// let limiter = limiter_runtime::Limiter::builder().redis("redis://127.0.0.1:6379/").build()?;
    /// limiter.ready().await?; // Err: "Redis (redis://127.0.0.1:6379) is not ready: ..."
    /// # Ok(()) }
    /// ```
    pub async fn ready(&self) -> Result<(), Error> {
        match &self.inner.backend {
            Backend::Memory(_) => Ok(()),
            Backend::Redis(redis) => redis.ready().await,
        }
    }

    /// A limiter counting in this process's memory, with the default settings.
    ///
    /// Its limits are per process: each node counts alone. Use Redis for one count shared by every node.
    pub fn in_memory() -> Limiter {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let memory = MemoryStore::new(clock.clone(), DEFAULT_MAX_KEYS);
        Limiter::new(Backend::Memory(memory), Defaults::default(), clock)
    }

    /// The limiter the environment asks for: Redis at `LIMITER_REDIS_URL` when set, else in-memory.
    pub fn from_env() -> Result<Limiter, Error> {
        Limiter::builder().env()?.build()
    }

    /// Decides one call for `key` under `rule`: the plain API behind `#[rate_limit]`.
    ///
    /// Never fails: when the store cannot decide within the deadline the call is let through ("fail open"),
    /// with [`Decision::degraded`] set and a warn-level event naming the key and the cause.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// let rule = Rule::new().prefix("login:").max(3).window(Duration::from_secs(60));
    /// for _ in 0..3 {
    ///     assert!(limiter.check(&rule, "alice").await.allowed);
    /// }
    /// let denied = limiter.check(&rule, "alice").await;
    /// assert!(!denied.allowed);
    /// assert!(denied.retry_after > Duration::ZERO);
    /// # }
    /// ```
    pub fn check<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
    ) -> impl Future<Output = Decision> + use<'a, K> {
        self.check_cost(rule, key, 1)
    }

    /// [`check`](Limiter::check) for a call that weighs `cost` units.
    pub async fn check_cost(&self, rule: &Rule, key: impl fmt::Display, cost: u64) -> Decision {
        let rule = self.inner.defaults.resolve(rule, "");
        let key = StoreKey::new(rule.prefix_value(), format_args!("{key}"));
        let request = Request::new(&rule, key.parts(), cost);
        self.check_batch(&[request], Decided::decision).await
    }

    /// Decides one call under several limits at once, each `(rule, key)`: admitted only when every limit
    /// admits it, and then counted by each; else counted by none. Each limit's decision, in the order given.
    /// (Stacked `#[rate_limit]` attributes are this.)
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// let burst = Rule::new().prefix("burst:").max(2).window(Duration::from_secs(1));
    /// let quota = Rule::new().prefix("quota:").max(3).window(Duration::from_secs(3_600));
    /// for _ in 0..2 {
    ///     let decisions = limiter.check_all([(&burst, "alice"), (&quota, "alice")]).await;
    ///     assert!(decisions.iter().all(|d| d.allowed));
    /// }
    /// // The burst is spent: the call is refused, and the hourly quota keeps its third unit.
    /// let [burst_decision, quota_decision] = limiter.check_all([(&burst, "alice"), (&quota, "alice")]).await;
    /// assert!(!burst_decision.allowed);
    /// assert_eq!(quota_decision.remaining, 1);
    /// # }
    /// ```
    pub async fn check_all<K: fmt::Display, const N: usize>(
        &self,
        limits: [(&Rule, K); N],
    ) -> [Decision; N] {
        self.check_all_cost(limits.map(|(rule, key)| (rule, key, 1)))
            .await
    }

    /// [`check_all`](Limiter::check_all) for a call that weighs `cost` units under each limit: `(rule, key,
    /// cost)`.
    pub async fn check_all_cost<K: fmt::Display, const N: usize>(
        &self,
        limits: [(&Rule, K, u64); N],
    ) -> [Decision; N] {
        let rules = limits
            .each_ref()
            .map(|(rule, _, _)| self.inner.defaults.resolve(rule, ""));
        let keys = std::array::from_fn::<StoreKey, N, _>(|i| {
            StoreKey::new(rules[i].prefix_value(), format_args!("{}", limits[i].1))
        });
        let batch = std::array::from_fn(|i| Request::new(&rules[i], keys[i].parts(), limits[i].2));
        self.check_batch(&batch, Decided::decisions).await
    }

    /// What an annotated function does: like [`check`](Limiter::check), but a rejection is the
    /// [`RateLimited`] error, and an admitted call that must wait for its slot
    /// ([`Decision::delay`], leaky bucket with a `max_wait`) sleeps until then.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// let rule = Rule::new().max(1).message("one is enough");
    /// assert!(limiter.enforce(&rule, "k").await.is_ok());
    /// let error = limiter.enforce(&rule, "k").await.unwrap_err();
    /// assert_eq!(error.to_string(), "one is enough");
    /// # }
    /// ```
    pub fn enforce<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
    ) -> impl Future<Output = Result<Decision, RateLimited>> + use<'a, K> {
        self.enforce_cost(rule, key, 1)
    }

    /// [`enforce`](Limiter::enforce) for a call that weighs `cost` units.
    pub async fn enforce_cost(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
        cost: u64,
    ) -> Result<Decision, RateLimited> {
        let rule = self.inner.defaults.resolve(rule, "");
        let key = StoreKey::new(rule.prefix_value(), format_args!("{key}"));
        let request = Request::new(&rule, key.parts(), cost);
        self.enforce_batch(&[request], Decided::decision).await
    }

    /// [`check_all`](Limiter::check_all), enforced: a refusal is the [`RateLimited`] error (naming the first
    /// limit that refused, with every limit's state), and an admitted call that must wait for a slot sleeps
    /// until then.
    pub async fn enforce_all<K: fmt::Display, const N: usize>(
        &self,
        limits: [(&Rule, K); N],
    ) -> Result<[Decision; N], RateLimited> {
        self.enforce_all_cost(limits.map(|(rule, key)| (rule, key, 1)))
            .await
    }

    /// [`enforce_all`](Limiter::enforce_all) for a call that weighs `cost` units under each limit: `(rule,
    /// key, cost)`.
    pub async fn enforce_all_cost<K: fmt::Display, const N: usize>(
        &self,
        limits: [(&Rule, K, u64); N],
    ) -> Result<[Decision; N], RateLimited> {
        let rules = limits
            .each_ref()
            .map(|(rule, _, _)| self.inner.defaults.resolve(rule, ""));
        let keys = std::array::from_fn::<StoreKey, N, _>(|i| {
            StoreKey::new(rules[i].prefix_value(), format_args!("{}", limits[i].1))
        });
        let batch = std::array::from_fn(|i| Request::new(&rules[i], keys[i].parts(), limits[i].2));
        self.enforce_batch(&batch, Decided::decisions).await
    }

    /// Admits a call of an estimated cost, to settle to its actual cost once it is known (see
    /// [`Reservation`]): the estimate is charged now, or the call is refused with [`RateLimited`].
    pub async fn reserve(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
        estimate: u64,
    ) -> Result<Reservation, RateLimited> {
        let rule = self.inner.defaults.resolve(rule, "");
        let key = StoreKey::new(rule.prefix_value(), format_args!("{key}"));
        let request = Request::new(&rule, key.parts(), estimate);
        let decided = self.enforce_batch(&[request], |decided| decided).await?;
        Ok(Reservation(Held {
            limiter: self.clone(),
            rules: Cow::Owned([rule]),
            keys: [key],
            costs: [estimate],
            skipped: [false],
            decided,
        }))
    }

    /// `rule`, resolved once, to check keys against without resolving it again: see [`Limit`].
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// let logins = limiter.limit(&Rule::new().prefix("login:").max(1));
    /// assert!(logins.check("alice").await.allowed);
    /// assert!(!logins.check("alice").await.allowed);
    /// # }
    /// ```
    pub fn limit(&self, rule: &Rule) -> Limit {
        let rule = self.inner.defaults.resolve(rule, "").completed();
        Limit::new(self.clone(), rule)
    }

    /// What this limiter has seen so far.
    pub fn stats(&self) -> Stats {
        let shadowed = self.inner.shadowed.load(Ordering::Relaxed);
        let overrides = self.inner.overrides.len() as u64;
        match &self.inner.backend {
            Backend::Memory(memory) => Stats {
                degraded: 0,
                breaker_open: false,
                instances: 1,
                shadowed,
                keys: memory.keys(),
                evicted: memory.evicted(),
                overrides,
            },
            Backend::Redis(redis) => Stats {
                degraded: redis.degraded_count(),
                breaker_open: redis.breaker_open(),
                instances: redis.instances.live(),
                shadowed,
                keys: redis.local.keys(),
                evicted: redis.local.evicted(),
                overrides,
            },
        }
    }

    /// Starts what keeps a Redis limiter's view current while it lives: its heartbeat, and the override sync.
    pub(crate) fn spawn_background(&self, redis: &Arc<RedisBackend>) {
        let overrides = Arc::downgrade(&self.inner.overrides);
        spawn_heartbeat(Arc::downgrade(redis), overrides.clone());
        overrides::sync::spawn(overrides, Arc::downgrade(redis));
        spawn_lease_sweep(Arc::downgrade(redis));
    }
}

impl Limiter {
    /// This limiter in a few words, for messages that name two: "limiter #2 (Redis at redis://10.0.0.5:6379)".
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn describe(&self) -> String {
        let store = match &self.inner.backend {
            Backend::Memory(_) => "in memory".to_owned(),
            Backend::Redis(redis) => format!("Redis at {}", redis.describe()),
        };
        format!("limiter #{} ({store})", self.inner.id)
    }
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter")
            .field("backend", &self.inner.backend)
            .field("defaults", &self.inner.defaults)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use crate::{Limiter, RateLimited, Rule};

    /// A call's future is copied as it is built and awaited: the Redis round trip (redis-rs's large future) is
    /// boxed so that it does not make every call's future, in-memory ones included, a kilobyte or more.
    #[test]
    fn call_futures_stay_small() {
        let limiter = Limiter::in_memory();
        let (rule, key) = (Rule::new(), String::from("k"));
        let check = std::mem::size_of_val(&limiter.check(&rule, &key));
        let enforce = std::mem::size_of_val(&limiter.enforce(&rule, &key));
        assert!(check <= 512, "check's future is {check} bytes");
        assert!(enforce <= 1024, "enforce's future is {enforce} bytes");
    }

    /// A rejection is one pointer, so that every `Result` carrying it (in users' functions too) stays small on
    /// the path where nothing is rejected.
    #[test]
    fn a_rejection_is_one_pointer() {
        assert_eq!(
            std::mem::size_of::<RateLimited>(),
            std::mem::size_of::<usize>()
        );
        assert_eq!(
            std::mem::size_of::<Result<(), RateLimited>>(),
            std::mem::size_of::<usize>()
        );
    }
}
