//! `penalty = "10m"` or `penalty = "1m..1h"`: the lengths of the blocks a limit's refusal starts (see the
//! runtime's `Penalty`), read from the attribute's string by the grammar the runtime reads it with
//! (`limiter_grammar::penalty`), with the attribute's errors for a string that is not one.

use limiter_grammar::duration::DurationError;
use limiter_grammar::penalty::{self, Length, PenaltyError};
use syn::LitStr;

use crate::messages::refused_duration;

/// How long a call the limit refuses blocks its key (`penalty = ...`), in milliseconds, each longer than zero.
#[derive(Clone, Copy)]
pub(crate) enum Penalty {
    /// `penalty = "10m"`: every block as long.
    Fixed(u64),
    /// `penalty = "1m..1h"`: the first block, doubled at each repeat offence up to the longest (no shorter).
    Escalating { first: u64, cap: u64 },
}

/// What `penalty` is, for the error of a value that is not one.
pub(crate) const WHAT_IT_IS: &str =
    "`penalty` is how long a key that goes over the limit is blocked: a duration (`\"10m\"`) or the first and \
     the longest block (`\"1m..1h\"`)";

/// Parses `lit`: `"10m"`, a fixed penalty, or `"1m..1h"`, an escalating one (see `limiter_grammar::penalty`).
/// Every error is spanned at the literal.
pub(crate) fn parse(lit: &LitStr) -> syn::Result<Penalty> {
    let text = lit.value();
    let message = match penalty::parse(&text) {
        Ok(penalty) => {
            let millis = |length: std::time::Duration| {
                u64::try_from(length.as_millis()).expect("the grammar reads at most u64::MAX ms")
            };
            let (first, cap) = (millis(penalty.first), millis(penalty.cap));
            return Ok(match penalty.is_fixed() {
                true => Penalty::Fixed(first),
                false => Penalty::Escalating { first, cap },
            });
        }
        Err(error) => message(&text, error),
    };
    Err(syn::Error::new(lit.span(), message))
}

/// Words the grammar's refusal of the penalty `text` for the attribute.
fn message(text: &str, error: PenaltyError) -> String {
    match error {
        PenaltyError::NoUnit { meant, .. } => format!(
            "penalty {text:?} has no unit: write `penalty = \"{meant}\"` for seconds, or use `ms`, `m`, `h` or `d`"
        ),
        PenaltyError::NotADuration {
            error: DurationError::Empty | DurationError::Malformed { .. },
            ..
        } => format!(
            "invalid penalty {text:?}: {WHAT_IT_IS}; a duration is whole numbers, each followed by a unit, `d`, \
             `h`, `m`, `s` or `ms`, the largest first"
        ),
        PenaltyError::NotADuration { error, range, .. } => {
            refused_duration(&text[range], "penalty", error)
        }
        PenaltyError::Zero {
            length: Length::Only,
            ..
        } => "`penalty` must be longer than zero: a block of no time blocks nothing (leave `penalty` out for \
              none)"
            .to_owned(),
        PenaltyError::Zero {
            length: Length::First,
            ..
        } => format!(
            "the first block of `penalty = {text:?}` must be longer than zero: a block of no time blocks nothing"
        ),
        PenaltyError::Zero {
            length: Length::Cap,
            ..
        } => format!(
            "the longest block of `penalty = {text:?}` must be longer than zero: a block of no time blocks \
             nothing"
        ),
        PenaltyError::FirstLonger { first, cap } => format!(
            "the first block of `penalty = {text:?}` is longer than the longest: write the first block, then \
             the longest it may grow to, e.g. `penalty = \"{}..{}\"`",
            &text[cap], &text[first]
        ),
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::Span;
    use syn::LitStr;

    use super::{parse, Penalty};

    /// Checks that a penalty is one length or the first and the longest, as the runtime reads the same text,
    /// and that text that is not one is refused, saying why. (That `penalty` takes a string literal alone is
    /// `attr.rs`'s to check.)
    #[test]
    fn penalties() {
        let penalty = |text: &str| {
            parse(&LitStr::new(text, Span::call_site())).map_err(|error| error.to_string())
        };
        let lengths = |text: &str| match penalty(text) {
            Ok(Penalty::Fixed(length)) => (length, length),
            Ok(Penalty::Escalating { first, cap }) => (first, cap),
            Err(error) => panic!("{text}: {error}"),
        };
        assert_eq!(lengths("10m"), (600_000, 600_000));
        assert_eq!(lengths("1m..1h"), (60_000, 3_600_000));
        assert_eq!(lengths("500ms .. 1h30m"), (500, 5_400_000));
        assert_eq!(lengths("1s..1s"), (1_000, 1_000));
        for (text, refused) in [
            ("ten minutes", "invalid penalty"),
            ("1m..", "invalid penalty"),
            ("1m..1h..2h", "invalid penalty"),
            ("10", "write `penalty = \"10s\"`"),
            ("1..60", "write `penalty = \"1s..60s\"`"),
            ("30m1h", "write the units largest first: \"1h30m\""),
            ("0s", "`penalty` must be longer than zero"),
            ("0s..1h", "the first block"),
            ("1h..0s", "the longest block"),
            ("1h..1m", "e.g. `penalty = \"1m..1h\"`"),
        ] {
            match penalty(text) {
                Err(error) => assert!(error.contains(refused), "{text}: {error}"),
                Ok(_) => panic!("{text} is not a penalty"),
            }
        }
        // The runtime reads the text the attribute takes as the same penalty.
        for (text, first, cap) in [("10m", 600, 600), ("1m..1h", 60, 3600)] {
            let runtime: limiter_runtime::Penalty = text.parse().unwrap();
            assert_eq!(runtime.first().as_secs(), first);
            assert_eq!(runtime.cap().as_secs(), cap);
            assert_eq!(lengths(text), (first * 1000, cap * 1000));
        }
    }
}
