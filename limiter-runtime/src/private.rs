//! What `#[rate_limit]` expansions call. Not public API: no stability promise.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::limiter::Decided;
use crate::rule::Wait;
use crate::{Algorithm, Decision, Limiter, OnError, RateLimited, Rule};

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

    /// One call of the function, for `key` (its arguments, borrowed), weighing `cost`: decided at once, with the
    /// limiter borrowed (one look-up of the current limiter), whatever this process can decide (the in-memory
    /// store, a cached denial, the switch, an open breaker); what is left (a Redis round trip, a slot to wait
    /// for) is the returned future's, which owns what it needs. The expansion awaits it at once, so deciding
    /// before the first poll changes nothing for the caller. Switched off, nothing is formatted, counted or
    /// asked.
    pub fn check(&'static self, key: fmt::Arguments<'_>, cost: u64) -> Checked {
        Limiter::with_current(|limiter| {
            if !limiter.is_enabled() {
                return Checked(Step::Now(Some(Ok(()))));
            }
            Checked(
                match limiter.enforce_now(&self.rule, self.module, key, cost) {
                    Decided::Now(result) => Step::Now(result.map(|result| result.map(drop))),
                    Decided::Later(rest) => Step::Later(rest),
                },
            )
        })
    }

    /// [`check`](Site::check) for a function without a key: its path is the key.
    pub fn check_unkeyed(&'static self, cost: u64) -> Checked {
        self.check(format_args!("{}", self.function), cost)
    }
}

/// [`Site::check`]'s future: ready at once unless Redis is asked, or a slot waited for.
#[must_use = "a call is only let through once this is awaited"]
pub struct Checked(Step);

enum Step {
    /// Decided (taken when polled).
    Now(Option<Result<(), RateLimited>>),
    Later(Pin<Box<dyn Future<Output = Result<Decision, RateLimited>> + Send>>),
}

impl Future for Checked {
    type Output = Result<(), RateLimited>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.0 {
            Step::Now(result) => {
                Poll::Ready(result.take().expect("`Checked` polled after it completed"))
            }
            Step::Later(rest) => rest.as_mut().poll(cx).map(|result| result.map(drop)),
        }
    }
}

impl fmt::Debug for Checked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Step::Now(_) => "Checked(decided)",
            Step::Later(_) => "Checked(pending)",
        })
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
