//! The public API: [`Limiter`], the handle every decision is asked of, and its methods (the plain API:
//! check, enforce, several limits at once, reserve; which limiter annotated functions use; what operators
//! change at run time), beside what it builds and hands out: its builder, a rule resolved once ([`Limit`]),
//! a [`Reservation`], and the choice of the current limiter.

mod bans;
mod builder;
pub(crate) mod current;
mod limit;
mod list;
mod operators;
mod permit;
mod priority;
mod reservation;
mod turn;

pub use self::builder::LimiterBuilder;
pub use self::current::REDIS_URL_ENV;
pub use self::limit::Limit;
pub use self::list::{LimitList, ListedLimit};
pub use self::operators::Stats;
pub use self::permit::Permit;
pub(crate) use self::reservation::HeldCall;
pub use self::reservation::Reservation;
pub use self::turn::Turn;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::{Backend, DEFAULT_MAX_KEYS};
use crate::call::{Ask, Call, RuleRef, Ruling};
use crate::key::StoreKey;
use crate::pipeline::{Owner, Pipeline};
use crate::rule::Defaults;
use crate::{Clock, Decision, Error, Priority, RateLimited, Rule, SystemClock};

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
    pub(crate) pipeline: Arc<Pipeline>,
}

impl Limiter {
    pub(crate) fn new(backend: Backend, defaults: Defaults, clock: Arc<dyn Clock>) -> Limiter {
        Limiter {
            pipeline: Arc::new(Pipeline::new(backend, defaults, clock)),
        }
    }

    /// Starts building a limiter (in-memory unless told [`redis`](LimiterBuilder::redis)).
    pub fn builder() -> LimiterBuilder {
        LimiterBuilder::default()
    }

    /// Checks now whether the store can be used as set up: Redis connected, the password and the database
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
        self.pipeline.backend.operations().ready().await
    }

    /// Creates a limiter counting in this process's memory, with the default settings.
    ///
    /// Its limits are per process: each node counts alone. Use Redis for one count shared by every node.
    pub fn in_memory() -> Limiter {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
        let memory = Backend::memory(clock.clone(), DEFAULT_MAX_KEYS);
        Limiter::new(memory, Defaults::default(), clock)
    }

    /// Builds the limiter the environment asks for: Redis at `LIMITER_REDIS_URL` when set, else in-memory.
    pub fn from_env() -> Result<Limiter, Error> {
        Limiter::builder().env()?.build()
    }

    /// Installs this limiter as the shared runtime every `#[rate_limit]` function uses.
    ///
    /// Install once, at start-up, before the first annotated call; a second install is an error.
    pub fn install(self) -> Result<(), Error> {
        current::install(self)
    }

    /// Returns the shared runtime: the installed limiter, or — if none was installed before the first use — one
    /// built from the environment (as [`from_env`](Limiter::from_env) reads it), announced once at warn level.
    ///
    /// Unlike `from_env`, which fails, the shared runtime cannot refuse to exist: a variable that cannot be
    /// read is logged at error level, naming it, and ignored (a usable `LIMITER_REDIS_URL` is still used), and
    /// an unusable `LIMITER_REDIS_URL` leaves a Redis that fails every call, decided by each limit's
    /// `on_error` as in an outage, never memory counting per process instead.
    pub fn global() -> &'static Limiter {
        current::global()
    }

    /// Returns the limiter annotated functions use here: the one [`scope`](Limiter::scope)d over the current task,
    /// else the [`global`](Limiter::global) one.
    pub fn current() -> Limiter {
        current::with_current(Limiter::clone)
    }

    /// Runs `future` with this limiter as the one its `#[rate_limit]` functions use, instead of the
    /// global one. Tests use it to give each case its own store; a tower layer scopes its limiter over the
    /// handlers it serves.
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
        current::scope(self.clone(), future).await
    }

    /// Decides one call for `key` under `rule`: the plain API behind `#[rate_limit]`.
    ///
    /// Never fails: when the store cannot decide within the deadline, the rule's failure policy
    /// ([`OnError`](crate::OnError)) does (by default, the call is let through: "fail open"), with
    /// [`Decision::degraded`] set and a warn-level event naming the key and the cause.
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

    /// Does what [`check`](Limiter::check) does, for a call that weighs `cost` units.
    pub fn check_cost<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
        cost: u64,
    ) -> impl Future<Output = Decision> + use<'a, K> {
        self.check_with(rule, key, cost, Priority::Normal)
    }

    /// Returns the decision of `call`, a permit in flight it took given back ([`let_go`](Limiter::let_go)).
    async fn decision_letting_go(&self, call: Call<'_>) -> Decision {
        let (call, decided) = self.pipeline.ruling_owned(call).await;
        self.let_go(&call, &decided).await;
        decided.decision()
    }

    /// Lets go of what a call leaves once its caller keeps nothing of it but its decisions ([`check`](Limiter::check),
    /// [`enforce`](Limiter::enforce), [`Limit`]): a permit in flight it took goes back before the call returns,
    /// so that checking an [in-flight](Rule::in_flight) rule asks whether a permit is free and holds none (a
    /// permit is held by [`acquire`](Limiter::acquire), the attribute and the tower layer). Boxed, and only
    /// for a call that holds permits: the common call's future stays small.
    #[inline]
    pub(crate) async fn let_go(&self, call: &Call<'_>, decided: &Ruling) {
        if decided.admitted && call.holds_permits() {
            Box::pin(self.pipeline.give_back(call, decided, &call.permits())).await;
        }
    }

    /// Returns the call of one limit, `rule` (resolved), for `key`, weighing `cost`, of `priority`.
    #[inline(always)]
    pub(crate) fn one<'r>(
        &self,
        rule: &'r Rule,
        key: fmt::Arguments<'_>,
        cost: u64,
        priority: Priority,
    ) -> Call<'r> {
        let key = StoreKey::new(rule.prefix_value(), key);
        self.pipeline
            .call([Ask::of(RuleRef::Borrowed(rule), key, cost, priority)])
    }

    /// Returns the call an operator's action names: `key` of `rule`, or the long key it lists as `key` (see
    /// `StoreKey::named`). It is asked as [`Critical`](Priority::Critical), the priority that keeps no share
    /// above it, so that a read sees the whole limit (each priority's part is the reader's to work out).
    pub(crate) fn named<'r>(&self, rule: &'r Rule, key: &dyn fmt::Display) -> Call<'r> {
        let key = StoreKey::named(rule.prefix_value(), &key.to_string());
        self.pipeline
            .call([Ask::of(RuleRef::Borrowed(rule), key, 1, Priority::Critical)])
    }

    /// Returns the call of `limits`, their rules resolved into `rules`.
    pub(crate) fn list<'r, L: LimitList>(&self, limits: &L, rules: &'r mut Vec<Rule>) -> Call<'r> {
        let mut keys = Vec::new();
        limits.each(&mut |rule, key, cost, priority| {
            let rule = self.pipeline.defaults.resolve(rule, "");
            keys.push((StoreKey::new(rule.prefix_value(), key), cost, priority));
            rules.push(rule);
        });
        let rules: &'r [Rule] = rules;
        self.pipeline
            .call(rules.iter().zip(keys).map(|(rule, (key, cost, priority))| {
                Ask::of(RuleRef::Borrowed(rule), key, cost, priority)
            }))
    }

    /// Decides one call under several limits at once, each `(rule, key)` (or `(rule, key, cost)`): admitted
    /// only when every limit admits it, and then counted by each; else counted by none. Each limit's decision,
    /// in the order given. (Stacked `#[rate_limit]` attributes are this.) The limits are an array, a `Vec` or
    /// a slice: a list read from configuration fits.
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
    /// // From configuration: a Vec, answered with a Vec.
    /// let rules = vec![(&burst, "bob", 1), (&quota, "bob", 2)];
    /// assert_eq!(limiter.check_all(rules).await.len(), 2);
    /// # }
    /// ```
    pub async fn check_all<L: LimitList>(&self, limits: L) -> L::Decisions {
        let mut rules = Vec::new();
        let call = self.list(&limits, &mut rules);
        let decided = self.pipeline.ruling(&call).await;
        self.let_go(&call, &decided).await;
        L::decisions(decided.decisions())
    }

    /// Does what [`check_all`](Limiter::check_all) does, for a call that weighs `cost` units under each limit:
    /// `(rule, key, cost)`.
    pub async fn check_all_cost<L: LimitList>(&self, limits: L) -> L::Decisions {
        self.check_all(limits).await
    }

    /// Does what an annotated function does: like [`check`](Limiter::check), but a rejection is the
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

    /// Does what [`enforce`](Limiter::enforce) does, for a call that weighs `cost` units.
    pub fn enforce_cost<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
        cost: u64,
    ) -> impl Future<Output = Result<Decision, RateLimited>> + use<'a, K> {
        self.enforce_with(rule, key, cost, Priority::Normal)
    }

    /// Takes a permit of `rule`, an [in-flight](Rule::in_flight) limit, for `key`: at most its `permits`
    /// calls of a key hold one at once, across every node. The [`Permit`] gives it back when dropped; a call
    /// refused is the [`RateLimited`] error. (A rate's rule is enforced as [`enforce`](Limiter::enforce) does,
    /// and its charge stays.)
    pub async fn acquire(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
    ) -> Result<Permit, RateLimited> {
        self.acquire_all([(rule, key)]).await
    }

    /// Does what [`acquire`](Limiter::acquire) does, for several limits at once, decided as one (all or nothing; a call
    /// refused holds nothing): limits in flight beside rates, say at most 4 uploads of a tenant at once and
    /// 100 an hour.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// let at_once = Rule::new().prefix("uploads:running:").in_flight(4);
    /// let hourly = Rule::new().prefix("uploads:").max(100).window(Duration::from_secs(3600));
    /// let permit = limiter.acquire_all([(&at_once, "acme"), (&hourly, "acme")]).await.unwrap();
    /// assert_eq!(permit.decisions()[0].remaining, 3);
    /// assert_eq!(permit.decisions()[1].remaining, 99);
    /// # }
    /// ```
    pub async fn acquire_all<L: LimitList>(&self, limits: L) -> Result<Permit, RateLimited> {
        let mut rules = Vec::new();
        let call = self.list(&limits, &mut rules);
        let (call, decided) = self.pipeline.enforce(call).await?;
        Ok(Permit::new(self.clone(), call.detached(), decided))
    }

    /// Enforces what [`check_all`](Limiter::check_all) decides: a refusal is the [`RateLimited`] error (naming the
    /// first limit that refused, with every limit's state), and an admitted call that must wait for a slot sleeps
    /// until then.
    pub async fn enforce_all<L: LimitList>(&self, limits: L) -> Result<L::Decisions, RateLimited> {
        let mut rules = Vec::new();
        let call = self.list(&limits, &mut rules);
        let (call, decided) = self.pipeline.enforce(call).await?;
        self.let_go(&call, &decided).await;
        Ok(L::decisions(decided.decisions()))
    }

    /// Does what [`enforce_all`](Limiter::enforce_all) does, for a call that weighs `cost` units under each limit:
    /// `(rule, key, cost)`.
    pub async fn enforce_all_cost<L: LimitList>(
        &self,
        limits: L,
    ) -> Result<L::Decisions, RateLimited> {
        self.enforce_all(limits).await
    }

    /// Admits a call of an estimated cost, to settle to its actual cost once it is known (see
    /// [`Reservation`]): the estimate is charged now, or the call is refused with [`RateLimited`].
    pub async fn reserve(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
        estimate: u64,
    ) -> Result<Reservation, RateLimited> {
        let rule = Arc::new(self.pipeline.defaults.resolve(rule, ""));
        let key = StoreKey::new(rule.prefix_value(), format_args!("{key}"));
        let ask = Ask::of(RuleRef::Shared(rule), key, estimate, Priority::Normal);
        let call = self.pipeline.call([ask]);
        let (call, decided) = self.pipeline.enforce(call).await?;
        Ok(Reservation::new(self.clone(), call, decided))
    }

    /// Resolves `rule` once, to check keys against without resolving it again: see [`Limit`].
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
        let rule = self.pipeline.defaults.resolve(rule, "").completed();
        Limit::new(self.clone(), rule)
    }

    /// Describes this limiter in a few words, for messages that name two:
    /// "limiter #2 (Redis at redis://10.0.0.5:6379)".
    pub(crate) fn describe(&self) -> String {
        let store = self.pipeline.backend.operations().describe();
        format!("limiter #{} ({store})", self.pipeline.id)
    }
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter")
            .field("backend", &self.pipeline.backend)
            .field("defaults", &self.pipeline.defaults)
            .finish()
    }
}
/// The attribute's future, which outlives the borrow it finds its limiter by, holds the limiter.
impl Owner for Limiter {
    #[inline]
    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    fn give_back_now(&self, call: Call<'static>, decided: crate::call::Ruling) {
        let held = HeldCall {
            limiter: self.clone(),
            call,
            decided,
        };
        let costs = held.costs();
        held.give_back_now(costs);
    }
}

#[cfg(test)]
mod tests {
    use crate::{Limiter, RateLimited, Rule};

    /// Checks that call futures stay small. A call's future is copied as it is built and awaited: the Redis round trip
    /// (redis-rs's large future) is boxed so that it does not make every call's future, in-memory ones included, a
    /// kilobyte or more.
    #[test]
    fn call_futures_stay_small() {
        let limiter = Limiter::in_memory();
        let (rule, key) = (Rule::new(), String::from("k"));
        let check = std::mem::size_of_val(&limiter.check(&rule, &key));
        let enforce = std::mem::size_of_val(&limiter.enforce(&rule, &key));
        // The rule it resolves and the call it builds are held across the await: 552 bytes since a rule and
        // a charge can name a calendar's zone and periods, 592 since both can carry a penalty, 608 since a
        // charge says what it must leave free for the priorities above its own.
        assert!(check <= 608, "check's future is {check} bytes");
        assert!(enforce <= 1024, "enforce's future is {enforce} bytes");
    }

    /// Checks that a rejection is one pointer, so that every `Result` carrying it (in users' functions too) stays small
    /// on the path where nothing is rejected.
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
