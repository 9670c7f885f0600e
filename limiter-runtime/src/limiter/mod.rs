//! The public API: [`Limiter`], the handle every decision is asked of, and its methods (the plain API's
//! verbs: check, enforce, acquire, estimate, turn, each returning a [`Request`]; which limiter annotated
//! functions use; what operators change at run time), beside what it builds and hands out: its builder, a
//! rule resolved once ([`Limit`]), the handles that hold a charge ([`Permit`], [`Estimate`], [`Turn`]), and
//! the choice of the current limiter.

mod bans;
mod builder;
pub(crate) mod current;
mod estimate;
mod held;
mod limit;
pub(crate) mod limits;
mod list;
mod operators;
mod permit;
pub mod request;
mod turn;
mod waiting;

pub use self::builder::LimiterBuilder;
pub use self::current::REDIS_URL_ENV;
pub use self::estimate::Estimate;
pub(crate) use self::held::HeldCall;
pub use self::held::{AsCharged, Used};
pub use self::limit::Limit;
pub use self::list::{LimitList, ListedLimit};
pub use self::operators::Stats;
pub use self::permit::Permit;
use self::request::{ask, All, One, Request};
pub use self::turn::Turn;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::{Backend, DEFAULT_MAX_KEYS};
use crate::call::{Ask, Call, RuleRef, Ruling};
use crate::key::StoreKey;
use crate::pipeline::Pipeline;
use crate::rule::Defaults;
use crate::{Clock, Error, Priority, Rule, SystemClock};

/// The default bound on one Redis decision.
pub const DEFAULT_DEADLINE: Duration = Duration::from_millis(50);
/// The rate-limiting runtime: a backend (Redis or in-memory), crate-wide defaults and a failure policy.
///
/// `Limiter` is a cheap handle (`Clone` shares it). Build one at start-up and [`install`](Limiter::install)
/// it: every `#[rate_limit]` function then asks it. Code without the attribute asks it directly with
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
        let limiter = Limiter {
            pipeline: Arc::new(Pipeline::new(backend, defaults, clock)),
        };
        limiter.apply_pushed_limits();
        limiter
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

    /// Installs this limiter as the shared runtime every `#[rate_limit]` function uses.
    ///
    /// Install once, at start-up, before the first annotated call; a second install is an error.
    pub fn install(self) -> Result<(), Error> {
        current::install(self)
    }

    /// Returns the limiter annotated functions use here: the one [`scope`](Limiter::scope)d over the current
    /// task, else the installed one; if none was installed before the first use, one built from the
    /// environment (as [`LimiterBuilder::env`] reads it), announced once at warn level.
    ///
    /// Unlike `LimiterBuilder::env`, which fails, this limiter cannot refuse to exist: a variable that cannot
    /// be read is logged at error level, naming it, and ignored (a usable `LIMITER_REDIS_URL` is still used),
    /// and an unusable `LIMITER_REDIS_URL` leaves a Redis that fails every call, decided by each limit's
    /// `on_error` as in an outage, never memory counting per process instead.
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

    /// Counts one call for `key` under `rule` and says whether it may go ahead: the plain API behind
    /// `#[rate_limit]`. Returns a [`Request`]: await it as it is, or give it options first
    /// (`.cost(3).priority(Priority::High)`).
    ///
    /// Never fails: when the store cannot decide within the deadline, the rule's failure policy
    /// ([`OnError`](crate::OnError)) does (by default, the call is let through: "fail open"), with
    /// [`Decision::degraded`](crate::Decision::degraded) set and a warn-level event naming the key and the
    /// cause. Checking an [in-flight](Rule::in_flight) rule asks whether a permit is free and holds none
    /// ([`acquire`](Limiter::acquire) holds one).
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
    /// // A batch of 5 weighs 5; a cost of 0 only reads the state.
    /// assert!(!limiter.check(&rule, "bob").cost(5).await.allowed);
    /// assert_eq!(limiter.check(&rule, "bob").cost(0).await.remaining, 3);
    /// # }
    /// ```
    #[inline(always)]
    pub fn check<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
    ) -> Request<ask::Check, One<'a, K>> {
        Request::new(One::new(self, rule, key))
    }

    /// Does what an annotated function does: like [`check`](Limiter::check), but a rejection is the
    /// [`RateLimited`](crate::RateLimited) error, and an admitted call that must wait for its slot
    /// ([`Decision::delay`](crate::Decision::delay), leaky bucket with a `max_wait`) waits until then.
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
    #[inline(always)]
    pub fn enforce<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
    ) -> Request<ask::Enforce, One<'a, K>> {
        Request::new(One::new(self, rule, key))
    }

    /// Takes a permit of `rule`, an [in-flight](Rule::in_flight) limit, for `key`: at most its `permits`
    /// calls of a key hold one at once, across every node. The [`Permit`] gives it back when dropped; a call
    /// refused is the [`RateLimited`](crate::RateLimited) error. (A rate's rule is enforced as
    /// [`enforce`](Limiter::enforce) does, and its charge stays.)
    ///
    /// With `in_flight(10)` and `reserve(Critical, 20)`, at most 8 calls below `Critical` hold a permit at
    /// once, and a `Critical` call (`.priority(Priority::Critical)`) finds one while they do.
    pub fn acquire<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
    ) -> Request<ask::Acquire, One<'a, K>> {
        Request::new(One::new(self, rule, key))
    }

    /// Admits a call of an estimated cost (its [`cost`](Request::cost)), to settle to its actual cost once
    /// it is known (see [`Estimate`]): the estimate is charged now, or the call is refused with
    /// [`RateLimited`](crate::RateLimited).
    pub fn estimate<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
    ) -> Request<ask::Estimate, One<'a, K>> {
        Request::new(One::new(self, rule, key))
    }

    /// Waits for the turn of a call to an upstream under `rule` (a
    /// [`LeakyBucket`](crate::Algorithm::LeakyBucket) with a [`max_wait`](Rule::max_wait) spaces the calls)
    /// for `key`, shared by every node.
    ///
    /// The call waits for its slot, fleet-wide, up to the longest `max_wait` of its limits (its deadline; the
    /// longest window when none has one); refused by a limit (no slot within it, tokens short, a pause), it
    /// waits as long as it is told and asks again, while that is within its deadline; past it, it fails with
    /// [`RateLimited`](crate::RateLimited), whose [`retry_after`](crate::RateLimited::retry_after) says how
    /// long it would have waited. Dropped while it waits, it gives back what it was charged. A limit that
    /// would fail open while Redis cannot answer fails to its node's share instead
    /// ([`OnError::Local`](crate::OnError::Local)): a fleet never releases its waiting calls all at once. On
    /// this node, a slot that comes goes to the most important call waiting for one
    /// ([`priority`](Request::priority)).
    ///
    /// ```
    /// use limiter_runtime::{Algorithm, Limiter, Rule};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// // The partner allows 10 calls a second; a call waits up to 2 s for its turn.
    /// let partner = Rule::new()
    ///     .prefix("partner:")
    ///     .algorithm(Algorithm::LeakyBucket)
    ///     .max(10)
    ///     .window(Duration::from_secs(1))
    ///     .max_wait(Duration::from_secs(2));
    /// let first = limiter.turn(&partner, "acme").await.unwrap();
    /// let second = limiter.turn(&partner, "acme").await.unwrap();
    /// assert!(second.waited() >= Duration::from_millis(90)); // its slot, 100 ms after the first's
    /// // ... send it; then tell the fleet what the partner answered:
    /// let paused = second.answered(429, [("retry-after", "1")]).await.unwrap();
    /// assert_eq!(paused, Some(Duration::from_secs(1)));
    /// # let _ = first;
    /// # }
    /// ```
    pub fn turn<'a, K: fmt::Display>(
        &'a self,
        rule: &'a Rule,
        key: K,
    ) -> Request<ask::Turn, One<'a, K>> {
        Request::new(One::new(self, rule, key))
    }

    /// Names several limits of one call, decided as one: admitted only when every limit admits it, and then
    /// counted by each; else counted by none. Ask them with the same verbs as one limit:
    /// [`check`](All::check), [`enforce`](All::enforce), [`acquire`](All::acquire),
    /// [`estimate`](All::estimate), [`turn`](All::turn). Each limit is `(rule, key)`, or `(rule, key, cost)`
    /// for a cost of its own; the limits are an array (answered with an array), a `Vec` or a slice (answered
    /// with a `Vec`): a list read from configuration fits. (Stacked `#[rate_limit]` attributes are this.)
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
    ///     let decisions = limiter.all([(&burst, "alice"), (&quota, "alice")]).check().await;
    ///     assert!(decisions.iter().all(|d| d.allowed));
    /// }
    /// // The burst is spent: the call is refused, and the hourly quota keeps its third unit.
    /// let [burst_decision, quota_decision] =
    ///     limiter.all([(&burst, "alice"), (&quota, "alice")]).check().await;
    /// assert!(!burst_decision.allowed);
    /// assert_eq!(quota_decision.remaining, 1);
    /// // From configuration: a Vec, answered with a Vec; a limit with a cost of its own.
    /// let limits = vec![(&burst, "bob", 1), (&quota, "bob", 2)];
    /// assert_eq!(limiter.all(limits).check().await[1].remaining, 1);
    /// # }
    /// ```
    pub fn all<L: LimitList>(&self, limits: L) -> All<'_, L> {
        All::new(self, limits)
    }

    /// Lets go of what a call leaves once its caller keeps nothing of it but its decisions
    /// ([`check`](Limiter::check), [`enforce`](Limiter::enforce), [`Limit`]): a permit in flight it took goes
    /// back before the call returns, so that checking an [in-flight](Rule::in_flight) rule asks whether a
    /// permit is free and holds none (a permit is held by [`acquire`](Limiter::acquire), the attribute and
    /// the tower layer). Boxed, and only for a call that holds permits: the common call's future stays small.
    #[inline]
    pub(crate) async fn let_go(&self, call: &Call<'_>, decided: &Ruling) {
        if decided.admitted && call.holds_permits() {
            Box::pin(self.pipeline.give_back(call, decided, &call.permits())).await;
        }
    }

    /// Returns the call of one limit, `rule` (resolved), for `key`, weighing `cost`, of `priority`.
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

    /// Resolves `rule` once, to check keys against without resolving it again: see [`Limit`].
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// let logins = limiter.resolve(&Rule::new().prefix("login:").max(1));
    /// assert!(logins.check("alice").await.allowed);
    /// assert!(!logins.check("alice").await.allowed);
    /// # }
    /// ```
    pub fn resolve(&self, rule: &Rule) -> Limit {
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
#[cfg(test)]
mod tests {
    use std::future::IntoFuture as _;

    use crate::{Limiter, RateLimited, Rule};

    /// Checks that call futures stay small. A call's future is copied as it is built and awaited: the Redis
    /// round trip (redis-rs's large future) is boxed so that it does not make every call's future, in-memory
    /// ones included, a kilobyte or more.
    #[test]
    fn call_futures_stay_small() {
        let limiter = Limiter::in_memory();
        let (rule, key) = (Rule::new(), String::from("k"));
        let check = std::mem::size_of_val(&limiter.check(&rule, &key).into_future());
        let enforce = std::mem::size_of_val(&limiter.enforce(&rule, &key).into_future());
        // The call it builds (its rule borrowed, or shared when the defaults change it) is held across the
        // await, with what the pipeline keeps of it: 368 bytes since a request builds its call before its
        // future (608 when `check` was an `async fn` holding the resolved rule too); enforce's, 8 more for the
        // slot its verdict names (1,024 when it held a timer of its own).
        assert!(check <= 368, "check's future is {check} bytes");
        assert!(enforce <= 376, "enforce's future is {enforce} bytes");
    }

    /// Checks that a rejection is one pointer, so that every `Result` carrying it (in users' functions too)
    /// stays small on the path where nothing is rejected.
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
