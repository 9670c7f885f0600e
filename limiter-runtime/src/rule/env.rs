//! The crate-wide defaults the environment sets (`LIMITER_<PART>`), read as the attribute spells them.

use std::str::FromStr;
use std::time::Duration;

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
            let expected =
                "a duration longer than zero, each number with its unit, such as 10s, 500ms, 1m30s, 1d";
            set(
                &mut self.window,
                parse_env("LIMITER_WINDOW", &v, expected, window),
                errors,
            );
        }
        if let Some(v) = env("LIMITER_MAX") {
            // As `max = 0` is a compile error: a limit of zero would reject every call. A whole number past
            // u64 is told so, not that it is no whole number.
            let digits = v.trim().bytes().all(|b| b.is_ascii_digit());
            let too_large = digits && v.trim().parse::<u64>().is_err();
            let expected = match too_large {
                true => "a whole number, at least 1 and at most 18446744073709551615 (this one is too large)",
                false => "a whole number, at least 1",
            };
            let parse = |v: &str| v.parse().ok().filter(|&max: &u64| max >= 1);
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

/// Reads a window (`LIMITER_WINDOW`): a duration longer than zero, as the attribute's `window = "..."`.
pub(crate) fn window(text: &str) -> Option<Duration> {
    duration(text).filter(|window| !window.is_zero())
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

#[cfg(test)]
mod tests {
    use limiter_grammar::samples::{ALGORITHMS, DURATIONS, PENALTIES, PRIORITIES, RESERVES};

    use super::*;
    use crate::{Penalty, Priority};

    /// Checks that the runtime reads the grammar's samples as they say, through the readers of the environment
    /// (`LIMITER_WINDOW`, `LIMITER_RESERVE`, `LIMITER_ALGORITHM`), of an override's and the admin API's shares
    /// (`Reserves`'s `FromStr`, as `LIMITER_RESERVE`), and the public `FromStr` of `Penalty`, `Priority` and
    /// `Algorithm`: the attribute's tests (in `limiter-macros`) hold its readers to the same samples, so the
    /// attribute and the runtime take the same texts, as the same values.
    #[test]
    fn the_runtime_reads_the_grammars_samples() {
        for &(text, expected) in DURATIONS {
            let expected = expected.filter(|&millis| millis > 0);
            let read = window(text).map(|window| window.as_millis() as u64);
            assert_eq!(read, expected, "LIMITER_WINDOW={text:?}");
        }
        for &(text, expected) in PENALTIES {
            let millis = |length: Duration| length.as_millis() as u64;
            let read = text.parse::<Penalty>().ok();
            let read = read.map(|penalty| (millis(penalty.first()), millis(penalty.cap())));
            assert_eq!(read, expected, "{text:?}.parse::<Penalty>()");
        }
        for &(text, expected) in RESERVES {
            let expected = expected.map(|shares| {
                let fold = |reserves: Reserves, &(name, percent)| {
                    reserves.with(Priority::from_grammar(name), percent)
                };
                shares.iter().fold(Reserves::NONE, fold)
            });
            assert_eq!(
                from_str::<Reserves>(text),
                expected,
                "LIMITER_RESERVE={text:?}"
            );
        }
        for &(text, expected) in PRIORITIES {
            let read = text.parse::<Priority>().ok();
            assert_eq!(
                read,
                expected.map(Priority::from_grammar),
                "{text:?}.parse::<Priority>()"
            );
        }
        for &(text, expected) in ALGORITHMS {
            let read = from_str::<Algorithm>(text).map(Algorithm::name);
            let expected = expected.map(limiter_grammar::Algorithm::name);
            assert_eq!(read, expected, "LIMITER_ALGORITHM={text:?}");
        }
    }
}
