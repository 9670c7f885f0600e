//! What `#[rate_limit]` expansions call. Not public API: no stability promise.

use std::fmt;
use std::time::Duration;

use crate::key::StoreKey;
use crate::rule::Wait;
use crate::{Algorithm, Limiter, OnError, RateLimited, Rule};

/// The arguments written on one attribute, as constants: a `Copy` builder, so it can run in a `static`.
#[derive(Debug, Clone, Copy)]
pub struct Attr {
    prefix: Option<&'static str>,
    window: Option<Duration>,
    max: Option<u64>,
    message: Option<&'static str>,
    algorithm: Option<Algorithm>,
    burst: Option<u64>,
    wait: Option<Wait>,
    on_error: Option<OnError>,
    shadow: Option<bool>,
}

impl Attr {
    pub const NEW: Attr = Attr {
        prefix: None,
        window: None,
        max: None,
        message: None,
        algorithm: None,
        burst: None,
        wait: None,
        on_error: None,
        shadow: None,
    };

    pub const fn prefix(mut self, prefix: &'static str) -> Attr {
        self.prefix = Some(prefix);
        self
    }

    pub const fn window_millis(mut self, millis: u64) -> Attr {
        self.window = Some(Duration::from_millis(millis));
        self
    }

    pub const fn max(mut self, max: u64) -> Attr {
        self.max = Some(max);
        self
    }

    pub const fn message(mut self, message: &'static str) -> Attr {
        self.message = Some(message);
        self
    }

    pub const fn algorithm(mut self, algorithm: Algorithm) -> Attr {
        self.algorithm = Some(algorithm);
        self
    }

    pub const fn burst(mut self, burst: u64) -> Attr {
        self.burst = Some(burst);
        self
    }

    pub const fn on_error(mut self, on_error: OnError) -> Attr {
        self.on_error = Some(on_error);
        self
    }

    pub const fn shadow(mut self, shadow: bool) -> Attr {
        self.shadow = Some(shadow);
        self
    }

    /// `mode = wait`, up to one window.
    pub const fn wait(mut self) -> Attr {
        self.wait = Some(Wait::Window);
        self
    }

    /// `mode = wait, max_wait = ...`.
    pub const fn max_wait_millis(mut self, millis: u64) -> Attr {
        self.wait = Some(Wait::Up(Duration::from_millis(millis)));
        self
    }
}

/// One annotated function: its rule as written on the attribute, and its path (the default key).
#[derive(Debug)]
pub struct Site {
    rule: Rule,
    /// The module the function is in: whose defaults apply.
    module: &'static str,
    function: &'static str,
}

impl Site {
    pub const fn new(module: &'static str, function: &'static str, attr: Attr) -> Site {
        let Attr {
            prefix,
            window,
            max,
            message,
            algorithm,
            burst,
            wait,
            on_error,
            shadow,
        } = attr;
        Site {
            rule: Rule::from_parts(
                prefix, window, max, message, algorithm, burst, wait, on_error, shadow,
            ),
            module,
            function,
        }
    }
}

/// One call of an annotated function, with its key already formatted (so nothing borrowed from the
/// arguments, and nothing `!Send`, lives across the `.await`).
#[derive(Debug)]
#[must_use]
pub struct Call {
    asked: Asked,
    key: StoreKey,
    site: &'static Site,
    cost: u64,
}

/// The limiter a call asks: the global one by reference, a scoped one by a clone of its handle.
#[derive(Debug)]
enum Asked {
    Global(&'static Limiter),
    Scoped(Limiter),
}

impl Call {
    /// The call to make, or `None` when limiting is switched off: then nothing is formatted, counted or asked.
    pub fn keyed(site: &'static Site, key: fmt::Arguments<'_>) -> Option<Call> {
        let call = |asked: Asked, limiter: &Limiter| Call {
            key: limiter.store_key(&site.rule, site.module, &key),
            asked,
            site,
            cost: 1,
        };
        Limiter::scoped(|limiter| {
            limiter
                .is_enabled()
                .then(|| call(Asked::Scoped(limiter.clone()), limiter))
        })
        .unwrap_or_else(|| {
            let limiter = Limiter::global();
            limiter
                .is_enabled()
                .then(|| call(Asked::Global(limiter), limiter))
        })
    }

    pub fn unkeyed(site: &'static Site) -> Option<Call> {
        Call::keyed(site, format_args!("{}", site.function))
    }

    pub fn cost(mut self, cost: u64) -> Call {
        self.cost = cost;
        self
    }

    pub async fn check(self) -> Result<(), RateLimited> {
        let limiter = match &self.asked {
            Asked::Global(limiter) => limiter,
            Asked::Scoped(limiter) => limiter,
        };
        limiter
            .enforce_key(&self.site.rule, self.site.module, self.key, self.cost)
            .await
            .map(drop)
    }
}

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

/// The return types a rejected call can be turned into.
#[diagnostic::on_unimplemented(
    message = "`#[rate_limit]` cannot return a rejection as `{Self}`",
    label = "the function must return `Result<T, E>` where `E: From<RateLimited>`",
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
