//! Algorithms: their names, and the codes the scripts Redis runs know them by.
//!
//! [`NAMES`] is the one list: the runtime's `Algorithm` names its variants from it, the build script that
//! assembles the Lua scripts numbers their branches from it (`if code == 4 then` is the token bucket's), the
//! runtime's `script::code` sends the same numbers, and the attribute's `algorithm = ...` reads the names.
//! A rate's algorithm is chosen by name ([`RATES`](Algorithm::RATES): `algorithm = token_bucket`,
//! `LIMITER_ALGORITHM=token_bucket`); `in_flight` and `calendar` are not chosen by name, but by their own
//! settings (`in_flight = 4`, `period = month`), and [`Algorithm::parse`] refuses them, saying so. Names are
//! written as they are here, in lower case.
//!
//! ```
//! use limiter_grammar::Algorithm;
//!
//! assert_eq!(Algorithm::parse("token_bucket"), Ok(Algorithm::TokenBucket));
//! assert_eq!(Algorithm::TokenBucket.code(), 4);
//! assert_eq!(Algorithm::Calendar.name(), "calendar");
//! assert!(Algorithm::parse("in_flight").is_err());
//! assert!(Algorithm::parse("gcra").is_err());
//! ```

use std::fmt;

/// Every algorithm's name, in the order of their codes, from 1.
pub const NAMES: [&str; 7] = [
    "sliding_log",
    "fixed_window",
    "sliding_window",
    "token_bucket",
    "leaky_bucket",
    "in_flight",
    "calendar",
];

/// An algorithm, as the runtime's `Algorithm` (see there for what each does). The variants are in the order of
/// [`NAMES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// `sliding_log`.
    SlidingLog,
    /// `fixed_window`.
    FixedWindow,
    /// `sliding_window`.
    SlidingWindow,
    /// `token_bucket`.
    TokenBucket,
    /// `leaky_bucket`.
    LeakyBucket,
    /// `in_flight`: calls running at once, asked for by `in_flight`.
    InFlight,
    /// `calendar`: a quota per period of the calendar, asked for by `period`.
    Calendar,
}

impl Algorithm {
    /// Every algorithm, in the order of their codes.
    pub const ALL: [Algorithm; 7] = [
        Algorithm::SlidingLog,
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::TokenBucket,
        Algorithm::LeakyBucket,
        Algorithm::InFlight,
        Algorithm::Calendar,
    ];

    /// The algorithms of a rate, chosen by name: every one but `in_flight` and `calendar`.
    pub const RATES: [Algorithm; 5] = [
        Algorithm::SlidingLog,
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::TokenBucket,
        Algorithm::LeakyBucket,
    ];

    /// Returns its name.
    #[inline]
    pub const fn name(self) -> &'static str {
        NAMES[self as usize]
    }

    /// Returns the code the scripts know it by: its place in [`NAMES`], from 1.
    #[inline]
    pub const fn code(self) -> u8 {
        self as u8 + 1
    }

    /// Returns the algorithm of `name`, whichever it is (`in_flight` and `calendar` too).
    pub fn named(name: &str) -> Option<Algorithm> {
        Algorithm::ALL
            .into_iter()
            .find(|algorithm| algorithm.name() == name)
    }

    /// Parses a rate's algorithm by its name (surrounding whitespace ignored): one of [`RATES`](Algorithm::RATES).
    pub fn parse(text: &str) -> Result<Algorithm, AlgorithmError> {
        let name = text.trim();
        match Algorithm::named(name) {
            Some(algorithm) if Algorithm::RATES.contains(&algorithm) => Ok(algorithm),
            Some(algorithm) => Err(AlgorithmError::NotARate(algorithm)),
            None => Err(AlgorithmError::Unknown(name.to_owned())),
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Returns the names of a rate's algorithms, for messages: `sliding_log, fixed_window, sliding_window,
/// token_bucket or leaky_bucket`.
pub fn expected() -> String {
    let names = Algorithm::RATES.map(Algorithm::name);
    let (last, rest) = names.split_last().expect("there are rates");
    format!("{} or {last}", rest.join(", "))
}

/// A name that is no rate's algorithm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlgorithmError {
    /// No algorithm's name (trimmed).
    Unknown(String),
    /// An algorithm that is not chosen by name, but by its own setting.
    NotARate(Algorithm),
}

impl fmt::Display for AlgorithmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AlgorithmError::Unknown(name) => {
                write!(f, "unknown algorithm `{name}`: expected {}", expected())
            }
            AlgorithmError::NotARate(Algorithm::Calendar) => f.write_str(
                "`calendar` is not chosen by name: a calendar quota is asked for with its period \
                 (`period = month`)",
            ),
            AlgorithmError::NotARate(algorithm) => write!(
                f,
                "`{algorithm}` is not chosen by name: a limit of calls in flight is asked for with \
                 `in_flight = <calls>`"
            ),
        }
    }
}

impl std::error::Error for AlgorithmError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that each algorithm's name, code and place agree, and which names parse.
    #[test]
    fn names_codes_and_places_agree() {
        for (place, algorithm) in Algorithm::ALL.into_iter().enumerate() {
            assert_eq!(algorithm.name(), NAMES[place]);
            assert_eq!(usize::from(algorithm.code()), place + 1);
            assert_eq!(Algorithm::named(algorithm.name()), Some(algorithm));
        }
        assert_eq!(Algorithm::RATES, Algorithm::ALL.split_at(5).0);
        assert_eq!(
            Algorithm::parse(" leaky_bucket "),
            Ok(Algorithm::LeakyBucket)
        );
        assert_eq!(
            Algorithm::parse("Token_Bucket"),
            Err(AlgorithmError::Unknown("Token_Bucket".to_owned()))
        );
        assert_eq!(
            Algorithm::parse("calendar"),
            Err(AlgorithmError::NotARate(Algorithm::Calendar))
        );
        assert_eq!(
            AlgorithmError::Unknown("gcra".to_owned()).to_string(),
            "unknown algorithm `gcra`: expected sliding_log, fixed_window, sliding_window, token_bucket or \
             leaky_bucket"
        );
    }
}
