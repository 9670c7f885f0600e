//! The crate-wide defaults the environment sets (`LIMITER_<PART>`), read as the attribute spells them.

use std::str::FromStr;
use std::time::Duration;

use super::Rule;
use crate::{Algorithm, Error, OnError};

impl Rule {
    /// `self`, with what the environment sets over it: `LIMITER_PREFIX`, `LIMITER_WINDOW`, `LIMITER_MAX`,
    /// `LIMITER_MESSAGE`, `LIMITER_ALGORITHM` and `LIMITER_ON_ERROR`.
    pub(crate) fn with_env(mut self) -> Result<Rule, Error> {
        if let Some(prefix) = env("LIMITER_PREFIX") {
            self.prefix = Some(prefix.into());
        }
        if let Some(v) = env("LIMITER_WINDOW") {
            let expected = "a duration longer than zero, such as 10s, 500ms, 1m";
            let parse = |v: &str| duration(v).filter(|d| !d.is_zero());
            self.window = Some(parse_env("LIMITER_WINDOW", &v, expected, parse)?);
        }
        if let Some(v) = env("LIMITER_MAX") {
            // As `max = 0` is a compile error: a limit of zero would reject every call.
            let parse = |v: &str| v.parse().ok().filter(|&max: &u64| max >= 1);
            let expected = "a whole number, at least 1";
            self.max = Some(parse_env("LIMITER_MAX", &v, expected, parse)?);
        }
        if let Some(message) = env("LIMITER_MESSAGE") {
            self.message = Some(message.into());
        }
        if let Some(v) = env("LIMITER_ALGORITHM") {
            let expected = Algorithm::expected();
            self.algorithm = Some(parse_env("LIMITER_ALGORITHM", &v, expected, from_str)?);
        }
        if let Some(v) = env("LIMITER_ON_ERROR") {
            let expected = "open, closed or local";
            self.on_error = Some(parse_env(
                "LIMITER_ON_ERROR",
                &v,
                expected,
                from_str::<OnError>,
            )?);
        }
        Ok(self)
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

/// `"500ms"`, `"10s"`, `"1m"`, `"1h"`, or whole seconds (`"10"`).
pub(crate) fn duration(text: &str) -> Option<Duration> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let millis = match unit {
        "ms" => number,
        "" | "s" => number.checked_mul(1_000)?,
        "m" => number.checked_mul(60_000)?,
        "h" => number.checked_mul(3_600_000)?,
        _ => return None,
    };
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
        assert_eq!(duration("10x"), None);
        assert_eq!(duration("s"), None);
    }
}
