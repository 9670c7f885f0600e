//! A limit as written: [`Rule`], every part optional. What a part left out resolves to is `resolve`'s
//! concern; what a part means, `algorithm`'s and the pipeline's.

mod carry;
mod env;
mod fault;
mod live;
mod on_error;
mod plan;
mod resolve;

use std::borrow::Cow;
use std::time::Duration;

use crate::calendar::{CalendarTerms, Period, Zone};
use crate::priority::Reserves;
use crate::{Algorithm, Penalty, Priority};

pub use self::carry::Carry;
pub(crate) use self::env::{env, parse_env, set};
pub(crate) use self::fault::{Fault, Told};
pub(crate) use self::live::Live;
pub use self::on_error::OnError;
pub use self::plan::Plan;
pub(crate) use self::plan::{unknown_plan, Plans};
pub(crate) use self::resolve::{Defaults, FileLimits};

/// What to limit: at most `max` calls per `window`, counted under `prefix` + key.
///
/// Every part left out is inherited from the [`Limiter`](crate::Limiter)'s crate-wide defaults (see
/// [`LimiterBuilder`](crate::LimiterBuilder)), exactly as for an attribute argument left out of
/// `#[rate_limit]`. Build it once (a `static` with [`LazyLock`](std::sync::LazyLock), say) and reuse it.
///
/// A limit of zero (`max(0)`, `in_flight(0)`, a token bucket's `burst(0)`) is the server's mistake, as the
/// attribute refuses it at compile time, `LIMITER_MAX=0` at start and an override at run time: every call of
/// it is refused as misconfigured ([`Reason::Misconfigured`](crate::Reason::Misconfigured), HTTP 500), before
/// any store is asked, and its prefix is told once in the log, at error level. A `window` shorter than a
/// microsecond counts as one microsecond.
///
/// # Example
///
/// ```
/// use limiter_runtime::Rule;
/// use std::sync::LazyLock;
/// use std::time::Duration;
///
/// static EMPLOYEES: LazyLock<Rule> = LazyLock::new(|| {
///     Rule::new()
///         .prefix("rate_limit:emp:")
///         .window(Duration::from_secs(10))
///         .max(5)
///         .message("slow down")
/// });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub(crate) prefix: Option<Cow<'static, str>>,
    pub(crate) name: Option<Cow<'static, str>>,
    pub(crate) window: Option<Duration>,
    pub(crate) max: Option<u64>,
    pub(crate) message: Option<Cow<'static, str>>,
    pub(crate) algorithm: Option<Algorithm>,
    pub(crate) burst: Option<u64>,
    /// How a bucket's level carries over when its limit changes (proportional unless set).
    pub(crate) carry: Option<Carry>,
    pub(crate) wait: Option<Wait>,
    pub(crate) on_error: Option<OnError>,
    pub(crate) shadow: Option<bool>,
    pub(crate) lease: Option<u64>,
    pub(crate) lease_ttl: Option<Duration>,
    pub(crate) in_flight_ttl: Option<Duration>,
    pub(crate) penalty: Option<Penalty>,
    /// The shares kept for calls of a priority and above.
    pub(crate) reserves: Option<Reserves>,
    /// A calendar quota's period, zone and billing day.
    pub(crate) calendar: CalendarTerms,
    /// The plans a call may name ([`Rule::plan`]).
    pub(crate) plans: Option<Plans>,
    /// The limit of calls in flight an attribute's `in_flight` adds beside its rate: counted under the rate's
    /// prefix (as resolved) followed by `in_flight:`.
    pub(crate) beside_rate: bool,
    /// Decided while limiting is switched off too: the admin door's own limit on failed tokens, which an
    /// operator's switch must not open.
    pub(crate) ignores_switch: bool,
}

/// How long a [`LeakyBucket`](Algorithm::LeakyBucket) call may wait for its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Up to one window (the rule's window, whatever resolves it).
    Window,
    /// Up to this long.
    Up(Duration),
}

impl Rule {
    /// Creates a rule that inherits everything from the limiter's defaults.
    pub const fn new() -> Self {
        Rule::from_attribute(None, None, None)
    }

    /// Sets the key namespace: the store key is `prefix` followed by the key.
    pub fn prefix(mut self, prefix: impl Into<Cow<'static, str>>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// Sets the policy's name: how the HTTP quota headers and [`RateLimited::policy`](crate::RateLimited::policy)
    /// call this limit. By default, `limit-` and the first 8 hex digits of the SHA-1 of its prefix: stable, and
    /// distinct for distinct prefixes, without showing the store's key namespace to clients.
    pub fn policy(mut self, name: impl Into<Cow<'static, str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the window length.
    pub const fn window(mut self, window: Duration) -> Self {
        self.window = Some(window);
        self
    }

    /// Sets the admissions per window.
    pub const fn max(mut self, max: u64) -> Self {
        self.max = Some(max);
        self
    }

    /// Sets the message of the [`RateLimited`](crate::RateLimited) error when this rule rejects a call.
    pub fn message(mut self, message: impl Into<Cow<'static, str>>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Sets the counting algorithm.
    pub const fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = Some(algorithm);
        self
    }

    /// Sets a [`TokenBucket`](Algorithm::TokenBucket)'s capacity, the most a burst can take at once (default `max`);
    /// at least 1, as `max` (a bucket of 0 is misconfigured).
    pub const fn burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }

    /// Sets how a bucket's level carries over when its limit changes between two calls on a key ([`Carry`]:
    /// proportional unless set): a reloaded rule, another plan, an override. `guide::limits` says what every
    /// algorithm carries.
    pub const fn carry(mut self, carry: Carry) -> Self {
        self.carry = Some(carry);
        self
    }

    /// Makes a [`LeakyBucket`](Algorithm::LeakyBucket) admit a call whose slot starts within `max_wait`, telling it
    /// to wait ([`Decision::delay`](crate::Decision::delay)); without it (or [`wait`](Rule::wait)) a call that
    /// would have to wait is rejected.
    pub const fn max_wait(mut self, max_wait: Duration) -> Self {
        self.wait = Some(Wait::Up(max_wait));
        self
    }

    /// Makes a [`LeakyBucket`](Algorithm::LeakyBucket) admit a call whose slot starts within one window, telling it
    /// to wait: `mode = wait` on the attribute.
    pub const fn wait(mut self) -> Self {
        self.wait = Some(Wait::Window);
        self
    }

    /// Sets what decides this rule's calls when Redis fails or is too slow (default: the limiter's).
    pub const fn on_error(mut self, on_error: OnError) -> Self {
        self.on_error = Some(on_error);
        self
    }

    /// Sets shadow mode: count and report calls the rule would reject ("would have limited", at info level and in
    /// [`Stats::shadowed`](crate::Stats::shadowed)), but never reject or delay one. For rolling out a new limit
    /// safely.
    pub const fn shadow(mut self, shadow: bool) -> Self {
        self.shadow = Some(shadow);
        self
    }

    /// Sets a lease (with Redis, for [`TokenBucket`](Algorithm::TokenBucket) and
    /// [`FixedWindow`](Algorithm::FixedWindow)): a node takes up to `units` from Redis in one call and
    /// spends them in memory, with no round trip, for at most [`lease_ttl`](Rule::lease_ttl) (default 100 ms);
    /// what it has not spent then goes back. For one hot key that one Redis core cannot serve.
    ///
    /// The bound it costs, exactly: a token bucket admits at most `burst + max · (t + lease_ttl) / window`
    /// over any interval `t` (units are spent up to `lease_ttl` after Redis counted them); a fixed window
    /// never more than `max` per window (a lease ends with its window). Other algorithms, and the in-memory
    /// store, ignore it. `lease = 50` on the attribute.
    pub const fn lease(mut self, units: u64) -> Self {
        self.lease = Some(units);
        self
    }

    /// Sets how long a node may spend a [`lease`](Rule::lease) before what is left of it goes back (default
    /// 100 ms): the longer, the fewer calls reach Redis, and the looser a token bucket's bound.
    /// `lease_ttl = "100ms"` on the attribute.
    pub const fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = Some(ttl);
        self
    }

    /// Sets a limit of calls in flight: at most `permits` calls of a key running at once, across every node
    /// ([`Algorithm::InFlight`]), not a rate: `window`, `algorithm`, `burst` and waiting do not apply, and a
    /// call takes one permit whatever its cost. Take one with [`Limiter::acquire`](crate::Limiter::acquire)
    /// (given back when the [`Permit`](crate::Permit) is dropped); `in_flight = 4` on the attribute holds one
    /// while the body runs. To limit a rate as well, stack a rate's rule beside it (see
    /// [`Limiter::all`](crate::Limiter::all)`(..).acquire()`).
    ///
    /// With Redis a permit expires [`in_flight_ttl`](Rule::in_flight_ttl) after it was taken unless its node
    /// renews it (it does, every third of it, while the permit is held). A node that dies keeps its permits
    /// taken for at most that long (fewer calls run meanwhile, never more); a node cut off from Redis for
    /// longer loses them while its bodies may still run, so only then can more than `permits` run at once.
    ///
    /// No permit at all (`in_flight(0)`) is misconfigured, like `max(0)`: every call is refused with
    /// [`Reason::Misconfigured`](crate::Reason::Misconfigured).
    pub const fn in_flight(mut self, permits: u64) -> Self {
        self.algorithm = Some(Algorithm::InFlight);
        self.max = Some(permits);
        self
    }

    /// Sets how long a permit of an [`in_flight`](Rule::in_flight) rule lives in Redis unless its node renews it
    /// (default 30 s; renewed every third of it while held). `in_flight_ttl = "30s"` on the attribute.
    pub const fn in_flight_ttl(mut self, ttl: Duration) -> Self {
        self.in_flight_ttl = Some(ttl);
        self
    }

    /// Sets a penalty ([`Penalty`]): a call this rule's limit refuses blocks its key for a while, fixed or
    /// escalating, on every node; every call of the key is refused until the block ends, with `retry_after` the
    /// block's remaining time. Operators can also [`ban`](crate::Limiter::ban) a key of a rule with a
    /// penalty. `penalty = "10m"` or `penalty = "1m..1h"` on the attribute.
    ///
    /// It works with every algorithm, calls in flight and calendar quotas included, and with stacked calls (a
    /// call is refused, and charged nothing, when any of its keys is blocked). A shadow rule reports its
    /// blocks and never refuses. A rule with a penalty takes no [`lease`](Rule::lease): each call must read
    /// the block, so each goes to the store.
    ///
    /// Beside [`wait`](Rule::wait) or [`max_wait`](Rule::max_wait), a call refused because its slot is further
    /// than it may wait is an offence like any other refusal: its key is blocked, and with one key for every
    /// caller, every caller is. The attribute refuses `penalty` beside `mode = wait` for that reason; a rule
    /// built by hand is taken as written, so give such a penalty a rule of its own that does not wait.
    pub const fn penalty(mut self, penalty: Penalty) -> Self {
        self.penalty = Some(penalty);
        self
    }

    /// Keeps `percent` of the limit for calls of `priority` and above ([`Priority`]): calls below it fill the
    /// rest, decided in the same step as the count, on every node. With `reserve(Critical, 20)` a limit of 100
    /// lets calls below `Critical` fill 80, and `Critical` calls all 100. Reserves nest: with
    /// `reserve(Critical, 10)` and `reserve(High, 30)` as well, `Normal` and `Low` calls fill 70, `High` calls 90.
    /// `reserve = "critical 20%, high 30%"` on the attribute.
    ///
    /// A share is of `max` (a token bucket's `burst`; a leaky bucket's slots within its `max_wait`), rounded
    /// up to whole units: 20% of 7 keeps 2. `percent` above 100 counts as 100; a share kept for
    /// [`Low`](Priority::Low) and above is kept for every call, so keeps nothing. A call refused for a share
    /// kept above it, which its limit would otherwise admit, is [`Verdict::Reserved`](crate::Verdict::Reserved):
    /// not an offence for a [`penalty`](Rule::penalty). See `guide::priorities`.
    pub const fn reserve(mut self, priority: Priority, percent: u8) -> Self {
        let reserves = match self.reserves {
            Some(reserves) => reserves,
            None => Reserves::NONE,
        };
        self.reserves = Some(reserves.with(priority, percent));
        self
    }

    /// Sets a calendar quota: at most `max` units per `period` of the calendar ([`Algorithm::Calendar`]), counted
    /// again from the period's first instant in the rule's [`tz`](Rule::tz) (UTC unless set): midnight, Monday's
    /// midnight, or the billing day's ([`anchor`](Rule::anchor)). `window`, `burst`, leases and waiting do
    /// not apply; `cost` does. `period = month` on the attribute.
    ///
    /// With Redis, Redis decides which period a call is in, on its own clock (`TIME`): this node only says
    /// where the periods around its "now" end, in the zone, so a node whose clock is off by less than a
    /// period changes nothing. A key lives until its period ends.
    ///
    /// ```
    /// use limiter_runtime::{Period, Rule, Zone};
    ///
    /// // 10,000 calls a day, reset at midnight in Berlin.
    /// let daily = Rule::new().period(Period::Day).tz(Zone::get("Europe/Berlin").unwrap()).max(10_000);
    /// // 1,000,000 tokens a month, from the 15th (the last day of a shorter month).
    /// let monthly = Rule::new().period(Period::Month).anchor(15).max(1_000_000);
    /// # let _ = (daily, monthly);
    /// ```
    pub const fn period(mut self, period: Period) -> Self {
        self.algorithm = Some(Algorithm::Calendar);
        self.calendar.period = Some(period);
        self
    }

    /// Sets the time zone a [`period`](Rule::period) is counted in (default UTC). A zone per call (a tenant's own)
    /// is `tz = <expr>` on the attribute, or a rule per zone with the plain API.
    pub fn tz(mut self, zone: Zone) -> Self {
        self.calendar.zone = Some(zone);
        self
    }

    /// The zone `#[rate_limit(tz = "...")]` names, checked when it was compiled.
    #[doc(hidden)]
    // `Option::replace` is not `const`: a rule in a `static` is built at compile time.
    #[allow(clippy::mem_replace_option_with_some)]
    pub const fn tz_checked(mut self, name: &'static str) -> Self {
        let before = std::mem::replace(&mut self.calendar.zone, Some(Zone::checked(name)));
        // A rule in a `static` is built at compile time, where nothing can be dropped (it held none).
        std::mem::forget(before);
        self
    }

    /// Sets the billing day a [`Period::Month`] starts on (default 1): a month shorter than `day` starts on its
    /// last day (31 is every month's last day; 0 reads as 1). `anchor = 15` on the attribute.
    pub const fn anchor(mut self, day: u8) -> Self {
        self.calendar.anchor = Some(day);
        self
    }

    /// Adds the plan `name` ([`Plan`]): a call that names it ([`Request::plan`](crate::Request::plan), `plan =
    /// <expr>` on the attribute) is limited by the plan's values where it sets them, by the rule's elsewhere.
    /// Setting a plan of the same name again replaces it.
    pub fn plan(mut self, name: &str, plan: Plan) -> Self {
        self.plans = Some(Plans::with(self.plans.as_ref(), name, plan));
        self
    }

    /// Creates a rule with the text an attribute writes, in a constant: what `#[rate_limit]` expansions start from (in
    /// a `static`), before the other parts' `const` setters.
    #[doc(hidden)]
    pub const fn from_attribute(
        prefix: Option<&'static str>,
        message: Option<&'static str>,
        name: Option<&'static str>,
    ) -> Self {
        const fn text(text: Option<&'static str>) -> Option<Cow<'static, str>> {
            match text {
                Some(text) => Some(Cow::Borrowed(text)),
                None => None,
            }
        }
        Rule {
            prefix: text(prefix),
            name: text(name),
            window: None,
            max: None,
            message: text(message),
            algorithm: None,
            burst: None,
            carry: None,
            wait: None,
            on_error: None,
            shadow: None,
            lease: None,
            lease_ttl: None,
            in_flight_ttl: None,
            penalty: None,
            reserves: None,
            calendar: CalendarTerms {
                period: None,
                zone: None,
                anchor: None,
            },
            plans: None,
            beside_rate: false,
            ignores_switch: false,
        }
    }

    /// Makes this the limit of calls in flight that `in_flight = ..` adds beside an attribute's rate: its keys go under
    /// the rate's prefix followed by `in_flight:`, so that the two count apart.
    #[doc(hidden)]
    pub const fn beside_rate(mut self) -> Self {
        self.beside_rate = true;
        self
    }
}
