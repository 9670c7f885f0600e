//! Durations: whole numbers, each followed by its unit, the largest unit first and each at most once.
//!
//! | text | length |
//! |---|---|
//! | `500ms` | half a second |
//! | `10s` | ten seconds |
//! | `1m30s` (or `90s`) | a minute and a half |
//! | `1h30m` | an hour and a half |
//! | `1d12h` | a day and a half |
//!
//! The units are `d`, `h`, `m`, `s` and `ms`; the shortest length is a millisecond, the longest `u64::MAX`
//! of them. One spelling per length: `30m1h` (a unit after a smaller one) and `1m1m` (a unit twice) are
//! refused as the slips they most likely are. A number needs its unit: `10` alone is refused (seconds to one
//! reader, milliseconds to another); the attribute writes whole seconds as an integer, `window = 10`. Zero
//! (`0s`) is a duration; whether a setting takes it is the setting's to say (a window is longer than zero).
//!
//! ```
//! use std::time::Duration;
//! use limiter_grammar::duration::{self, DurationError};
//!
//! assert_eq!(duration::parse("1m30s"), Ok(Duration::from_secs(90)));
//! assert_eq!(duration::millis("1s500ms"), Ok(1_500));
//! assert!(matches!(duration::parse("10"), Err(DurationError::NoUnit { number: 10, .. })));
//! assert!(matches!(duration::parse("30s1m"), Err(DurationError::OutOfOrder { unit: "m", after: "s", .. })));
//! assert_eq!(duration::reordered("30s1m").as_deref(), Some("1m30s"));
//! ```

use std::fmt;
use std::ops::Range;
use std::time::Duration;

/// The units, largest first, and their length in milliseconds.
pub const UNITS: [(&str, u64); 5] = [
    ("d", 86_400_000),
    ("h", 3_600_000),
    ("m", 60_000),
    ("s", 1_000),
    ("ms", 1),
];

/// Why a text is not a duration. Each range is the bytes of the input that are wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    /// Blank text.
    Empty,
    /// A whole number alone, without its unit (`10`): `number` is its value.
    NoUnit {
        /// The number written.
        number: u64,
        /// Where it is.
        range: Range<usize>,
    },
    /// Not whole numbers, each followed by a unit (`10x`, `1h30`, `1.5s`, `10 s`, `-5s`).
    Malformed {
        /// The first part that is not a number and its unit.
        range: Range<usize>,
    },
    /// A unit written after a smaller one (`30s1m`), or after itself (`1m1m`).
    OutOfOrder {
        /// The unit out of its place.
        unit: &'static str,
        /// The unit written before it.
        after: &'static str,
        /// Where the part of `unit` is.
        range: Range<usize>,
    },
    /// Longer than `u64::MAX` milliseconds.
    TooLong {
        /// The part that makes it too long.
        range: Range<usize>,
    },
}

impl DurationError {
    /// Returns the bytes of the input that are wrong (the whole input, for blank text).
    pub fn range(&self) -> Option<Range<usize>> {
        match self {
            DurationError::Empty => None,
            DurationError::NoUnit { range, .. }
            | DurationError::Malformed { range }
            | DurationError::OutOfOrder { range, .. }
            | DurationError::TooLong { range } => Some(range.clone()),
        }
    }

    /// Returns it with its range `by` bytes further on: an error of a part of a longer text.
    pub(crate) fn shifted(self, by: usize) -> DurationError {
        let shift = |range: Range<usize>| range.start + by..range.end + by;
        match self {
            DurationError::Empty => DurationError::Empty,
            DurationError::NoUnit { number, range } => DurationError::NoUnit {
                number,
                range: shift(range),
            },
            DurationError::Malformed { range } => DurationError::Malformed {
                range: shift(range),
            },
            DurationError::OutOfOrder { unit, after, range } => DurationError::OutOfOrder {
                unit,
                after,
                range: shift(range),
            },
            DurationError::TooLong { range } => DurationError::TooLong {
                range: shift(range),
            },
        }
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::Empty => f.write_str(
                "a duration cannot be blank: write whole numbers, each followed by a unit, `d`, `h`, `m`, `s` \
                 or `ms`, e.g. `10s` or `1m30s`",
            ),
            DurationError::NoUnit { number, .. } => write!(
                f,
                "`{number}` has no unit: write `{number}s` for seconds, or use `ms`, `m`, `h` or `d`"
            ),
            DurationError::Malformed { .. } => f.write_str(
                "expected whole numbers, each followed by a unit, `d`, `h`, `m`, `s` or `ms`, the largest first \
                 (e.g. `500ms`, `10s`, `1m30s`, `1h`, `1d12h`)",
            ),
            DurationError::OutOfOrder { unit, after, .. } if unit == after => write!(
                f,
                "`{unit}` is written twice: write each unit once, the largest first (e.g. `1h30m`)"
            ),
            DurationError::OutOfOrder { unit, after, .. } => write!(
                f,
                "`{unit}` comes after the smaller `{after}`: write the units largest first (e.g. `1h30m`)"
            ),
            DurationError::TooLong { .. } => write!(
                f,
                "a duration is at most {} milliseconds (about 584 million years)",
                u64::MAX
            ),
        }
    }
}

impl std::error::Error for DurationError {}

/// Parses a duration (surrounding whitespace ignored).
pub fn parse(text: &str) -> Result<Duration, DurationError> {
    millis(text).map(Duration::from_millis)
}

/// Parses a duration (surrounding whitespace ignored) into its length in milliseconds.
pub fn millis(text: &str) -> Result<u64, DurationError> {
    let start = text.len() - text.trim_start().len();
    let end = start + text.trim().len();
    if start == end {
        return Err(DurationError::Empty);
    }
    let (mut at, mut total, mut last) = (start, 0_u64, None);
    while at < end {
        let (digits, unit) = part(&text[at..end]);
        let (number, unit_at, after) = (at..at + digits, at + digits, at + digits + unit);
        // What is wrong when the part is: its digits and letters, and the character that stops them.
        let stop = match digits == 0 || unit == 0 {
            true => text[after..end].chars().next().map_or(0, char::len_utf8),
            false => 0,
        };
        let whole = at..after + stop;
        if digits == 0 {
            return Err(DurationError::Malformed { range: whole });
        }
        // Digits alone: the only error is a number over `u64::MAX`.
        let value = text[number.clone()]
            .parse::<u64>()
            .map_err(|_| DurationError::TooLong {
                range: number.clone(),
            });
        if unit == 0 {
            return Err(match (last, after == end) {
                (None, true) => DurationError::NoUnit {
                    number: value?,
                    range: number,
                },
                _ => DurationError::Malformed { range: whole },
            });
        }
        let Some(index) = UNITS
            .iter()
            .position(|(name, _)| *name == &text[unit_at..after])
        else {
            return Err(DurationError::Malformed { range: whole });
        };
        if let Some(last) = last.filter(|&last| index <= last) {
            return Err(DurationError::OutOfOrder {
                unit: UNITS[index].0,
                after: UNITS[last].0,
                range: at..after,
            });
        }
        total = value?
            .checked_mul(UNITS[index].1)
            .and_then(|part| total.checked_add(part))
            .ok_or(DurationError::TooLong { range: at..after })?;
        (at, last) = (after, Some(index));
    }
    Ok(total)
}

/// Returns the lengths of the digits that open `text`, and of the ASCII letters that follow them.
fn part(text: &str) -> (usize, usize) {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let letters = text.as_bytes()[digits..]
        .iter()
        .take_while(|byte| byte.is_ascii_alphabetic())
        .count();
    (digits, letters)
}

/// Returns the text with its parts put largest unit first (`30s1m` as `1m30s`), when every part is a number and
/// a unit, and no unit is written twice: the fix an [`OutOfOrder`](DurationError::OutOfOrder) error can offer.
pub fn reordered(text: &str) -> Option<String> {
    let mut parts = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (digits, letters) = part(rest);
        let (number, unit) = (&rest[..digits], &rest[digits..digits + letters]);
        let index = UNITS.iter().position(|(name, _)| *name == unit)?;
        if number.is_empty() || parts.iter().any(|&(_, known)| known == index) {
            return None;
        }
        parts.push((number, index));
        rest = &rest[digits + letters..];
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
    use super::*;

    /// Checks the lengths read, and that each refusal says why and where.
    #[test]
    fn durations_and_their_refusals() {
        assert_eq!(millis("1d12h"), Ok(129_600_000));
        assert_eq!(millis(" 1s500ms\n"), Ok(1_500));
        assert_eq!(millis("0s"), Ok(0));
        assert_eq!(millis("007s"), Ok(7_000));
        assert_eq!(millis(" "), Err(DurationError::Empty));
        assert_eq!(
            millis(" 10"),
            Err(DurationError::NoUnit {
                number: 10,
                range: 1..3
            })
        );
        let out_of_order =
            |unit, after, range| Err(DurationError::OutOfOrder { unit, after, range });
        assert_eq!(millis("30s1m"), out_of_order("m", "s", 3..5));
        assert_eq!(millis("1m1m"), out_of_order("m", "m", 2..4));
        let malformed = |range| Err(DurationError::Malformed { range });
        assert_eq!(millis("1h30"), malformed(2..4));
        assert_eq!(millis("1.5s"), malformed(0..2));
        assert_eq!(millis("10 s"), malformed(0..3));
        assert_eq!(millis("10x"), malformed(0..3));
        assert_eq!(millis("1µs"), malformed(0..3));
        assert_eq!(millis("-5s"), malformed(0..1));
        assert_eq!(millis("1s+"), malformed(2..3));
        assert_eq!(
            millis("213503982334602d"),
            Err(DurationError::TooLong { range: 0..16 })
        );
        assert_eq!(
            millis("99999999999999999999"),
            Err(DurationError::TooLong { range: 0..20 })
        );
        assert_eq!(reordered("5ms2d1h"), Some("2d1h5ms".to_owned()));
        assert_eq!(reordered("1m1m"), None);
        assert_eq!(reordered("1m1x"), None);
        let error = millis("30s1m").unwrap_err().to_string();
        assert!(error.contains("`m` comes after the smaller `s`"), "{error}");
    }
}
