//! The crate-wide defaults the environment sets (`LIMITER_<PART>`), read as the attribute spells them.

use std::str::FromStr;

use super::Rule;
use crate::parse::duration;
use crate::priority::Reserves;
use crate::{Algorithm, Error, OnError};

impl Rule {
    /// Returns `self`, with what the environment sets over it: `LIMITER_PREFIX`, `LIMITER_WINDOW`, `LIMITER_MAX`,
    /// `LIMITER_MESSAGE`, `LIMITER_RESERVE`, `LIMITER_ALGORITHM` and `LIMITER_ON_ERROR`. A variable that cannot be read changes
    /// nothing, and its error (naming it) goes to `errors`.
    pub(crate) fn with_env(mut self, errors: &mut Vec<Error>) -> Rule {
        if let Some(prefix) = env("LIMITER_PREFIX") {
            self.prefix = Some(prefix.into());
        }
        if let Some(v) = env("LIMITER_WINDOW") {
            let expected = "a duration longer than zero, such as 10s, 500ms, 1m30s, 1d";
            let parse = |v: &str| duration(v).filter(|d| !d.is_zero());
            set(
                &mut self.window,
                parse_env("LIMITER_WINDOW", &v, expected, parse),
                errors,
            );
        }
        if let Some(v) = env("LIMITER_MAX") {
            // As `max = 0` is a compile error: a limit of zero would reject every call.
            let parse = |v: &str| v.parse().ok().filter(|&max: &u64| max >= 1);
            let expected = "a whole number, at least 1";
            set(
                &mut self.max,
                parse_env("LIMITER_MAX", &v, expected, parse),
                errors,
            );
        }
        if let Some(message) = env("LIMITER_MESSAGE") {
            self.message = Some(message.into());
        }
        if let Some(v) = env("LIMITER_RESERVE") {
            let expected = "shares kept for the higher priorities, such as `critical 20%, high 30%`, or `none`";
            let reserves = parse_env("LIMITER_RESERVE", &v, expected, from_str::<Reserves>);
            set(&mut self.reserves, reserves, errors);
        }
        if let Some(v) = env("LIMITER_ALGORITHM") {
            let expected = Algorithm::expected();
            let algorithm = parse_env("LIMITER_ALGORITHM", &v, expected, from_str);
            set(&mut self.algorithm, algorithm, errors);
        }
        if let Some(v) = env("LIMITER_ON_ERROR") {
            let expected = "open, closed or local";
            let on_error = parse_env("LIMITER_ON_ERROR", &v, expected, from_str::<OnError>);
            set(&mut self.on_error, on_error, errors);
        }
        self
    }
}

/// Sets `setting` to what a variable read, or leaves it and keeps the error.
pub(crate) fn set<T>(setting: &mut Option<T>, read: Result<T, Error>, errors: &mut Vec<Error>) {
    match read {
        Ok(value) => *setting = Some(value),
        Err(error) => errors.push(error),
    }
}

/// Reads `LIMITER_<NAME>`: `None` when unset or empty.
pub(crate) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Parses an environment value, with an error naming the variable.
pub(crate) fn parse_env<T>(
    name: &'static str,
    value: &str,
    expected: &'static str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T, Error> {
    parse(value.trim()).ok_or_else(|| Error::InvalidEnv {
        name,
        value: value.to_owned(),
        expected,
    })
}

fn from_str<T: FromStr>(text: &str) -> Option<T> {
    text.parse().ok()
}
