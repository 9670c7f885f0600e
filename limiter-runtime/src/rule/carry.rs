//! A rule's carry-over: how a bucket's level is carried when its limit changes (a reloaded rule, a plan, an
//! override).

use std::fmt;
use std::str::FromStr;

use crate::algorithm::carry::Level;
use crate::parse::ParseError;

/// How a [`TokenBucket`](crate::Algorithm::TokenBucket)'s or a [`LeakyBucket`](crate::Algorithm::LeakyBucket)'s
/// level carries over when its limit changes between two calls on a key: its `max`, `window` or `burst` (a
/// reloaded rule, another plan, a run-time [override](crate::Override)). Set it with
/// [`Rule::carry`](crate::Rule::carry); the windows and the log carry their counts whatever it says (see
/// `guide::limits`).
///
/// A token bucket's level is its tokens, against its `burst`; a leaky bucket's, its line: the slots queued, as
/// far as they reach (a call's `max_wait` is its own patience, not the line's, and moves nothing). Neither
/// strategy ever refills a token bucket: after a change it holds no more tokens than before, in proportion or
/// as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Carry {
    /// The level is kept in proportion (the default): a token bucket 30% full stays 30% full of its new
    /// burst; a leaky bucket's slots queued stay queued, spaced anew (its line reaches twice as far at half
    /// the rate).
    #[default]
    Proportional,
    /// The level is kept as it is: a token bucket keeps the tokens it holds (at most its new burst); a leaky
    /// bucket's line ends where it ended, so that every call admitted keeps its slot.
    AsIs,
}

impl Carry {
    /// Every strategy.
    pub const ALL: [Carry; 2] = [Carry::Proportional, Carry::AsIs];

    /// Returns it as the algorithms take it.
    pub(crate) const fn level(self) -> Level {
        match self {
            Carry::Proportional => Level::Proportional,
            Carry::AsIs => Level::AsIs,
        }
    }

    /// Returns its name as a limits file spells it (`carry = "as_is"`), and as `FromStr` reads it.
    pub const fn name(self) -> &'static str {
        match self {
            Carry::Proportional => "proportional",
            Carry::AsIs => "as_is",
        }
    }
}

impl fmt::Display for Carry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Carry {
    type Err = ParseError;

    /// Parses a strategy by its [`name`](Carry::name).
    fn from_str(name: &str) -> Result<Carry, ParseError> {
        Carry::ALL
            .into_iter()
            .find(|carry| carry.name() == name)
            .ok_or_else(|| ParseError::new("carry", name, "proportional or as_is"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that each strategy reads back from its name, and a misspelt one is refused, naming both.
    #[test]
    fn a_strategy_reads_back_from_its_name() {
        for carry in Carry::ALL {
            assert_eq!(carry.name().parse::<Carry>().unwrap(), carry);
        }
        assert_eq!(Carry::default(), Carry::Proportional);
        let error = "as-is".parse::<Carry>().unwrap_err().to_string();
        assert!(
            error.contains("as-is") && error.contains("as_is"),
            "{error}"
        );
    }
}
