//! What `#[rate_limit]` expansions call. Not public API: no stability promise.

use std::borrow::Cow;
use std::fmt;
use std::sync::OnceLock;

use futures_util::future::{self, BoxFuture, Either, Ready};

use crate::decide::{waited, Request};
use crate::key::StoreKey;
use crate::{Limiter, RateLimited, Rule};

/// One annotated function: its rule as written on the attribute, and its path (the default key).
#[derive(Debug)]
pub struct Site {
    rule: Rule,
    /// The module the function is in: whose defaults apply.
    module: &'static str,
    function: &'static str,
    /// The rule as resolved by the first limiter to decide a call here (most programs have one), and that
    /// limiter's id: its resolution is reused for as long as it decides.
    resolved: OnceLock<(u64, Rule)>,
}

/// [`Site::check`]'s future: ready at once unless Redis is asked, or a slot waited for.
pub type Checked =
    Either<Ready<Result<(), RateLimited>>, BoxFuture<'static, Result<(), RateLimited>>>;

impl Site {
    pub const fn new(module: &'static str, function: &'static str, rule: Rule) -> Site {
        Site {
            rule,
            module,
            function,
            resolved: OnceLock::new(),
        }
    }

    /// One call of the function, for `key` (its arguments, borrowed), weighing `cost`: decided at once, with the
    /// limiter borrowed, whatever this process can decide; what is left (a Redis round trip, a slot to wait
    /// for) is the returned future's, which owns what it needs. The expansion awaits it at once, so deciding
    /// before the first poll changes nothing for the caller. Switched off, nothing is formatted, counted or
    /// asked.
    pub fn check(&'static self, key: fmt::Arguments<'_>, cost: u64) -> Checked {
        Limiter::with_current(|limiter| {
            if !limiter.is_enabled() {
                return Either::Left(future::ready(Ok(())));
            }
            let rule = self.rule_for(limiter);
            let key = StoreKey::new(rule.prefix_value(), key);
            let request = Request {
                rule: &rule,
                key: key.parts(),
                cost,
            };
            match limiter.decide(request) {
                Ok(decision) => waited(limiter.verdict(&rule, key.parts(), decision), drop),
                Err(pending) => {
                    let limiter = limiter.clone();
                    Either::Right(Box::pin(async move {
                        limiter.enforce_pending(pending, &rule).await.map(drop)
                    }))
                }
            }
        })
    }

    /// [`check`](Site::check) for a function without a key: its path is the key.
    pub fn check_unkeyed(&'static self, cost: u64) -> Checked {
        self.check(format_args!("{}", self.function), cost)
    }

    /// This site's rule as `limiter` resolves it: kept for the first limiter, resolved again for any other.
    fn rule_for(&'static self, limiter: &Limiter) -> Cow<'static, Rule> {
        let resolve = || limiter.inner.defaults.resolve(&self.rule, self.module);
        let (id, rule) = self.resolved.get_or_init(|| (limiter.inner.id, resolve()));
        if *id == limiter.inner.id {
            Cow::Borrowed(rule)
        } else {
            Cow::Owned(resolve())
        }
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
