//! The error of reading a name of a kind (an algorithm, a failure policy) from text.

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
