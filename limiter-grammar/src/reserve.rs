//! Reserves: the shares of a limit kept for the calls of a priority and above.
//!
//! A share is a priority above `low` and a whole percent of the limit, from `0%` to `100%`: `critical 20%`.
//! Several are separated by commas, each priority at most once, in any order: `critical 10%, high 30%`. The
//! word `none` (in any ASCII case) keeps no share at all: what the runtime writes for a limit that keeps none,
//! and how an override, the environment or the attribute says so over a share kept elsewhere. A share kept for
//! `low` is refused: no call is below `low`, so it would be kept for every call.
//!
//! ```
//! use limiter_grammar::reserve::{self, ReserveErrorKind, Share};
//! use limiter_grammar::Priority;
//!
//! let shares = reserve::parse("critical 10%, high 30%").unwrap();
//! assert_eq!(shares, [Share::new(Priority::Critical, 10), Share::new(Priority::High, 30)]);
//! assert_eq!(reserve::parse("none"), Ok(vec![]));
//! let error = reserve::parse("low 20%").unwrap_err();
//! assert!(matches!(error.kind, ReserveErrorKind::KeptForLow { .. }));
//! assert_eq!(error.to_string(), "`low 20%` keeps nothing: a share kept for `low` and above is kept for every call; keep it for `normal`, `high` or `critical`");
//! let error = reserve::parse("critical=20").unwrap_err();
//! assert!(matches!(error.kind, ReserveErrorKind::NotAShare { .. }));
//! ```

use std::fmt;
use std::ops::Range;

use crate::priority::{Priority, EXPECTED};

/// One share: the percent of a limit kept for the calls of `priority` and above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Share {
    /// The priority it is kept for (and above): never [`Low`](Priority::Low).
    pub priority: Priority,
    /// A whole percent, at most 100.
    pub percent: u8,
}

impl Share {
    /// Makes a share of `percent` kept for `priority` and above.
    pub const fn new(priority: Priority, percent: u8) -> Share {
        Share { priority, percent }
    }
}

/// Why a text is not a list of shares: the text, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReserveError {
    /// The text refused.
    pub text: String,
    /// What is wrong with it, and where.
    pub kind: ReserveErrorKind,
}

/// What is wrong with a text of shares. Each range is the bytes of the text it is about: `item` the whole
/// share (trimmed), `name` its priority's word, `share` its percent's word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReserveErrorKind {
    /// Blank text.
    Empty,
    /// Nothing between two commas, or before or after one.
    EmptyItem {
        /// Where the nothing is: between the commas.
        item: Range<usize>,
    },
    /// A priority without its share (`critical`).
    NoShare {
        /// The priority's word.
        item: Range<usize>,
    },
    /// A share without its priority (`20%`).
    NoPriority {
        /// The share's word.
        item: Range<usize>,
    },
    /// Not a priority and a share (`critical 20% high`, `critical=20`).
    NotAShare {
        /// The words.
        item: Range<usize>,
    },
    /// A word that names no priority (`urgent 20%`).
    UnknownPriority {
        /// The share.
        item: Range<usize>,
        /// The word.
        name: Range<usize>,
    },
    /// A share kept for `low` (and above): for every call.
    KeptForLow {
        /// The share.
        item: Range<usize>,
        /// Its percent's word.
        share: Range<usize>,
    },
    /// More than 100%.
    OverWhole {
        /// The share.
        item: Range<usize>,
        /// Its priority's word.
        name: Range<usize>,
    },
    /// A whole number without its `%` (`critical 20`).
    NoPercentSign {
        /// The share.
        item: Range<usize>,
        /// Its priority's word.
        name: Range<usize>,
        /// Its number.
        share: Range<usize>,
    },
    /// Not a whole percent (`critical 2.5%`, `critical x%`, `critical -5%`).
    NotAPercent {
        /// The share.
        item: Range<usize>,
        /// Its priority's word.
        name: Range<usize>,
    },
    /// A priority given two shares.
    Twice {
        /// The priority.
        priority: Priority,
        /// Its first share.
        first: Range<usize>,
        /// Its second.
        item: Range<usize>,
    },
}

impl ReserveErrorKind {
    /// Returns the bytes of the text that are wrong (none for blank text).
    pub fn range(&self) -> Option<Range<usize>> {
        match self {
            ReserveErrorKind::Empty => None,
            ReserveErrorKind::UnknownPriority { name: range, .. }
            | ReserveErrorKind::NoPercentSign { share: range, .. }
            | ReserveErrorKind::EmptyItem { item: range }
            | ReserveErrorKind::NoShare { item: range }
            | ReserveErrorKind::NoPriority { item: range }
            | ReserveErrorKind::NotAShare { item: range }
            | ReserveErrorKind::KeptForLow { item: range, .. }
            | ReserveErrorKind::OverWhole { item: range, .. }
            | ReserveErrorKind::NotAPercent { item: range, .. }
            | ReserveErrorKind::Twice { item: range, .. } => Some(range.clone()),
        }
    }
}

impl ReserveError {
    /// Returns the bytes of the text that are wrong (none for blank text).
    pub fn range(&self) -> Option<Range<usize>> {
        self.kind.range()
    }
}

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = |range: &Range<usize>| &self.text[range.clone()];
        let expected =
            "expected a priority and a whole percent of the limit, like `critical 20%`, several \
                        separated by commas, like `critical 10%, high 30%`, or `none`";
        match &self.kind {
            ReserveErrorKind::Empty => write!(f, "no share is given: {expected}"),
            ReserveErrorKind::EmptyItem { .. } => {
                write!(f, "a comma has no share on one side: {expected}")
            }
            ReserveErrorKind::NoShare { item } => write!(
                f,
                "`{0}` has no share: write the percent of the limit kept for it and above, like `{0} 20%`",
                at(item)
            ),
            ReserveErrorKind::NoPriority { item } => write!(
                f,
                "`{0}` names no priority: write the priority it is kept for (and above), like `critical {0}`",
                at(item)
            ),
            ReserveErrorKind::NotAShare { item } => {
                write!(f, "`{}` is not a share: {expected}", at(item))
            }
            ReserveErrorKind::UnknownPriority { name, .. } => {
                write!(f, "unknown priority `{}`: expected {EXPECTED}", at(name))
            }
            ReserveErrorKind::KeptForLow { item, .. } => write!(
                f,
                "`{}` keeps nothing: a share kept for `low` and above is kept for every call; keep it for \
                 `normal`, `high` or `critical`",
                at(item)
            ),
            ReserveErrorKind::OverWhole { item, .. } => write!(
                f,
                "`{}` keeps more than the whole limit: a share is a whole percent, at most 100%",
                at(item)
            ),
            ReserveErrorKind::NoPercentSign { item, name, share } => write!(
                f,
                "`{}` has no `%`: a share is a whole percent of the limit, `{} {}%`",
                at(item),
                at(name),
                at(share)
            ),
            ReserveErrorKind::NotAPercent { item, .. } => write!(
                f,
                "`{}` is not a whole percent: a share is a whole percent of the limit, from 0% to 100%",
                at(item)
            ),
            ReserveErrorKind::Twice {
                priority,
                first,
                item,
            } => write!(
                f,
                "`{priority}` is given two shares, `{}` and `{}`: give each priority one",
                at(first),
                at(item)
            ),
        }
    }
}

impl std::error::Error for ReserveError {}

/// Parses shares, in the order written (none for `none`); surrounding whitespace, and whitespace around the
/// commas, is ignored.
pub fn parse(text: &str) -> Result<Vec<Share>, ReserveError> {
    shares(text).map_err(|kind| ReserveError {
        text: text.to_owned(),
        kind,
    })
}

/// Reads the shares of `text`, or what is wrong with it.
fn shares(text: &str) -> Result<Vec<Share>, ReserveErrorKind> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(ReserveErrorKind::Empty);
    }
    if trimmed.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let mut shares: Vec<(Share, Range<usize>)> = Vec::new();
    let mut at = 0;
    for item in text.split(',') {
        let range = trimmed_range(text, at, item);
        at += item.len() + 1;
        let share = share(text, range.clone())?;
        if let Some((_, first)) = shares
            .iter()
            .find(|(seen, _)| seen.priority == share.priority)
        {
            return Err(ReserveErrorKind::Twice {
                priority: share.priority,
                first: first.clone(),
                item: range,
            });
        }
        shares.push((share, range));
    }
    Ok(shares.into_iter().map(|(share, _)| share).collect())
}

/// Returns the range of `part` (at `at` in `text`) without its surrounding whitespace.
fn trimmed_range(text: &str, at: usize, part: &str) -> Range<usize> {
    let start = at + part.len() - part.trim_start().len();
    let range = start..start + part.trim().len();
    debug_assert_eq!(&text[range.clone()], part.trim());
    range
}

/// Reads one share, the item at `item` in `text`: `critical 20%`.
fn share(text: &str, item: Range<usize>) -> Result<Share, ReserveErrorKind> {
    let mut words = Vec::new();
    let mut at = item.start;
    for word in text[item.clone()].split(char::is_whitespace) {
        if !word.is_empty() {
            words.push(at..at + word.len());
        }
        at += word.len() + word_gap(&text[at + word.len()..item.end]);
    }
    let (name, share) = match words.as_slice() {
        [] => return Err(ReserveErrorKind::EmptyItem { item }),
        [name, share] => (name.clone(), share.clone()),
        [word] if Priority::parse(&text[word.clone()]).is_ok() => {
            return Err(ReserveErrorKind::NoShare { item })
        }
        [word] if text[word.clone()].ends_with('%') => {
            return Err(ReserveErrorKind::NoPriority { item })
        }
        _ => return Err(ReserveErrorKind::NotAShare { item }),
    };
    let Ok(priority) = Priority::parse(&text[name.clone()]) else {
        return Err(ReserveErrorKind::UnknownPriority { item, name });
    };
    if priority == Priority::Low {
        return Err(ReserveErrorKind::KeptForLow { item, share });
    }
    let written = &text[share.clone()];
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let percent = match written.strip_suffix('%') {
        Some(number) if digits(number) => {
            // Past its leading zeros, a number of more than three digits is over 100 (and maybe over any integer).
            let significant = number.trim_start_matches('0');
            let percent = match significant.len() {
                0 => Some(0),
                1..=3 => significant.parse::<u8>().ok(),
                _ => None,
            };
            match percent.filter(|&percent| percent <= 100) {
                Some(percent) => percent,
                None => return Err(ReserveErrorKind::OverWhole { item, name }),
            }
        }
        None if digits(written) => {
            return Err(ReserveErrorKind::NoPercentSign { item, name, share })
        }
        _ => return Err(ReserveErrorKind::NotAPercent { item, name }),
    };
    Ok(Share { priority, percent })
}

/// Returns the length of the whitespace character that ends a word at the start of `rest`, if one does.
fn word_gap(rest: &str) -> usize {
    rest.chars().next().map_or(0, char::len_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns what is wrong with `text`, if anything.
    fn kind(text: &str) -> Option<ReserveErrorKind> {
        parse(text).err().map(|error| error.kind)
    }

    /// Checks the shares read, in the order written, and where each refusal points.
    #[test]
    fn shares_and_their_refusals() {
        let shares = parse(" critical 10% ,high 30%, Normal 0%").unwrap();
        let expected = [
            Share::new(Priority::Critical, 10),
            Share::new(Priority::High, 30),
            Share::new(Priority::Normal, 0),
        ];
        assert_eq!(shares, expected);
        assert_eq!(parse("high 007%"), Ok(vec![Share::new(Priority::High, 7)]));
        assert_eq!(parse(" NONE "), Ok(vec![]));
        let text = "critical 10%, high\u{a0}x%, high 5%";
        let (item, name) = (14..22, 14..18);
        assert_eq!(
            kind(text),
            Some(ReserveErrorKind::NotAPercent { item, name })
        );
        let text = "critical 10%,  critical 20%";
        let error = parse(text).unwrap_err();
        assert_eq!(
            error.range().map(|range| &text[range]),
            Some("critical 20%")
        );
        assert!(matches!(
            error.kind,
            ReserveErrorKind::Twice {
                first: Range { start: 0, end: 12 },
                ..
            }
        ));
        assert_eq!(
            error.to_string(),
            "`critical` is given two shares, `critical 10%` and `critical 20%`: give each priority one"
        );
        let text = "critical 20";
        assert_eq!(
            parse(text).unwrap_err().range().map(|range| &text[range]),
            Some("20")
        );
        let error = parse("urgent 20%").unwrap_err().to_string();
        assert_eq!(
            error,
            "unknown priority `urgent`: expected critical, high, normal or low"
        );
        assert_eq!(
            kind("critical 20%,"),
            Some(ReserveErrorKind::EmptyItem { item: 13..13 })
        );
        assert_eq!(kind("  "), Some(ReserveErrorKind::Empty));
        let over = kind("critical 1000000000000000000000%");
        assert!(matches!(over, Some(ReserveErrorKind::OverWhole { .. })));
        let signed = kind("critical +5%");
        assert!(matches!(signed, Some(ReserveErrorKind::NotAPercent { .. })));
        let listed = kind("none, critical 5%");
        assert!(matches!(listed, Some(ReserveErrorKind::NotAShare { .. })));
    }
}
