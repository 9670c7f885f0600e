//! What `#[rate_limit]` expansions call. Not public API: no stability promise.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

use futures_util::future::Either;

use crate::budget::now;
pub use crate::budget::Now;
use crate::call::{Ask, Call, RuleRef};
use crate::key::StoreKey;
use crate::limiter::current;
use crate::limiter::HeldCall;
use crate::pipeline::{Enforcing, Pipeline};
use crate::{Limiter, Permit, RateLimited, Rule, Zone};

/// One annotated function: its limits as written on its attributes (top first), and its path (the default
/// key).
#[derive(Debug)]
pub struct Site<const N: usize> {
    rules: [Rule; N],
    /// The module the function is in: whose defaults apply.
    module: &'static str,
    function: &'static str,
    /// The rules as resolved by the first limiter to decide a call here (most programs have one), that
    /// limiter's id and the generation of its defaults: its resolution is reused for as long as it decides and
    /// its limits file is not reloaded.
    resolved: OnceLock<(u64, u64, [Rule; N])>,
}

pub use crate::registry::{inventory, Registered, RegisteredLimit};

/// One limit of one call, as the expansion hands it over.
#[derive(Clone, Copy)]
pub struct KeyArgs<'a> {
    /// Whether the call skips this limit (`skip_if`).
    pub skip: bool,
    /// The key: the arguments, borrowed, written out only if needed.
    pub key: fmt::Arguments<'a>,
    /// The call's cost on this limit.
    pub cost: u64,
    /// A calendar limit's zone for this call (`tz = <expr>`).
    pub zone: Option<&'a Zone>,
    /// A calendar limit's billing day for this call (`anchor = <expr>`).
    pub anchor: Option<u8>,
    /// The call's priority (`priority = <expr>`; `Normal` unless given).
    pub priority: crate::Priority,
    /// The plan the call named (`plan = <expr>`), if it named one.
    pub plan: Option<&'a str>,
}

/// [`Site::check`]'s future: ready at once unless Redis is asked, or a slot waited for.
pub type Checked = Enforcing<()>;

/// [`Site::charge`]'s future.
pub type Charging<const N: usize> = Enforcing<Admission<N>>;

/// What a call of a function with `count = failures | successes`, or with a limit in flight, was charged,
/// held while its body runs.
pub struct Admission<const N: usize>(Option<Box<HeldCall>>);

/// What an admitted call keeps of its admission: nothing (`count = all`), or what it charged.
trait Kept<const N: usize>: Send + 'static {
    /// Returns a call decided without the limiter (switched off, or every limit skipped): nothing was charged.
    fn nothing() -> Self;
    /// Returns an admitted call, `held` what it charged.
    fn kept(held: impl FnOnce() -> HeldCall) -> Self;
}

impl<const N: usize> Kept<N> for () {
    fn nothing() {}
    fn kept(_: impl FnOnce() -> HeldCall) {}
}

impl<const N: usize> Kept<N> for Admission<N> {
    fn nothing() -> Self {
        Admission(None)
    }
    fn kept(held: impl FnOnce() -> HeldCall) -> Self {
        Admission(Some(Box::new(held())))
    }
}

/// Which outcomes of the body a limit counts (`count = ...`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    All,
    Failures,
    Successes,
}

impl<const N: usize> Site<N> {
    pub const fn new(module: &'static str, function: &'static str, rules: [Rule; N]) -> Self {
        Site {
            rules,
            module,
            function,
            resolved: OnceLock::new(),
        }
    }

    /// Returns the function's path: the key of a limit written without one.
    pub fn path(&self) -> &'static str {
        self.function
    }

    /// Checks one call of the function, its limits' keys and costs from its arguments: decided at once, with the
    /// limiter borrowed, whatever this process can decide; what is left (a Redis round trip, a slot to wait
    /// for) is the returned future's, which owns what it needs. The expansion awaits it at once, so deciding
    /// before the first poll changes nothing for the caller. Switched off, nothing is written out, counted or
    /// asked.
    pub fn check(&'static self, keys: [KeyArgs<'_>; N]) -> Checked {
        self.enforce(keys)
    }

    /// Does what [`check`](Site::check) does, for a function whose limits count by outcome: the admission is held, to
    /// be [`settle`](Admission::settle)d once the body has returned.
    pub fn charge(&'static self, keys: [KeyArgs<'_>; N]) -> Charging<N> {
        self.enforce(keys)
    }

    /// Returns the call's verdict, and, admitted, what `T` keeps of it.
    fn enforce<T: Kept<N>>(&'static self, keys: [KeyArgs<'_>; N]) -> Enforcing<T> {
        if keys.iter().all(|args| args.skip) {
            return Either::Left(now(Ok(T::nothing())));
        }
        current::with_current(|limiter| {
            if limiter.is_enabled() {
                self.decide_on(limiter, keys)
            } else {
                Either::Left(now(Ok(T::nothing())))
            }
        })
    }

    /// Returns the call's verdict from `limiter`, switched on. Never inlined, so that the closure above stays small
    /// enough to be inlined itself: a switched-off call's verdict is then written once, where the caller
    /// reads it, instead of being returned through the closure and copied.
    #[inline(never)]
    fn decide_on<T: Kept<N>>(
        &'static self,
        limiter: &Limiter,
        keys: [KeyArgs<'_>; N],
    ) -> Enforcing<T> {
        let rules = self.rules_for(limiter);
        // The call's priority, for its place in a line: each limit is given the same.
        let priority = keys[0].priority;
        let asks = keys.into_iter().enumerate().map(|(i, args)| {
            let KeyArgs {
                skip,
                key,
                cost,
                zone,
                anchor,
                priority,
                plan,
            } = args;
            let rule = match &rules {
                Cow::Borrowed(rules) => RuleRef::Borrowed(&rules[i]),
                Cow::Owned(rules) => RuleRef::Shared(Arc::new(rules[i].clone())),
            };
            // A skipped limit's key is never written out: its prefix alone names it.
            let key = match skip {
                true => StoreKey::joined(rule.prefix_value(), ""),
                false => StoreKey::new(rule.prefix_value(), key),
            };
            Ask {
                rule,
                key,
                cost,
                skip,
                zone: zone.cloned(),
                anchor,
                priority,
                plan: None,
            }
            .on_plan(plan)
        });
        // The pipeline's one flow of an enforced call, with what the function keeps of it.
        let call: Call<'static> = limiter.pipeline.call(asks);
        Pipeline::enforce_owned(limiter, call, priority, |limiter, call, decided| {
            T::kept(|| HeldCall {
                limiter: limiter.clone(),
                call,
                decided,
            })
        })
    }

    /// Returns this site's rules as `limiter` resolves them: kept for the first limiter, resolved again for any other,
    /// and once its limits file was reloaded.
    fn rules_for(&'static self, limiter: &Limiter) -> Cow<'static, [Rule; N]> {
        let pipeline = &limiter.pipeline;
        let resolve = || {
            self.rules
                .each_ref()
                .map(|rule| pipeline.defaults.resolve(rule, self.module))
        };
        let generation = pipeline.defaults.generation();
        let (id, resolved_at, rules) = self
            .resolved
            .get_or_init(|| (pipeline.id, generation, resolve()));
        if (*id, *resolved_at) == (pipeline.id, generation) {
            Cow::Borrowed(rules)
        } else {
            Cow::Owned(resolve())
        }
    }
}

impl<const N: usize> Admission<N> {
    /// Settles the call once the body has returned: gives back the charge of each limit that does not count the
    /// outcome, and every permit in flight.
    pub async fn settle(mut self, counted: [bool; N]) {
        if let Some(held) = self.0.take() {
            let mut units = held.costs();
            let permits = held.permits();
            for ((units, counted), permit) in units.iter_mut().zip(counted).zip(permits) {
                if permit == 1 {
                    *units = 1;
                } else if counted {
                    *units = 0;
                }
            }
            held.give_back(&units).await;
        }
    }

    /// Does what [`settle`](Admission::settle) does, for a function written to return an HTTP response: gives back now
    /// what the outcome does not count, and returns the permits in flight (none when nothing was charged), for the
    /// response's body to hold until it ends.
    pub async fn settle_keeping_permits(mut self, counted: [bool; N]) -> Option<Permit> {
        let held = self.0.take()?;
        let mut units = held.costs();
        for ((units, counted), permit) in units.iter_mut().zip(counted).zip(held.permits()) {
            if permit == 1 || counted {
                *units = 0;
            }
        }
        if units.iter().any(|&units| units > 0) {
            held.give_back(&units).await;
        }
        let HeldCall {
            limiter,
            call,
            decided,
        } = *held;
        Some(Permit::new(limiter, call, decided))
    }
}

/// What a function with a limit in flight returns when its written return type is an HTTP response (a path
/// ending in `Response`, or a `Result` of one): its body holds the call's permits in flight until it ends,
/// not the function. An axum `Response` (feature `axum`) and a `Result` of one do.
#[diagnostic::on_unimplemented(
    message = "`#[rate_limit(in_flight = ..)]` cannot hold its permit until the body of `{Self}` ends",
    label = "written as an HTTP response: the permit is held until its body has been sent",
    note = "an axum `Response` (or `Result<Response, E>`) holds it with the `axum` feature of \
            `limiter-runtime`; a `tonic::Response` gives it back when the function returns (feature `tonic`)",
    note = "a type named `Response` that is not an HTTP response: return it through an alias named otherwise, \
            and the permit is given back when the function returns"
)]
pub trait Streamed {
    /// Hands `permit` to the body, which gives it back once it has ended or been dropped; or returns it, to be
    /// given back now, when there is no body to hold it.
    fn hold(&mut self, permit: Permit) -> Option<Permit>;
}

impl<R: Streamed, E> Streamed for Result<R, E> {
    fn hold(&mut self, permit: Permit) -> Option<Permit> {
        match self {
            Ok(response) => response.hold(permit),
            Err(_) => Some(permit),
        }
    }
}

/// Hands `permit` to `response`'s body, to hold until it ends: see [`Streamed`]. Returns it when there is no
/// body to hold it.
#[inline]
pub fn streamed<R: Streamed>(response: &mut R, permit: Option<Permit>) -> Option<Permit> {
    permit.and_then(|permit| response.hold(permit))
}

/// Gives back a permit no body holds, and returns once it is.
pub async fn release(permit: Option<Permit>) {
    if let Some(permit) = permit {
        permit.settle(crate::AsCharged).await;
    }
}

impl<const N: usize> Drop for Admission<N> {
    /// Handles a body that did not return (its future was dropped, or it panicked): its permits in flight are given
    /// back; what its rates charged stays.
    fn drop(&mut self) {
        if let Some(held) = self.0.take() {
            let permits = held.permits();
            held.give_back_now(permits);
        }
    }
}

/// Returns whether the outcome `result` counts for a limit with `count`.
#[inline]
pub fn counts<R: Outcome>(result: &R, count: Count) -> bool {
    match count {
        Count::All => true,
        Count::Failures => !result.succeeded(),
        Count::Successes => result.succeeded(),
    }
}

/// The return types whose outcome `count = failures | successes` reads: a `Result`.
#[diagnostic::on_unimplemented(
    message = "`count = failures` or `count = successes` needs a function that returns `Result<T, E>`, \
               not `{Self}`",
    label = "an outcome counted: `Ok` is a success, `Err` a failure"
)]
pub trait Outcome {
    /// Returns whether the outcome is a success (`Ok`).
    fn succeeded(&self) -> bool;
}

impl<T, E> Outcome for Result<T, E> {
    #[inline]
    fn succeeded(&self) -> bool {
        self.is_ok()
    }
}

/// Returns the body's future, its output fixed to the function's return type (so that `?` in it converts to it).
#[inline]
pub fn body<R, F: std::future::Future<Output = R>>(body: F) -> F {
    body
}

/// One part of a key list (`key = (tenant, user)`), written with `%`, `:` and `|` escaped (`%25`, `%3A`, `%7C`), so that
/// the parts joined with `:` tell where each ends: distinct lists are always distinct keys.
pub struct Part<'a, T: ?Sized>(pub &'a T);

impl<T: fmt::Display + ?Sized> fmt::Display for Part<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::key::escaped(f, format_args!("{}", self.0))
    }
}

/// Returns the store key `key` is written to under `prefix`, bounded as every store key is (for the fuzz targets).
pub fn store_key(prefix: &str, key: fmt::Arguments<'_>) -> String {
    StoreKey::new(prefix, key).into_string()
}

/// Returns the source of `algorithm`'s script of one limit as Redis runs it, assembled from `scripts/` (for the
/// benchmarks).
pub fn one_limit_script(algorithm: crate::Algorithm) -> &'static str {
    crate::backend::one_limit_source(algorithm)
}

/// The zone of one call (`tz = <expr>`): a [`Zone`], or a reference to one.
#[diagnostic::on_unimplemented(
    message = "`tz` must be a `limiter_runtime::Zone`, not `{Self}`",
    label = "a time zone: `Zone::get(name)?`, once, where the name is read (a string is checked there)"
)]
pub trait CallZone {
    fn zone(&self) -> &Zone;
}

impl CallZone for Zone {
    #[inline]
    fn zone(&self) -> &Zone {
        self
    }
}

impl<T: CallZone + ?Sized> CallZone for &T {
    #[inline]
    fn zone(&self) -> &Zone {
        (**self).zone()
    }
}

/// The plan of one call (`plan = <expr>`): a plan's name, or an `Option` of one (`None`: the policy's own
/// values).
#[diagnostic::on_unimplemented(
    message = "`plan` must name a plan: a `str`, a `String` or an `Option` of one, not `{Self}`",
    label = "the name of one of the policy's plans, e.g. `tenant.plan` or `tenant.plan.as_deref()`"
)]
pub trait CallPlan {
    fn plan(&self) -> Option<&str>;
}

impl CallPlan for str {
    #[inline]
    fn plan(&self) -> Option<&str> {
        Some(self)
    }
}

impl CallPlan for String {
    #[inline]
    fn plan(&self) -> Option<&str> {
        Some(self)
    }
}

impl CallPlan for Cow<'_, str> {
    #[inline]
    fn plan(&self) -> Option<&str> {
        Some(self)
    }
}

impl<T: CallPlan + ?Sized> CallPlan for &T {
    #[inline]
    fn plan(&self) -> Option<&str> {
        (**self).plan()
    }
}

impl<T: CallPlan> CallPlan for Option<T> {
    #[inline]
    fn plan(&self) -> Option<&str> {
        self.as_ref().and_then(CallPlan::plan)
    }
}

/// The billing day of one call (`anchor = <expr>`): an integer, 1 to 31; 0 (or less) reads as 1, and a day
/// above 31 as the month's last.
#[diagnostic::on_unimplemented(
    message = "`anchor` must be an integer day of the month, not `{Self}`",
    label = "a billing day, 1 to 31: `u8`, `u16`, `u32`, `u64`, `usize`, `i32` or `i64`"
)]
pub trait BillingDay {
    fn day(&self) -> u8;
}

macro_rules! billing_day {
    ($($t:ty),*) => {$(
        impl BillingDay for $t {
            #[inline]
            #[allow(clippy::unnecessary_cast, unused_comparisons)]
            fn day(&self) -> u8 {
                (*self).clamp(1, 31) as u8
            }
        }
    )*};
}
billing_day!(u8, u16, u32, u64, usize, i32, i64);

/// The types `cost = <expr>` accepts: unsigned integers.
#[diagnostic::on_unimplemented(
    message = "`cost` must be an unsigned integer, not `{Self}`",
    label = "the weight of one call: `u8`, `u16`, `u32`, `u64` or `usize`"
)]
pub trait Cost {
    fn units(&self) -> u64;
}

macro_rules! cost {
    ($($t:ty),*) => {$(
        impl Cost for $t {
            #[inline]
            fn units(&self) -> u64 {
                u64::try_from(*self).unwrap_or(u64::MAX)
            }
        }
    )*};
}
cost!(u8, u16, u32, u64, usize);

/// The return types a rejected call can be turned into: a `Result` whose error converts from it, and (feature
/// `axum`) an axum `Response`.
#[diagnostic::on_unimplemented(
    message = "`#[rate_limit]` cannot return a rejection as `{Self}`",
    label = "the function must return `Result<T, E>` where `E: From<RateLimited>` (or, with the `axum` \
             feature, an axum `Response`)",
    note = "when the limit is reached the body does not run and the function returns `Err(RateLimited.into())`"
)]
pub trait Rejection {
    fn rejected(error: RateLimited) -> Self;
}

impl<T, E: From<RateLimited>> Rejection for Result<T, E> {
    #[inline]
    fn rejected(error: RateLimited) -> Self {
        Err(E::from(error))
    }
}

#[inline]
pub fn rejected<R: Rejection>(error: RateLimited) -> R {
    R::rejected(error)
}
