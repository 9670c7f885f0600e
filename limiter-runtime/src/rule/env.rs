//! The crate-wide defaults the environment sets (`LIMITER_<PART>`), read as the attribute spells them.

use std::str::FromStr;
use std::time::Duration;

use super::Rule;
use crate::{Algorithm, Error, OnError};

impl Rule {
    /// `self`, with what the environment sets over it: `LIMITER_PREFIX`, `LIMITER_WINDOW`, `LIMITER_MAX`,
    /// `LIMITER_MESSAGE`, `LIMITER_ALGORITHM` and `LIMITER_ON_ERROR`. A variable that cannot be read changes
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

/// A duration as the attribute writes one: whole numbers, each followed by a unit (`d`, `h`, `m`, `s`, `ms`),
/// the largest unit first and each at most once (`"500ms"`, `"10s"`, `"1m30s"`, `"1d12h"`); or whole seconds
/// alone (`"10"`). `limiter-macros` parses the same grammar for the attribute (its `duration.rs`), and a test
/// there holds the two together.
pub(crate) fn duration(text: &str) -> Option<Duration> {
    const UNITS: [(&str, u64); 5] = [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ];
    if !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()) {
        let seconds: u64 = text.parse().ok()?;
        return seconds.checked_mul(1_000).map(Duration::from_millis);
    }
    let (mut rest, mut millis, mut last) = (text, 0_u64, None);
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let (number, after) = rest.split_at(digits);
        let letters = after.bytes().take_while(u8::is_ascii_alphabetic).count();
        let (unit, after) = after.split_at(letters);
        let number: u64 = number.parse().ok()?;
        let index = UNITS.iter().position(|(name, _)| *name == unit)?;
        if last.is_some_and(|last| index <= last) {
            return None;
        }
        millis = millis.checked_add(number.checked_mul(UNITS[index].1)?)?;
        (rest, last) = (after, Some(index));
    }
    Some(Duration::from_millis(millis))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_the_attribute() {
        assert_eq!(duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(duration("10"), Some(Duration::from_secs(10)));
        assert_eq!(duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(duration("1d"), Some(Duration::from_secs(86_400)));
        assert_eq!(duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(duration("1d12h"), Some(Duration::from_secs(129_600)));
        assert_eq!(duration("1s500ms"), Some(Duration::from_millis(1500)));
        assert_eq!(duration("10x"), None);
        assert_eq!(duration("s"), None);
        assert_eq!(duration("1h30"), None, "every number has its unit");
        assert_eq!(duration("30s1m"), None, "the largest unit first");
        assert_eq!(duration("1m1m"), None, "each unit once");
        assert_eq!(duration("213503982334602d"), None, "over u64::MAX ms");
    }
}
