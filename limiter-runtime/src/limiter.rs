//! The shared runtime: a [`Limiter`] is built once, installed, and asked by every annotated function.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Once, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::algorithm::{Outcome, Request};
use crate::clock::{as_micros, Clock};
use crate::defaults::Defaults;
use crate::degraded::breaker::{Breaker, Permit, Transition};
use crate::degraded::instances::Instances;
use crate::degraded::share;
use crate::deny_cache::{DenyCache, Lookup};
use crate::error::BackendError;
use crate::key::{KeyRef, StoreKey};
use crate::observe;
use crate::overrides::{Overrides, Table, OVERRIDES};
use crate::rule::Resolved;
use crate::store::{MemoryStore, RedisStore, Store};
use crate::{Decision, Error, Limit, LimiterBuilder, OnError, Override, RateLimited, Rule};

/// How often a runtime reloads the overrides even without being told: a backstop for a lost message.
const OVERRIDES_BACKSTOP: Duration = Duration::from_secs(5);
/// The bound on an operator's change (an override) reaching Redis.
const CHANGE_DEADLINE: Duration = Duration::from_secs(5);

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
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    store: Store,
    defaults: Defaults,
    /// This process's clock: the time of decisions made without the store.
    clock: Arc<dyn Clock>,
    /// Off: every call goes ahead with no store traffic at all.
    enabled: AtomicBool,
    /// What decides, and how Redis is watched, when Redis fails (Redis stores only).
    fallback: Option<Fallback>,
    /// Run-time overrides of limits, as this runtime last saw them.
    overrides: Overrides,
    /// Starts the background tasks of a Redis limiter (heartbeat, override sync) on its first decision.
    background: Once,
    /// Decisions made in degraded mode.
    degraded: AtomicU64,
    /// Calls a shadow rule would have rejected.
    shadowed: AtomicU64,
    /// The `metrics` handles of every prefix seen (nothing without the feature).
    metrics: observe::Metrics,
}

/// What a decision Redis must make settled before asking. Owned, so that the question can outlive the borrow
/// of the limiter it was settled under (an annotated call asks Redis with a handle of its own).
struct Ask {
    request: Request,
    permit: Permit,
    /// Whether the deny cache is to hear what Redis answers (it may hold this call's denial).
    cached: bool,
    sent: Duration,
    /// This call re-asks Redis for a key whose cached denial ran out.
    probe: bool,
}

/// A decision made at once (every decision this process can make alone), or the rest of it to await: a Redis
/// round trip, or a leaky bucket's slot. Boxed, that rest: a Redis round trip's future is large (redis-rs's),
/// and it should not weigh on every call's future, in-process ones included.
pub(crate) enum Decided<'a, T> {
    /// Taken when polled.
    Now(Option<T>),
    Later(Pin<Box<dyn Future<Output = T> + Send + 'a>>),
}

// A decision is moved out when polled, never pinned; what is pinned (the rest) is boxed.
impl<T> Unpin for Decided<'_, T> {}

impl<T> Future for Decided<'_, T> {
    type Output = T;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match &mut *self {
            Decided::Now(decided) => Poll::Ready(
                decided
                    .take()
                    .expect("a decision polled after it completed"),
            ),
            Decided::Later(rest) => rest.as_mut().poll(cx),
        }
    }
}

/// Degraded mode of a Redis-backed limiter.
pub(crate) struct Fallback {
    pub(crate) breaker: Breaker,
    /// The in-process limiter of `on_error = local`.
    pub(crate) local: MemoryStore,
    pub(crate) instances: Instances,
    /// Keys Redis said are limited, answered here until their `retry_after` (unless switched off).
    pub(crate) denied: Option<DenyCache>,
}

impl Inner {
    pub(crate) fn new(
        store: Store,
        defaults: Defaults,
        clock: Arc<dyn Clock>,
        fallback: Option<Fallback>,
    ) -> Inner {
        Inner {
            store,
            defaults,
            clock,
            enabled: AtomicBool::new(true),
            fallback,
            overrides: Overrides::default(),
            background: Once::new(),
            degraded: AtomicU64::new(0),
            shadowed: AtomicU64::new(0),
            metrics: observe::Metrics::default(),
        }
    }
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
        Limiter::builder().env()?.build()
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
        Limiter::with_current(Limiter::clone)
    }

    /// `f` of the limiter annotated functions use here (see [`current`](Limiter::current)), borrowed.
    #[inline]
    pub(crate) fn with_current<R>(f: impl FnOnce(&Limiter) -> R) -> R {
        let mut f = Some(f);
        let mut call = |limiter: &Limiter| f.take().expect("called once")(limiter);
        match SCOPED.try_with(&mut call) {
            Ok(result) => result,
            Err(_) => call(Limiter::global()),
        }
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
    ///
    /// (`check_cost(.., 1)`'s own future, returned as is rather than awaited in another one: one future less
    /// to build and copy per call.)
    pub fn check<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
    ) -> impl Future<Output = Decision> + use<'a, K> {
        self.check_cost(rule, key, 1)
    }

    /// [`check`](Limiter::check) for a call that weighs `cost` units.
    pub async fn check_cost(&self, rule: &Rule, key: impl fmt::Display, cost: u64) -> Decision {
        let (resolved, key) = self.resolve_key(rule, "", format_args!("{key}"));
        self.decide(resolved, key.parts(), cost).await
    }

    /// [`check_cost`](Limiter::check_cost) for a rule already resolved (its overrides applied) and its store
    /// key: decided at once where this process can decide, else asked of Redis with what it needs moved in
    /// (the key copied into one string). Always inlined: the decision made at once is then built in the
    /// caller's future, not built here and copied there.
    #[inline(always)]
    pub(crate) fn decide<'a>(
        &'a self,
        resolved: Resolved<'a>,
        key: KeyRef<'_>,
        cost: u64,
    ) -> Decided<'a, Decision> {
        match self.decide_here(&resolved, key, cost) {
            Ok(decision) => Decided::Now(Some(decision)),
            Err(ask) => self.ask_later(resolved, key.prefix, key.rest, cost, ask),
        }
    }

    /// The Redis round trip of [`decide`](Limiter::decide), boxed. Out of line: its future is large (~1 KiB),
    /// and an in-process decision should not carry the frame that builds it. The key comes as its two parts,
    /// each passed in registers: a `KeyRef` passed whole would be passed by address, and the in-process path
    /// would then keep its key in memory and copy it back out (a stalled load per decision).
    #[cold]
    #[inline(never)]
    fn ask_later<'a>(
        &'a self,
        resolved: Resolved<'a>,
        prefix: &str,
        rest: &str,
        cost: u64,
        ask: Ask,
    ) -> Decided<'a, Decision> {
        let key = KeyRef { prefix, rest }.to_store_key();
        Decided::Later(Box::pin(async move {
            self.ask_redis(&resolved, &key, cost, ask).await
        }))
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
    ///
    /// (`enforce_cost(.., 1)`'s own future, as for [`check`](Limiter::check).)
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
        let (resolved, key) = self.resolve_key(rule, "", format_args!("{key}"));
        self.enforce_resolved(resolved, key, cost).await
    }

    /// [`enforce_cost`](Limiter::enforce_cost) for a rule already resolved (its overrides applied) and its
    /// store key, as far as it can go at once (as [`decide`](Limiter::decide)).
    pub(crate) fn enforce_resolved<'a>(
        &'a self,
        resolved: Resolved<'a>,
        key: StoreKey,
        cost: u64,
    ) -> Decided<'a, Result<Decision, RateLimited>> {
        let verdict = match self.decide_here(&resolved, key.parts(), cost) {
            Ok(decision) => self.verdict(&resolved, key, decision),
            Err(ask) => {
                return Decided::Later(Box::pin(async move {
                    self.enforce_asked(&resolved, key, cost, ask).await
                }));
            }
        };
        waited(verdict)
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
        Limit::new(self.clone(), self.inner.defaults.resolve(rule, ""))
    }

    /// `rule` with every part resolved: the overrides of its limit (and of `key`, its store key), then the
    /// rule itself, then the defaults of `module`, then the crate's.
    pub(crate) fn resolve<'a>(
        &'a self,
        rule: &'a Rule,
        module: &str,
        key: &StoreKey,
    ) -> Resolved<'a> {
        let mut resolved = self.inner.defaults.resolve(rule, module);
        self.apply_overrides(&mut resolved, key.parts().rest);
        resolved
    }

    /// [`resolve`](Limiter::resolve) and the store key of `key`, from one resolution of the rule.
    fn resolve_key<'a>(
        &'a self,
        rule: &'a Rule,
        module: &str,
        key: fmt::Arguments<'_>,
    ) -> (Resolved<'a>, StoreKey) {
        let mut resolved = self.inner.defaults.resolve(rule, module);
        let key = StoreKey::new(resolved.prefix, key);
        self.apply_overrides(&mut resolved, key.parts().rest);
        (resolved, key)
    }

    /// The overrides of `resolved`'s limit, and of `key` within it (the key after the prefix), win.
    #[inline]
    pub(crate) fn apply_overrides(&self, resolved: &mut Resolved<'_>, key: &str) {
        if let Some(limits) = self.inner.overrides.lookup(resolved.prefix, key) {
            resolved.parts.max = limits.max.unwrap_or(resolved.parts.max);
            resolved.parts.window = limits.window.unwrap_or(resolved.parts.window);
        }
    }

    /// What an annotated call does ([`enforce_resolved`](Limiter::enforce_resolved), for a rule written in
    /// `module` and a key still to write out): every decision made in this process is made here, with the
    /// limiter borrowed, and only a Redis round trip (or a slot to wait for) is left to await, with a handle of
    /// its own.
    pub(crate) fn enforce_now(
        &self,
        rule: &'static Rule,
        module: &'static str,
        key: fmt::Arguments<'_>,
        cost: u64,
    ) -> Decided<'static, Result<Decision, RateLimited>> {
        let (resolved, key) = self.resolve_key(rule, module, key);
        let verdict = match self.decide_here(&resolved, key.parts(), cost) {
            Ok(decision) => self.verdict(&resolved, key, decision),
            Err(ask) => {
                let limiter = self.clone();
                return Decided::Later(Box::pin(async move {
                    // Resolved again, with the handle this future owns: the same rule, an instant later.
                    let resolved = limiter.resolve(rule, module, &key);
                    limiter.enforce_asked(&resolved, key, cost, ask).await
                }));
            }
        };
        waited(verdict)
    }

    /// The rest of an enforced call that Redis must decide: asked, concluded, and, admitted, held until its
    /// slot.
    async fn enforce_asked(
        &self,
        resolved: &Resolved<'_>,
        key: StoreKey,
        cost: u64,
        ask: Ask,
    ) -> Result<Decision, RateLimited> {
        let decision = self.ask_redis(resolved, &key, cost, ask).await;
        let (decision, wait) = self.verdict(resolved, key, decision)?;
        Ok(after(wait, decision).await)
    }

    /// What a decision means for the call ([`conclude`](Limiter::conclude)), and how long an admitted call
    /// must first wait for its slot (a shadow rule never holds a call).
    fn verdict(
        &self,
        resolved: &Resolved<'_>,
        key: StoreKey,
        decision: Decision,
    ) -> Result<(Decision, Duration), RateLimited> {
        let wait = if resolved.parts.shadow || !decision.allowed {
            Duration::ZERO
        } else {
            decision.delay
        };
        Ok((self.conclude(resolved, key, decision)?, wait))
    }

    /// What a decision means for the call: a rejection becomes [`RateLimited`]; under a shadow rule, a
    /// rejection is only reported, and the call goes ahead.
    fn conclude(
        &self,
        resolved: &Resolved<'_>,
        key: StoreKey,
        decision: Decision,
    ) -> Result<Decision, RateLimited> {
        if decision.allowed {
            return Ok(decision);
        }
        if resolved.parts.shadow {
            self.inner.shadowed.fetch_add(1, Ordering::Relaxed);
            self.inner.metrics.shadow_rejection(resolved.prefix);
            tracing::info!(
                key = &*key,
                limit = decision.limit,
                "rate limiter: would have limited (shadow mode)"
            );
            return Ok(decision);
        }
        if !decision.degraded {
            tracing::debug!(key = &*key, limit = decision.limit, retry_after = ?decision.retry_after, "rate limiter: limited");
        }
        Err(RateLimited::new(resolved.message.clone(), key, decision))
    }

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
        if let Store::Redis(store) = &self.inner.store {
            let mut connection = store.connection().map_err(backend_error)?;
            let script = &*OVERRIDES_SCRIPT;
            let op = if set { "set" } else { "clear" };
            let args = (op, change.field(), change.value(), OVERRIDES);
            tokio::time::timeout(
                CHANGE_DEADLINE,
                script.invoke::<i64>(&mut connection, OVERRIDES, args),
            )
            .await
            .map_err(|_| Error::Timeout(CHANGE_DEADLINE))?
            .map_err(Error::Redis)?;
        }
        self.inner.overrides.apply(&change, set);
        self.forget_denials();
        Ok(())
    }

    /// Turns limiting off (`false`): every call goes ahead, with no Redis traffic at all, until it is turned
    /// back on (`true`). The articles' switch for a Redis under pressure.
    pub fn set_enabled(&self, enabled: bool) {
        self.inner.enabled.store(enabled, Ordering::Relaxed);
    }

    /// Whether limiting is on (see [`set_enabled`](Limiter::set_enabled)).
    #[inline]
    pub fn is_enabled(&self) -> bool {
        self.inner.enabled.load(Ordering::Relaxed)
    }

    /// Limits changed: what Redis said of them no longer holds.
    fn forget_denials(&self) {
        if let Some(cache) = self.inner.fallback.as_ref().and_then(|f| f.denied.as_ref()) {
            cache.clear();
        }
    }

    /// What this limiter has seen so far.
    pub fn stats(&self) -> Stats {
        let fallback = self.inner.fallback.as_ref();
        Stats {
            degraded: self.inner.degraded.load(Ordering::Relaxed),
            breaker_open: fallback.is_some_and(|f| f.breaker.is_open()),
            instances: fallback.map_or(1, |f| f.instances.live()),
            shadowed: self.inner.shadowed.load(Ordering::Relaxed),
        }
    }

    /// Every decision made in this process, at once (counted): switched off, `max = 0`, the in-memory store, a
    /// denial Redis already gave, the breaker open. Else what Redis must be asked.
    #[inline]
    fn decide_here(
        &self,
        rule: &Resolved<'_>,
        key: KeyRef<'_>,
        cost: u64,
    ) -> Result<Decision, Ask> {
        let decided = 'decided: {
            let inner = &*self.inner;
            if !self.is_enabled() {
                break 'decided Ok(self.answer(
                    rule,
                    Outcome::admit(rule.parts.max),
                    inner.clock.now(),
                    false,
                ));
            }
            if rule.parts.max == 0 {
                // Nothing is ever admitted: no need to ask (and no algorithm divides by zero).
                let outcome = Outcome::denied(0, as_micros(rule.parts.window), 0);
                break 'decided Ok(self.answer(rule, outcome, inner.clock.now(), false));
            }
            let request = rule.parts.request(cost);
            match (&inner.store, &inner.fallback) {
                (Store::Memory(memory), _) => {
                    let (outcome, at) = memory.decide(rule.parts.algorithm, key, &request);
                    Ok(self.answer(rule, outcome, Duration::from_micros(at), false))
                }
                (Store::Redis(store), Some(fallback)) => {
                    self.decide_before_redis(rule, key, cost, request, store, fallback)
                }
                (Store::Redis(_), None) => {
                    unreachable!("a Redis limiter is built with its fallback")
                }
            }
        };
        if let Ok(decision) = &decided {
            self.inner.metrics.decision(rule.prefix, decision);
        }
        decided
    }

    /// What a Redis-backed limiter decides without Redis: a denial Redis already gave, the breaker open.
    /// Else what Redis must be asked.
    fn decide_before_redis(
        &self,
        rule: &Resolved<'_>,
        key: KeyRef<'_>,
        cost: u64,
        request: Request,
        store: &RedisStore,
        fallback: &Fallback,
    ) -> Result<Decision, Ask> {
        let sent = self.inner.clock.now();
        let cache = fallback
            .denied
            .as_ref()
            .filter(|_| request.can_fit(rule.parts.algorithm));
        let lookup = cache.map_or(Lookup::Miss, |cache| {
            cache.get(key, cost, sent, store.deadline())
        });
        if let Lookup::Denied(decision) = lookup {
            return Ok(decision);
        }
        let permit = fallback.breaker.permit();
        if permit == Permit::Skip {
            return Ok(self.degraded(rule, key, &request, fallback));
        }
        Err(Ask {
            request,
            permit,
            cached: cache.is_some(),
            sent,
            probe: matches!(lookup, Lookup::Probe),
        })
    }

    /// Asks Redis; decides in degraded mode when it cannot answer (counted).
    async fn ask_redis(
        &self,
        rule: &Resolved<'_>,
        key: &StoreKey,
        cost: u64,
        ask: Ask,
    ) -> Decision {
        let Ask {
            request,
            permit,
            cached,
            sent,
            probe,
        } = ask;
        let (Store::Redis(store), Some(fallback)) = (&self.inner.store, &self.inner.fallback)
        else {
            unreachable!("only a Redis limiter asks Redis, and it is built with its fallback")
        };
        let cache = fallback.denied.as_ref().filter(|_| cached);
        self.inner.background.call_once(|| {
            spawn_heartbeat(Arc::downgrade(&self.inner));
            spawn_override_sync(Arc::downgrade(&self.inner));
        });
        let timer = observe::Timer::start();
        let answer = store.decide(rule.parts.algorithm, key, &request).await;
        let parts = key.parts();
        self.inner.metrics.redis(rule.prefix, timer);
        let decision = match answer {
            Ok((outcome, at)) => {
                if fallback.breaker.succeeded(permit) == Transition::Recovered {
                    tracing::warn!(
                        key = &**key,
                        "rate limiter: Redis answers again; deciding in Redis"
                    );
                }
                self.answer(rule, outcome, Duration::from_micros(at), false)
            }
            Err(cause) => {
                self.failed(rule, key, &cause, fallback.breaker.failed(permit));
                self.degraded(rule, parts, &request, fallback)
            }
        };
        if let Some(cache) = cache {
            // What Redis said (a degraded decision: nothing, and the cache forgets the key).
            cache.answered(parts, cost, &decision, sent, probe);
        }
        self.inner.metrics.decision(rule.prefix, &decision);
        decision
    }

    fn failed(&self, rule: &Resolved<'_>, key: &str, cause: &BackendError, transition: Transition) {
        if transition == Transition::FirstFailure {
            tracing::warn!(
                key,
                %cause,
                on_error = ?rule.parts.on_error,
                "rate limiter: Redis failed; deciding in degraded mode until it answers again (fail {})",
                match rule.parts.on_error {
                    OnError::Open => "open",
                    OnError::Closed => "closed",
                    OnError::Local => "local",
                }
            );
        } else {
            tracing::debug!(key, %cause, "rate limiter: Redis failed");
        }
    }

    /// A decision without Redis, by the rule's [`OnError`] policy.
    fn degraded(
        &self,
        rule: &Resolved<'_>,
        key: KeyRef<'_>,
        request: &Request,
        fallback: &Fallback,
    ) -> Decision {
        self.inner.degraded.fetch_add(1, Ordering::Relaxed);
        let now = self.inner.clock.now();
        match rule.parts.on_error {
            OnError::Open => self.answer(rule, Outcome::admit(rule.parts.max), now, true),
            OnError::Closed => {
                let outcome = Outcome::denied(0, as_micros(fallback.breaker.probe_every()), 0);
                self.answer(rule, outcome, now, true)
            }
            OnError::Local => {
                // This node's share of the limit, among the runtimes last seen sharing it.
                let instances = fallback.instances.live();
                let local = Request {
                    max: share(request.max, instances),
                    burst: share(request.burst, instances),
                    ..*request
                };
                let (outcome, at) = fallback.local.decide(rule.parts.algorithm, key, &local);
                let mut decision = self.answer(rule, outcome, Duration::from_micros(at), true);
                decision.limit = local.max;
                decision
            }
        }
    }

    #[inline]
    fn answer(
        &self,
        rule: &Resolved<'_>,
        outcome: Outcome,
        decided_at: Duration,
        degraded: bool,
    ) -> Decision {
        Decision {
            allowed: outcome.allowed,
            limit: rule.parts.max,
            window: rule.parts.window,
            remaining: outcome.remaining,
            retry_after: Duration::from_micros(outcome.retry_after),
            reset_after: Duration::from_micros(outcome.reset_after),
            delay: Duration::from_micros(outcome.delay),
            decided_at,
            degraded,
        }
    }
}

/// A verdict made at once: ready, unless the call must first wait for its slot.
fn waited<'a>(
    verdict: Result<(Decision, Duration), RateLimited>,
) -> Decided<'a, Result<Decision, RateLimited>> {
    match verdict {
        Ok((decision, wait)) if !wait.is_zero() => {
            Decided::Later(Box::pin(async move { Ok(after(wait, decision).await) }))
        }
        verdict => Decided::Now(Some(verdict.map(|(decision, _)| decision))),
    }
}

/// `decision`, once `wait` (an admitted call's slot, leaky bucket) has passed.
async fn after(wait: Duration, decision: Decision) -> Decision {
    if !wait.is_zero() {
        // Boxed, as the Redis round trip is: a timer is large, and rarely needed.
        Box::pin(tokio::time::sleep(wait)).await;
    }
    decision
}

/// Renews this runtime's heartbeat while Redis is healthy and the limiter alive.
fn spawn_heartbeat(limiter: Weak<Inner>) {
    tokio::spawn(async move {
        loop {
            let Some(inner) = limiter.upgrade() else {
                return;
            };
            let (Store::Redis(store), Some(fallback)) = (&inner.store, &inner.fallback) else {
                return;
            };
            if !fallback.breaker.is_open() && inner.enabled.load(Ordering::Relaxed) {
                if let Ok(mut connection) = store.connection() {
                    let beat = fallback.instances.beat(&mut connection);
                    match tokio::time::timeout(store.deadline(), beat).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(error)) => tracing::debug!(%error, "rate limiter: heartbeat failed"),
                        Err(_) => tracing::debug!("rate limiter: heartbeat timed out"),
                    }
                }
            }
            let every = fallback.instances.every;
            drop(inner);
            tokio::time::sleep(every).await;
        }
    });
}

static OVERRIDES_SCRIPT: std::sync::LazyLock<crate::store::redis::LuaScript> =
    std::sync::LazyLock::new(|| {
        crate::store::redis::LuaScript::new(include_str!("../scripts/overrides.lua"))
    });

fn backend_error(error: BackendError) -> Error {
    match error {
        BackendError::Redis(error) => Error::Redis(error),
        BackendError::Timeout(deadline) => Error::Timeout(deadline),
        BackendError::Reply(reply) => Error::Redis(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "unexpected reply",
            format!("{reply:?}"),
        ))),
    }
}

/// Keeps this runtime's overrides in step with Redis: reloads them whenever a change is announced, and every
/// few seconds anyway, while the limiter is alive.
fn spawn_override_sync(limiter: Weak<Inner>) {
    use futures_util::StreamExt;

    tokio::spawn(async move {
        for attempt in 0.. {
            let subscribed = match limiter.upgrade() {
                None => return,
                Some(inner) => match &inner.store {
                    Store::Redis(store) => store.pubsub(attempt).await.ok(),
                    Store::Memory(_) => return,
                },
            };
            let Some(mut pubsub) = subscribed else {
                if !reload_overrides(&limiter).await {
                    return;
                }
                tokio::time::sleep(OVERRIDES_BACKSTOP).await;
                continue;
            };
            if pubsub.subscribe(OVERRIDES).await.is_err() {
                tokio::time::sleep(OVERRIDES_BACKSTOP).await;
                continue;
            }
            // Loaded after subscribing, so that no change falls between the two.
            if !reload_overrides(&limiter).await {
                return;
            }
            let mut changes = pubsub.on_message();
            // Until the subscription's connection is gone (then subscribe again): reload when a change is
            // announced, or when it is time to look anyway.
            while let Ok(Some(_)) | Err(_) =
                tokio::time::timeout(OVERRIDES_BACKSTOP, changes.next()).await
            {
                if !reload_overrides(&limiter).await {
                    return;
                }
            }
        }
    });
}

/// Loads every override from Redis; `false` once the limiter is gone.
async fn reload_overrides(limiter: &Weak<Inner>) -> bool {
    let Some(inner) = limiter.upgrade() else {
        return false;
    };
    let (Store::Redis(store), Some(fallback)) = (&inner.store, &inner.fallback) else {
        return false;
    };
    if fallback.breaker.is_open() || !inner.enabled.load(Ordering::Relaxed) {
        return true;
    }
    let Ok(mut connection) = store.connection() else {
        return true;
    };
    let mut read = redis::cmd("HGETALL");
    read.arg(OVERRIDES);
    match tokio::time::timeout(
        CHANGE_DEADLINE,
        read.query_async::<Vec<(String, String)>>(&mut connection),
    )
    .await
    {
        Ok(Ok(fields)) => {
            let overrides = fields.iter().filter_map(|(field, value)| {
                let parsed = Override::parse(field, value);
                if parsed.is_none() {
                    tracing::warn!(
                        field,
                        value,
                        "rate limiter: ignoring an override this version cannot read"
                    );
                }
                parsed
            });
            if inner.overrides.replace(Table::from_overrides(overrides)) {
                if let Some(cache) = fallback.denied.as_ref() {
                    cache.clear();
                }
            }
        }
        Ok(Err(error)) => tracing::debug!(%error, "rate limiter: could not load the overrides"),
        Err(_) => tracing::debug!("rate limiter: loading the overrides timed out"),
    }
    true
}
#[cfg(test)]
mod tests {
    use crate::{Limiter, Rule};

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
        use crate::RateLimited;
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
