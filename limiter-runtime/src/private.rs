//! What `#[rate_limit]` expansions call. Not public API: no stability promise.

use std::fmt;

use crate::{Algorithm, Limiter, RateLimited, Rule};

/// One annotated function: its rule as written on the attribute, and its path (the default key).
#[derive(Debug)]
pub struct Site {
    rule: Rule,
    function: &'static str,
}

impl Site {
    #[allow(clippy::too_many_arguments)]
    pub const fn new(
        function: &'static str,
        prefix: Option<&'static str>,
        window_millis: Option<u64>,
        max: Option<u64>,
        message: Option<&'static str>,
        algorithm: Option<Algorithm>,
    ) -> Site {
        let window = match window_millis {
            Some(millis) => Some(std::time::Duration::from_millis(millis)),
            None => None,
        };
        Site {
            rule: Rule::from_parts(prefix, window, max, message, algorithm, None, None),
            function,
        }
    }
}

/// One call of an annotated function, with its key already formatted (so nothing borrowed from the
/// arguments, and nothing `!Send`, lives across the `.await`).
#[derive(Debug)]
#[must_use]
pub struct Call {
    limiter: Limiter,
    site: &'static Site,
    key: String,
}

impl Call {
    pub fn keyed(site: &'static Site, key: fmt::Arguments<'_>) -> Call {
        let limiter = Limiter::current();
        let key = limiter.store_key(&site.rule, &key);
        Call { limiter, site, key }
    }

    pub fn unkeyed(site: &'static Site) -> Call {
        Call::keyed(site, format_args!("{}", site.function))
    }

    pub async fn check(self) -> Result<(), RateLimited> {
        self.limiter
            .enforce_key(&self.site.rule, self.key, 1)
            .await
            .map(drop)
    }
}

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
