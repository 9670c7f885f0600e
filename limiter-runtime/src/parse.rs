//! Reading settings from text: a name of a kind (an algorithm, a failure policy), and a duration.

use std::time::Duration;

/// A name that is not one of its kind's: what `"gcra".parse::<Algorithm>()` returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} `{name}`: expected {expected}")]
pub struct ParseError {
    kind: &'static str,
    name: String,
    expected: &'static str,
}

impl ParseError {
    pub(crate) fn new(kind: &'static str, name: &str, expected: &'static str) -> Self {
        ParseError {
            kind,
            name: name.to_owned(),
            expected,
        }
    }
}

/// Parses a duration as the attribute writes one: whole numbers, each followed by a unit (`d`, `h`, `m`, `s`, `ms`),
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
