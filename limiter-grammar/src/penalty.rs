//! Penalties: how long a key that goes over its limit is blocked.
//!
//! A penalty is one [duration] (`10m`: every block as long) or two separated by `..`
//! (`1m..1h`: the first block, then the longest it may grow to), whitespace around each ignored. Every length
//! is longer than zero (a block of no time blocks nothing), and the first is no longer than the longest.
//!
//! ```
//! use std::time::Duration;
//! use limiter_grammar::penalty::{self, Penalty, PenaltyError};
//!
//! let minute = Duration::from_secs(60);
//! assert_eq!(penalty::parse("10m"), Ok(Penalty { first: 10 * minute, cap: 10 * minute }));
//! assert_eq!(penalty::parse("1m .. 1h"), Ok(Penalty { first: minute, cap: 60 * minute }));
//! assert!(matches!(penalty::parse("1h..1m"), Err(PenaltyError::FirstLonger { .. })));
//! assert!(matches!(penalty::parse("0s"), Err(PenaltyError::Zero { .. })));
//! assert!(matches!(penalty::parse("1..60"), Err(PenaltyError::NoUnit { meant, .. }) if meant == "1s..60s"));
//! ```

use std::fmt;
use std::ops::Range;
use std::time::Duration;

use crate::duration::{self, DurationError};

/// The lengths of a penalty's blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Penalty {
    /// The first block's length: every block's, for a fixed penalty.
    pub first: Duration,
    /// The longest block's length: the first's, for a fixed penalty (`10m`, or `10m..10m`).
    pub cap: Duration,
}

impl Penalty {
    /// Returns whether every block is as long.
    pub fn is_fixed(&self) -> bool {
        self.first == self.cap
    }
}

/// Which length of a penalty an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Length {
    /// The one length of a fixed penalty.
    Only,
    /// The first block's, before `..`.
    First,
    /// The longest block's, after `..`.
    Cap,
}

/// Why a text is not a penalty. Each range is the bytes of the input it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PenaltyError {
    /// Every length is a duration or a whole number, and some number has no unit: `meant` is the text with
    /// seconds written (`1..60` as `1s..60s`).
    NoUnit {
        /// The penalty written with seconds where a unit is missing.
        meant: String,
        /// The whole penalty.
        range: Range<usize>,
    },
    /// A length that is no duration (the first of them, if both are not).
    NotADuration {
        /// Which length.
        length: Length,
        /// Why (a [`NoUnit`](DurationError::NoUnit) only beside a length that is no number at all).
        error: DurationError,
        /// Where the length is (trimmed).
        range: Range<usize>,
    },
    /// A length of zero.
    Zero {
        /// Which length.
        length: Length,
        /// Where it is (trimmed).
        range: Range<usize>,
    },
    /// The first block is longer than the longest.
    FirstLonger {
        /// Where the first length is (trimmed).
        first: Range<usize>,
        /// Where the longest is (trimmed).
        cap: Range<usize>,
    },
}

impl PenaltyError {
    /// Returns the bytes of the input that are wrong.
    pub fn range(&self) -> Range<usize> {
        match self {
            PenaltyError::NoUnit { range, .. }
            | PenaltyError::NotADuration { range, .. }
            | PenaltyError::Zero { range, .. } => range.clone(),
            PenaltyError::FirstLonger { first, cap } => first.start..cap.end,
        }
    }
}

impl fmt::Display for PenaltyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let which = |length: &Length| match length {
            Length::Only => "the length",
            Length::First => "the first block",
            Length::Cap => "the longest block",
        };
        match self {
            PenaltyError::NoUnit { meant, .. } => write!(
                f,
                "a length has no unit: write `{meant}` for seconds, or use `ms`, `m`, `h` or `d`"
            ),
            PenaltyError::NotADuration { length, error, .. } => {
                write!(f, "{} is no duration: {error}", which(length))
            }
            PenaltyError::Zero { length, .. } => write!(
                f,
                "{} must be longer than zero: a block of no time blocks nothing",
                which(length)
            ),
            PenaltyError::FirstLonger { .. } => f.write_str(
                "the first block is longer than the longest: write the first block, then the longest it may \
                 grow to, like `1m..1h`",
            ),
        }
    }
}

impl std::error::Error for PenaltyError {}

/// Parses a penalty: `10m`, or `1m..1h`.
pub fn parse(text: &str) -> Result<Penalty, PenaltyError> {
    let whole = trimmed(text, 0..text.len());
    let lengths: Vec<(Length, Range<usize>)> = match text.find("..") {
        Some(at) => vec![
            (Length::First, trimmed(text, 0..at)),
            (Length::Cap, trimmed(text, at + 2..text.len())),
        ],
        None => vec![(Length::Only, whole.clone())],
    };
    let read: Vec<Result<u64, DurationError>> = lengths
        .iter()
        .map(|(_, range)| {
            duration::millis(&text[range.clone()]).map_err(|e| e.shifted(range.start))
        })
        .collect();
    let no_unit =
        |read: &Result<u64, DurationError>| matches!(read, Err(DurationError::NoUnit { .. }));
    // Every length without a unit, seconds to the reader who meant them, is shown with one.
    if read.iter().any(no_unit) && read.iter().all(|read| read.is_ok() || no_unit(read)) {
        let meant: Vec<String> = lengths
            .iter()
            .zip(&read)
            .map(|((_, range), read)| match read {
                Err(DurationError::NoUnit { number, .. }) => format!("{number}s"),
                _ => text[range.clone()].to_owned(),
            })
            .collect();
        return Err(PenaltyError::NoUnit {
            meant: meant.join(".."),
            range: whole,
        });
    }
    let mut millis = Vec::with_capacity(2);
    for ((length, range), read) in lengths.iter().zip(read) {
        millis.push(read.map_err(|error| PenaltyError::NotADuration {
            length: *length,
            error,
            range: range.clone(),
        })?);
    }
    if let Some(((length, range), _)) = lengths.iter().zip(&millis).find(|(_, &read)| read == 0) {
        return Err(PenaltyError::Zero {
            length: *length,
            range: range.clone(),
        });
    }
    let (first, cap) = match *millis.as_slice() {
        [only] => (only, only),
        [first, cap] if first > cap => {
            return Err(PenaltyError::FirstLonger {
                first: lengths[0].1.clone(),
                cap: lengths[1].1.clone(),
            })
        }
        [first, cap] => (first, cap),
        _ => unreachable!("a penalty has one length or two"),
    };
    Ok(Penalty {
        first: Duration::from_millis(first),
        cap: Duration::from_millis(cap),
    })
}

/// Returns `range` of `text` without the whitespace around it.
fn trimmed(text: &str, range: Range<usize>) -> Range<usize> {
    let part = &text[range.clone()];
    let start = range.start + part.len() - part.trim_start().len();
    start..start + part.trim().len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks the lengths read, and which refusal each wrong text gets, and where.
    #[test]
    fn penalties_and_their_refusals() {
        let lengths = |text: &str| {
            let penalty = parse(text).unwrap_or_else(|error| panic!("{text}: {error}"));
            (penalty.first.as_millis(), penalty.cap.as_millis())
        };
        assert_eq!(lengths("10m"), (600_000, 600_000));
        assert_eq!(lengths("500ms .. 1h30m"), (500, 5_400_000));
        assert_eq!(lengths("1s..1s"), (1_000, 1_000));
        assert!(parse("1s..1s").unwrap().is_fixed());
        let text = "1h ..1m";
        let error = parse(text).unwrap_err();
        assert_eq!(
            error,
            PenaltyError::FirstLonger {
                first: 0..2,
                cap: 5..7
            }
        );
        let text = " 1m..1h..2h";
        match parse(text) {
            Err(PenaltyError::NotADuration {
                length: Length::Cap,
                error,
                range,
            }) => {
                assert_eq!(&text[range], "1h..2h");
                assert_eq!(error.range().map(|range| &text[range]), Some("."));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse("1m.."),
            Err(PenaltyError::NotADuration {
                error: DurationError::Empty,
                ..
            })
        ));
        assert!(matches!(
            parse("0s..1h"),
            Err(PenaltyError::Zero {
                length: Length::First,
                ..
            })
        ));
        assert!(matches!(
            parse("1h..0s"),
            Err(PenaltyError::Zero {
                length: Length::Cap,
                ..
            })
        ));
        assert!(matches!(parse("10"), Err(PenaltyError::NoUnit { meant, .. }) if meant == "10s"));
        assert!(
            matches!(parse("10..1h"), Err(PenaltyError::NoUnit { meant, .. }) if meant == "10s..1h")
        );
        assert!(matches!(
            parse("10..x"),
            Err(PenaltyError::NotADuration {
                length: Length::First,
                error: DurationError::NoUnit { number: 10, .. },
                ..
            })
        ));
    }
}
