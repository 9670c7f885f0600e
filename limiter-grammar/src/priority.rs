//! Priorities: how much a call matters, by name, `low`, `normal`, `high` or `critical`, in any ASCII case.
//!
//! ```
//! use limiter_grammar::Priority;
//!
//! assert_eq!(Priority::parse("critical"), Ok(Priority::Critical));
//! assert_eq!(Priority::parse(" High "), Ok(Priority::High));
//! assert!(Priority::parse("urgent").is_err());
//! assert_eq!(Priority::Low.name(), "low");
//! ```

use std::fmt;
use std::ops::Range;

/// How much a call matters, from the lowest: the runtime's `Priority`, as its text names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Priority {
    /// `low`.
    Low,
    /// `normal`.
    Normal,
    /// `high`.
    High,
    /// `critical`.
    Critical,
}

/// The names of the priorities, from the lowest.
pub const NAMES: [&str; 4] = ["low", "normal", "high", "critical"];

/// The names of the priorities, from the highest, as the errors that name them list them.
pub const EXPECTED: &str = "critical, high, normal or low";

impl Priority {
    /// Every priority, from the lowest.
    pub const ALL: [Priority; 4] = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];

    /// Returns its name: `low`, `normal`, `high` or `critical`.
    pub const fn name(self) -> &'static str {
        NAMES[self as usize]
    }

    /// Parses a priority by its name, in any ASCII case (surrounding whitespace ignored).
    pub fn parse(text: &str) -> Result<Priority, PriorityError> {
        let name = text.trim();
        Priority::ALL
            .into_iter()
            .find(|priority| priority.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| PriorityError {
                name: name.to_owned(),
                range: {
                    let start = text.len() - text.trim_start().len();
                    start..start + name.len()
                },
            })
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no priority's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriorityError {
    /// The name, trimmed.
    pub name: String,
    /// Where it is in the input.
    pub range: Range<usize>,
}

impl fmt::Display for PriorityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown priority `{}`: expected {EXPECTED}", self.name)
    }
}

impl std::error::Error for PriorityError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that each priority reads back from its name, in any case, and that its place is its rank.
    #[test]
    fn names_read_back() {
        for priority in Priority::ALL {
            assert_eq!(Priority::parse(priority.name()), Ok(priority));
            let shouted = priority.name().to_ascii_uppercase();
            assert_eq!(Priority::parse(&shouted), Ok(priority));
        }
        assert!(Priority::Low < Priority::Normal && Priority::High < Priority::Critical);
        let error = Priority::parse("  urgent").unwrap_err();
        assert_eq!(error.range, 2..8);
        assert_eq!(
            error.to_string(),
            "unknown priority `urgent`: expected critical, high, normal or low"
        );
        assert!(Priority::parse("").is_err());
        assert!(Priority::parse("crit ical").is_err());
    }
}
