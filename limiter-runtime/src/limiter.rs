//! The shared runtime: a [`Limiter`] is built once, installed, and asked by every annotated function.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::algorithm::Request;
use crate::clock::{as_micros, Clock, SystemClock};
use crate::error::BackendError;
use crate::key::store_key;
use crate::rule::{Defaults, Resolved};
use crate::store::{MemoryStore, RedisStore, Store};
use crate::{Decision, Error, RateLimited, Rule};

/// The environment variable naming the Redis server of the limiter built when none was installed.
pub const REDIS_URL_ENV: &str = "LIMITER_REDIS_URL";

/// The default bound on one Redis decision.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(50);

static GLOBAL: OnceLock<Limiter> = OnceLock::new();

tokio::task_local! {
    static SCOPED: Limiter;
}

/// The rate-limiting runtime: a store (Redis or in-memory), crate-wide defaults and a failure policy.
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
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    defaults: Defaults,
    /// This process's clock: the time of decisions made without the store.
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter")
            .field("store", &self.inner.store)
            .field("defaults", &self.inner.defaults)
            .finish()
    }
}

impl Limiter {
    /// Starts building a limiter (in-memory unless told [`redis`](LimiterBuilder::redis)).
    pub fn builder() -> LimiterBuilder {
        LimiterBuilder::default()
    }

    /// A limiter counting in this process's memory, with the default settings.
    ///
    /// Its limits are per process: each node counts alone. Use Redis for one count shared by every node.
    pub fn in_memory() -> Limiter {
        LimiterBuilder::default()
            .build()
            .expect("the default in-memory limiter has no setting that can fail")
    }

    /// The limiter the environment asks for: Redis at `LIMITER_REDIS_URL` when set, else in-memory.
    pub fn from_env() -> Result<Limiter, Error> {
        match std::env::var(REDIS_URL_ENV) {
            Ok(url) if !url.trim().is_empty() => Limiter::builder().redis(url).build(),
            _ => Ok(Limiter::in_memory()),
        }
    }

    /// Installs this limiter as the shared runtime every `#[rate_limit]` function uses.
    ///
    /// Install once, at start-up, before the first annotated call; a second install is an error.
    pub fn install(self) -> Result<(), Error> {
        let mut installed = Some(self);
        GLOBAL.get_or_init(|| installed.take().expect("taken once"));
        match installed {
            None => Ok(()),
            Some(_) => Err(Error::AlreadyInstalled),
        }
    }

    /// The shared runtime: the installed limiter, or — if none was installed before the first use — one
    /// built from the environment ([`from_env`](Limiter::from_env)), announced once at warn level.
    pub fn global() -> &'static Limiter {
        GLOBAL.get_or_init(|| {
            let limiter = Limiter::from_env().unwrap_or_else(|error| {
                tracing::error!(%error, "rate limiter: {REDIS_URL_ENV} is unusable; counting in memory instead");
                Limiter::in_memory()
            });
            match &limiter.inner.store {
                Store::Redis(store) => tracing::warn!(
                    store = ?store,
                    "rate limiter: no limiter was installed; using Redis from {REDIS_URL_ENV}"
                ),
                Store::Memory(_) => tracing::warn!(
                    "rate limiter: no limiter was installed and {REDIS_URL_ENV} is not set; counting in \
                     memory, so every process enforces its own limits"
                ),
            }
            limiter
        })
    }

    /// The limiter annotated functions use here: the one [`scope`](Limiter::scope)d over the current task,
    /// else the [`global`](Limiter::global) one.
    pub fn current() -> Limiter {
        SCOPED
            .try_with(Limiter::clone)
            .unwrap_or_else(|_| Limiter::global().clone())
    }

    /// Runs `future` with this limiter as the one its `#[rate_limit]` functions use, instead of the
    /// global one. Tests use it to give each case its own store.
    ///
    /// ```
    /// use limiter_runtime::{rate_limit, Limiter, RateLimited};
    ///
    /// #[rate_limit(max = 1)]
    /// async fn ping() -> Result<(), RateLimited> {
    ///     Ok(())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// limiter.scope(async {
    ///     assert!(ping().await.is_ok());
    ///     assert!(ping().await.is_err());
    /// }).await;
    /// # }
    /// ```
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        SCOPED.scope(self.clone(), future).await
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
    pub async fn check(&self, rule: &Rule, key: impl fmt::Display) -> Decision {
        self.check_cost(rule, key, 1).await
    }

    /// [`check`](Limiter::check) for a call that weighs `cost` units.
    pub async fn check_cost(&self, rule: &Rule, key: impl fmt::Display, cost: u64) -> Decision {
        let resolved = self.inner.defaults.resolve(rule);
        let key = store_key(resolved.prefix, &key);
        self.decide(&resolved, &key, cost).await
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
    pub async fn enforce(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
    ) -> Result<Decision, RateLimited> {
        self.enforce_cost(rule, key, 1).await
    }

    /// [`enforce`](Limiter::enforce) for a call that weighs `cost` units.
    pub async fn enforce_cost(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
        cost: u64,
    ) -> Result<Decision, RateLimited> {
        let key = self.store_key(rule, &key);
        self.enforce_key(rule, key, cost).await
    }

    /// The store key `rule` gives `key`.
    pub(crate) fn store_key(&self, rule: &Rule, key: &dyn fmt::Display) -> String {
        store_key(self.inner.defaults.resolve(rule).prefix, key)
    }

    /// Decides for a store key already built, turns a rejection into [`RateLimited`], and waits out an
    /// admitted call's delay.
    pub(crate) async fn enforce_key(
        &self,
        rule: &Rule,
        key: String,
        cost: u64,
    ) -> Result<Decision, RateLimited> {
        let resolved = self.inner.defaults.resolve(rule);
        let decision = self.decide(&resolved, &key, cost).await;
        if !decision.allowed {
            return Err(RateLimited::new(resolved.message.clone(), key, decision));
        }
        if !decision.delay.is_zero() {
            tokio::time::sleep(decision.delay).await;
        }
        Ok(decision)
    }

    /// The one decision path: ask the store; if it cannot answer, fail open.
    async fn decide(&self, rule: &Resolved<'_>, key: &str, cost: u64) -> Decision {
        if rule.max == 0 {
            // Nothing is ever admitted: no need to ask (and no algorithm divides by zero).
            return Decision {
                allowed: false,
                limit: 0,
                remaining: 0,
                retry_after: rule.window,
                reset_after: Duration::ZERO,
                delay: Duration::ZERO,
                decided_at: self.inner.clock.now(),
                degraded: false,
            };
        }
        let request = Request {
            window: as_micros(rule.window).max(1),
            max: rule.max,
            cost,
            burst: rule.burst,
            max_wait: as_micros(rule.max_wait),
        };
        match self.inner.store.decide(rule.algorithm, key, &request).await {
            Ok((outcome, decided_at)) => Decision {
                allowed: outcome.allowed,
                limit: rule.max,
                remaining: outcome.remaining,
                retry_after: Duration::from_micros(outcome.retry_after),
                reset_after: Duration::from_micros(outcome.reset_after),
                delay: Duration::from_micros(outcome.delay),
                decided_at: Duration::from_micros(decided_at),
                degraded: false,
            },
            Err(cause) => self.fail_open(rule, key, &cause),
        }
    }

    fn fail_open(&self, rule: &Resolved<'_>, key: &str, cause: &BackendError) -> Decision {
        tracing::warn!(
            key,
            %cause,
            store = self.inner.store.describe(),
            "rate limiter could not decide; letting the call through (fail open)"
        );
        Decision {
            allowed: true,
            limit: rule.max,
            remaining: rule.max,
            retry_after: Duration::ZERO,
            reset_after: Duration::ZERO,
            delay: Duration::ZERO,
            decided_at: self.inner.clock.now(),
            degraded: true,
        }
    }
}

/// Builds a [`Limiter`]: the store, the crate-wide defaults, the Redis deadline.
///
/// Every setting is optional: `Limiter::builder().build()` counts in memory with window 60 s, max 100,
/// prefix `"rate_limit:"`.
///
/// ```
/// use limiter_runtime::Limiter;
/// use std::time::Duration;
///
/// let limiter = Limiter::builder()
///     .redis("redis://127.0.0.1:6379/")
///     .prefix("shop:")
///     .window(Duration::from_secs(10))
///     .max(50)
///     .message("easy there")
///     .deadline(Duration::from_millis(25))
///     .build()
///     .unwrap();
/// ```
#[derive(Debug, Default)]
#[must_use]
pub struct LimiterBuilder {
    redis_url: Option<String>,
    defaults: Defaults,
    deadline: Option<Duration>,
    clock: Option<Arc<dyn Clock>>,
}

impl LimiterBuilder {
    /// Count in Redis at `url` (`redis://host:port/db`): one global count shared by every node.
    ///
    /// The connection is made on the first decision and remade in the background whenever it drops.
    pub fn redis(mut self, url: impl Into<String>) -> Self {
        self.redis_url = Some(url.into());
        self
    }

    /// Count in this process's memory (the default): each process enforces its own limits.
    pub fn in_memory(mut self) -> Self {
        self.redis_url = None;
        self
    }

    /// The default key prefix (default `"rate_limit:"`).
    pub fn prefix(mut self, prefix: impl Into<Cow<'static, str>>) -> Self {
        self.defaults.prefix = prefix.into();
        self
    }

    /// The default window (default 60 s).
    pub fn window(mut self, window: Duration) -> Self {
        self.defaults.window = window;
        self
    }

    /// The default admissions per window (default 100).
    pub fn max(mut self, max: u64) -> Self {
        self.defaults.max = max;
        self
    }

    /// The default rejection message.
    pub fn message(mut self, message: impl Into<Cow<'static, str>>) -> Self {
        self.defaults.message = message.into();
        self
    }

    /// The bound on one Redis decision (default 50 ms). A decision that takes longer fails open and is never
    /// retried: it may have been applied.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// The clock decisions read.
    ///
    /// In memory, it replaces the system clock. With Redis, setting a clock makes the client pass "now" to
    /// the scripts instead of letting them read Redis `TIME`: a mode for deterministic tests only, since in
    /// production skewed nodes would then disagree about time.
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// Builds the limiter. Fails only on an unparsable Redis URL; nothing is connected yet.
    pub fn build(self) -> Result<Limiter, Error> {
        let clock: Arc<dyn Clock> = match &self.clock {
            Some(clock) => clock.clone(),
            None => Arc::new(SystemClock::new()),
        };
        let store = match self.redis_url {
            Some(url) => {
                let client = redis::Client::open(url.as_str())
                    .map_err(|source| Error::InvalidRedisUrl { url, source })?;
                Store::Redis(RedisStore::new(
                    client,
                    self.deadline.unwrap_or(DEFAULT_DEADLINE),
                    self.clock,
                ))
            }
            None => Store::Memory(MemoryStore::new(clock.clone())),
        };
        Ok(Limiter {
            inner: Arc::new(Inner {
                store,
                defaults: self.defaults,
                clock,
            }),
        })
    }
}
