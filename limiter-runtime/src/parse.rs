//! Reading settings from text: the error of a name of a kind (an algorithm, a failure policy), and a duration
//! (read by `limiter_grammar`, as the attribute reads it).

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

/// Parses a duration as the attribute writes one, with the grammar both read (`limiter_grammar::duration`):
/// whole numbers, each followed by a unit (`d`, `h`, `m`, `s`, `ms`), the largest unit first and each at most
/// once (`"500ms"`, `"10s"`, `"1m30s"`, `"1d12h"`); a number without its unit (`"10"`) is refused.
pub(crate) fn duration(text: &str) -> Option<Duration> {
    limiter_grammar::duration::parse(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_the_attribute() {
        assert_eq!(duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(duration("1d"), Some(Duration::from_secs(86_400)));
        assert_eq!(duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(duration("1d12h"), Some(Duration::from_secs(129_600)));
        assert_eq!(duration("1s500ms"), Some(Duration::from_millis(1500)));
        assert_eq!(duration("10"), None, "every number has its unit");
        assert_eq!(duration("10x"), None);
        assert_eq!(duration("s"), None);
        assert_eq!(duration("1h30"), None, "every number has its unit");
        assert_eq!(duration("30s1m"), None, "the largest unit first");
        assert_eq!(duration("1m1m"), None, "each unit once");
        assert_eq!(duration("213503982335d"), None, "over u64::MAX ms");
    }
}
