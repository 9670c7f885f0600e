//! The text of a duration, `window = "1h30m"`: whole numbers, each followed by a unit (`d`, `h`, `m`, `s`,
//! `ms`), the largest unit first and each at most once. One spelling per duration: `"90m"` and `"1h30m"` are
//! both fine, but `"30m1h"` and `"1m1m"` are refused as the slips they most likely are.
//!
//! The runtime reads durations from the environment (`LIMITER_WINDOW`) with a parser of its own, which this
//! crate cannot share (the runtime depends on it); the test below holds the two grammars together.

/// The units, largest first, and their length in milliseconds.
const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Why the text of a duration is refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not whole numbers, each followed by a unit.
    Malformed,
    /// A whole number alone, without a unit: seconds to the environment, but the attribute writes whole seconds
    /// as an integer.
    NoUnit(u64),
    /// A unit written after a smaller one (`"30s1m"`), or after itself (`"1m1m"`).
    OutOfOrder {
        unit: &'static str,
        after: &'static str,
    },
    /// Longer than `u64::MAX` milliseconds.
    TooLong,
}

/// Parses a duration's text into its length in milliseconds.
pub(crate) fn millis(text: &str) -> Result<u64, Refused> {
    if text.is_empty() {
        return Err(Refused::Malformed);
    }
    let (mut rest, mut total, mut last) = (text, 0_u64, None);
    while !rest.is_empty() {
        let (number, unit, after) = part(rest);
        rest = after;
        if number.is_empty() {
            return Err(Refused::Malformed);
        }
        // Digits alone: the only error is a number over `u64::MAX`.
        let number = number.parse::<u64>().map_err(|_| Refused::TooLong);
        if unit.is_empty() {
            return Err(match (last, rest.is_empty()) {
                (None, true) => Refused::NoUnit(number?),
                _ => Refused::Malformed,
            });
        }
        let index = UNITS
            .iter()
            .position(|(name, _)| *name == unit)
            .ok_or(Refused::Malformed)?;
        if let Some(last) = last.filter(|&last| index <= last) {
            return Err(Refused::OutOfOrder {
                unit: UNITS[index].0,
                after: UNITS[last].0,
            });
        }
        total = number?
            .checked_mul(UNITS[index].1)
            .and_then(|part| total.checked_add(part))
            .ok_or(Refused::TooLong)?;
        last = Some(index);
    }
    Ok(total)
}

/// Splits off the first part of a duration's text: its digits, the letters that follow them, and the rest of
/// the text.
fn part(text: &str) -> (&str, &str, &str) {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let letters = text[digits..]
        .bytes()
        .take_while(u8::is_ascii_alphabetic)
        .count();
    let (number, rest) = text.split_at(digits);
    let (unit, rest) = rest.split_at(letters);
    (number, unit, rest)
}

/// Returns the text with its parts put largest unit first (`"30s1m"` as `"1m30s"`), when every part is a number
/// and a unit, and no unit is written twice.
pub(crate) fn reordered(text: &str) -> Option<String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let (number, unit, after) = part(rest);
        let index = UNITS.iter().position(|(name, _)| *name == unit)?;
        if number.is_empty() || parts.iter().any(|(_, known)| *known == index) {
            return None;
        }
        parts.push((number, index));
        rest = after;
    }
    parts.sort_by_key(|&(_, index)| index);
    Some(
        parts
            .iter()
            .map(|&(number, index)| format!("{number}{}", UNITS[index].0))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use limiter_runtime::{Limiter, Rule};

    use super::{millis, reordered, Refused};

    /// Durations the two grammars must read alike. Leaving out blank text: the environment trims a value, and
    /// takes a blank one as unset, before it parses anything.
    const TEXTS: [&str; 41] = [
        "500ms",
        "10s",
        "1m",
        "1h",
        "1d",
        "1h30m",
        "1m30s",
        "1d12h",
        "1s500ms",
        "1d2h3m4s5ms",
        "90m",
        "007s",
        "0s",
        "0",
        "10",
        "18446744073709551",
        "18446744073709552",
        "18446744073709551615ms",
        "18446744073709551616ms",
        "213503982334601d",
        "213503982334602d",
        "213503982334601d1h",
        "30s1m",
        "1m1m",
        "1ms1s",
        "1h30",
        "1h 30m",
        "s",
        "ms",
        "10x",
        "1H",
        "1sec",
        "1µs",
        "+5s",
        "-5s",
        "1.5s",
        "1_000s",
        "1w",
        "m1",
        "1mm",
        "1ms5",
    ];

    /// Returns what the attribute's `window` reads, as the environment would: a bare number is whole seconds
    /// there (the attribute asks for an integer literal instead, as its only difference). Both refuse a window
    /// of zero.
    fn attribute(text: &str) -> Option<u64> {
        let millis = match millis(text) {
            Ok(millis) => Some(millis),
            Err(Refused::NoUnit(seconds)) => seconds.checked_mul(1000),
            Err(_) => None,
        };
        millis.filter(|&millis| millis > 0)
    }

    /// Checks whether the runtime reads `LIMITER_WINDOW=text` as `expected` milliseconds (or refuses it, for
    /// none): the limit it then resolves is the limit of a limiter given that window.
    fn runtime_reads(text: &str, expected: Option<u64>) -> bool {
        std::env::set_var("LIMITER_WINDOW", text);
        let read = Limiter::builder().env();
        std::env::remove_var("LIMITER_WINDOW");
        let (Ok(read), Some(millis)) = (read, expected) else {
            return expected.is_none();
        };
        let build = |builder: limiter_runtime::LimiterBuilder| {
            let limiter = builder
                .in_memory()
                .build()
                .expect("an in-memory limiter builds");
            limiter.limit(&Rule::new()).rule()
        };
        let given = Limiter::builder().window(Duration::from_millis(millis));
        build(read) == build(given)
    }

    /// Checks that the attribute's durations are the environment's: the same texts are refused, the same read
    /// alike.
    #[test]
    fn the_grammar_is_the_runtimes() {
        for text in TEXTS {
            let expected = attribute(text);
            assert!(
                runtime_reads(text, expected),
                "{text:?}: the attribute reads {expected:?} ms, the runtime does not"
            );
        }
    }

    #[test]
    fn refusals_say_why() {
        assert_eq!(millis("1d12h"), Ok(129_600_000));
        assert_eq!(millis("10"), Err(Refused::NoUnit(10)));
        let out_of_order = |unit, after| Err(Refused::OutOfOrder { unit, after });
        assert_eq!(millis("30s1m"), out_of_order("m", "s"));
        assert_eq!(millis("1m1m"), out_of_order("m", "m"));
        assert_eq!(millis("1h30"), Err(Refused::Malformed));
        assert_eq!(millis("213503982334602d"), Err(Refused::TooLong));
        assert_eq!(reordered("30s1m").as_deref(), Some("1m30s"));
        assert_eq!(reordered("5ms2d1h"), Some("2d1h5ms".to_owned()));
        assert_eq!(reordered("1m1m"), None);
        assert_eq!(reordered("1m1x"), None);
    }
}
