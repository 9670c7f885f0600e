//! How much a call matters ([`Priority`]), and the shares of a limit kept for the calls that matter more
//! ([`Reserves`]): a call of priority p must leave free the largest share kept for a priority above p, so
//! that a limit of 100 with `reserve(Critical, 20)` lets calls below `Critical` fill 80 and `Critical` calls
//! all 100. Every algorithm decides it in the same step as its count (see `algorithm::Terms::kept`).

use std::fmt;
use std::str::FromStr;

use crate::parse::ParseError;

/// How much a call matters when its limit fills up: `Critical > High > Normal > Low`.
///
/// A call says nothing and is [`Normal`](Priority::Normal). A [`Rule::reserve`](crate::Rule::reserve) keeps a
/// share of the limit for the calls of a priority and above; calls below it fill the rest. See
/// `guide::priorities`.
///
/// ```
/// use limiter_runtime::Priority;
///
/// assert!(Priority::Critical > Priority::High && Priority::Normal > Priority::Low);
/// assert_eq!(Priority::default(), Priority::Normal);
/// assert_eq!("critical".parse::<Priority>(), Ok(Priority::Critical));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum Priority {
    /// Matters least: the first to be refused (a batch export, a crawler).
    Low,
    /// Every call that says nothing.
    #[default]
    Normal,
    /// Matters more than most (a paying tenant's call, an interactive request).
    High,
    /// Matters most (a checkout, a health check): refused last.
    Critical,
}

impl Priority {
    /// Every priority, from the lowest.
    pub const ALL: [Priority; 4] = [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];

    /// Returns its name as the attribute, the environment and the metrics spell it: `low`, `normal`, `high` or
    /// `critical` (`limiter_grammar::priority::NAMES`).
    pub const fn as_str(self) -> &'static str {
        self.grammar().name()
    }

    /// Returns it as the grammar the attribute and the runtime read names with knows it.
    pub(crate) const fn grammar(self) -> limiter_grammar::Priority {
        match self {
            Priority::Low => limiter_grammar::Priority::Low,
            Priority::Normal => limiter_grammar::Priority::Normal,
            Priority::High => limiter_grammar::Priority::High,
            Priority::Critical => limiter_grammar::Priority::Critical,
        }
    }

    /// Returns the priority the grammar read.
    pub(crate) const fn from_grammar(priority: limiter_grammar::Priority) -> Priority {
        match priority {
            limiter_grammar::Priority::Low => Priority::Low,
            limiter_grammar::Priority::Normal => Priority::Normal,
            limiter_grammar::Priority::High => Priority::High,
            limiter_grammar::Priority::Critical => Priority::Critical,
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Priority {
    type Err = ParseError;

    /// Parses a priority by its name ([`as_str`](Priority::as_str)), in any ASCII case, as the attribute reads
    /// `priority = "..."` (see `limiter_grammar::priority`).
    fn from_str(name: &str) -> Result<Priority, ParseError> {
        limiter_grammar::Priority::parse(name)
            .map(Priority::from_grammar)
            .map_err(|_| ParseError::new("priority", name, limiter_grammar::priority::EXPECTED))
    }
}

/// The shares of a limit kept for the calls of a priority and above, in percent: for `Normal`, `High` and
/// `Critical` (a share kept for `Low` and above is kept for every call: none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(crate) struct Reserves([u8; 3]);

impl Reserves {
    /// Keeps nothing for anyone.
    pub(crate) const NONE: Reserves = Reserves([0; 3]);

    /// Returns these shares, with `percent` (at most 100) kept for `priority` and above.
    pub(crate) const fn with(mut self, priority: Priority, percent: u8) -> Reserves {
        let percent = if percent > 100 { 100 } else { percent };
        match priority {
            Priority::Low => {}
            Priority::Normal => self.0[0] = percent,
            Priority::High => self.0[1] = percent,
            Priority::Critical => self.0[2] = percent,
        }
        self
    }

    /// Returns whether it keeps nothing for anyone.
    pub(crate) fn is_none(&self) -> bool {
        self.0 == [0; 3]
    }

    /// Returns the share (percent) a call of `priority` must leave free: the largest kept for a priority above it.
    #[inline]
    pub(crate) fn kept_percent(&self, priority: Priority) -> u8 {
        let above = match priority {
            Priority::Low => &self.0[..],
            Priority::Normal => &self.0[1..],
            Priority::High => &self.0[2..],
            Priority::Critical => &[],
        };
        above.iter().copied().max().unwrap_or(0)
    }

    /// Returns the units of `capacity` a call of `priority` must leave free: its share, rounded up (a share kept is
    /// kept whole: 20% of 7 keeps 2).
    #[inline]
    pub(crate) fn kept(&self, priority: Priority, capacity: u64) -> u64 {
        match self.kept_percent(priority) {
            0 => 0,
            percent => {
                let kept = (u128::from(capacity) * u128::from(percent)).div_ceil(100);
                u64::try_from(kept).unwrap_or(capacity)
            }
        }
    }

    /// Returns each share set, from the highest priority: `(Critical, 20)`, `(High, 30)`.
    pub(crate) fn each(&self) -> impl Iterator<Item = (Priority, u8)> + '_ {
        [Priority::Critical, Priority::High, Priority::Normal]
            .into_iter()
            .zip(self.0.iter().rev().copied())
            .filter(|&(_, percent)| percent > 0)
    }
}

impl fmt::Display for Reserves {
    /// Writes the shares as the attribute and the environment take them: `critical 20%, high 30%` (`none` for
    /// none).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("none");
        }
        for (i, (priority, percent)) in self.each().enumerate() {
            let comma = if i > 0 { ", " } else { "" };
            write!(f, "{comma}{priority} {percent}%")?;
        }
        Ok(())
    }
}

/// What is wrong with a text of reserves.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("reserve `{text}`: {problem}")]
pub(crate) struct ReservesError {
    text: String,
    problem: limiter_grammar::reserve::ReserveError,
}

impl FromStr for Reserves {
    type Err = ReservesError;

    /// Parses `critical 20%, high 30%` (or `none`), as the attribute reads `reserve = "..."`: a priority above
    /// `low` and a whole percent up to 100 each, each priority at most once (see `limiter_grammar::reserve`).
    fn from_str(text: &str) -> Result<Reserves, ReservesError> {
        let shares = limiter_grammar::reserve::parse(text).map_err(|problem| ReservesError {
            text: text.to_owned(),
            problem,
        })?;
        Ok(shares.into_iter().fold(Reserves::NONE, |reserves, share| {
            reserves.with(Priority::from_grammar(share.priority), share.percent)
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserves_nest_and_keep_whole_units() {
        let reserves = Reserves::default()
            .with(Priority::Critical, 10)
            .with(Priority::High, 30);
        let kept = Priority::ALL.map(|priority| reserves.kept(priority, 100));
        assert_eq!(kept, [30, 30, 10, 0]);
        // A share kept is kept whole: 20% of 7 is 2 units, not 1.
        let critical = Reserves::default().with(Priority::Critical, 20);
        assert_eq!(critical.kept(Priority::Normal, 7), 2);
        assert_eq!(critical.kept(Priority::Critical, 7), 0);
        assert_eq!(Reserves::default().kept(Priority::Low, 7), 0);
        assert_eq!(critical.kept(Priority::Low, u64::MAX), u64::MAX / 5);
    }

    #[test]
    fn reserves_read_and_write_alike() {
        let reserves: Reserves = "critical 20%, high 30%".parse().unwrap();
        assert_eq!(reserves.to_string(), "critical 20%, high 30%");
        assert_eq!("none".parse::<Reserves>(), Ok(Reserves::default()));
        for (bad, says) in [
            (
                "critical 120%",
                "more than the whole limit: a share is a whole percent",
            ),
            ("urgent 20%", "unknown priority `urgent`"),
            ("low 20%", "kept for every call"),
            ("critical 20%, critical 5%", "given two shares"),
            ("critical", "has no share"),
            ("critical 20", "has no `%`"),
        ] {
            let error = bad.parse::<Reserves>().unwrap_err().to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }
}
