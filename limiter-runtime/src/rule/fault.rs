//! A rule no call can pass: a limit of zero. The attribute refuses one at compile time (`max = 0`,
//! `in_flight = 0`, `burst = 0`) and the environment at start (`LIMITER_MAX=0`); a rule built by hand is
//! refused as the server's mistake when a call of it is built ([`Fault::of`], from the call's terms, the
//! run-time overrides applied), before any store is asked: every call of it is refused as misconfigured
//! ([`Reason::Misconfigured`](crate::Reason::Misconfigured), HTTP 500), never decided, and its prefix is told
//! once in the log ([`Told`]).

use std::collections::HashSet;
use std::sync::{Mutex, PoisonError};

use crate::algorithm::{Algorithm, Terms};

/// What makes a limit one that no call can pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// A `max` of 0: no call at all per window.
    Max,
    /// An `in_flight` of 0: no call at once.
    InFlight,
    /// A token bucket's `burst` of 0: a bucket that holds nothing.
    Burst,
}

impl Fault {
    /// Returns the fault of a limit of `algorithm` whose call asks `terms` (the overrides in force applied),
    /// if it has one.
    #[inline]
    pub(crate) fn of(algorithm: Algorithm, terms: &Terms) -> Option<Fault> {
        match algorithm {
            _ if terms.max != 0 => {
                (algorithm == Algorithm::TokenBucket && terms.burst == 0).then_some(Fault::Burst)
            }
            Algorithm::InFlight => Some(Fault::InFlight),
            _ => Some(Fault::Max),
        }
    }

    /// Returns the sentence that says what is wrong with the limit called `limit` (its policy name, or its
    /// prefix): the message of its refusals, and, of its prefix, of the log.
    pub(crate) fn sentence(self, limit: &str) -> String {
        match self {
            Fault::Max => format!(
                "the limit `{limit}` has a max of 0: a limit admits at least one call (the attribute and \
                 LIMITER_MAX refuse 0 too)"
            ),
            Fault::InFlight => format!(
                "the limit `{limit}` has an in_flight of 0: a limit admits at least one call at once (the \
                 attribute refuses 0 too)"
            ),
            Fault::Burst => format!(
                "the limit `{limit}` has a burst of 0: a token bucket holds at least one unit (the attribute \
                 refuses 0 too)"
            ),
        }
    }
}

/// The prefixes of misconfigured limits told of in the log: each once, at most [`MOST_TOLD`] of them (a
/// prefix made per tenant would otherwise grow it without end; the metrics still count every refusal).
#[derive(Debug, Default)]
pub(crate) struct Told {
    prefixes: Mutex<HashSet<Box<str>>>,
}

/// The most prefixes told of.
const MOST_TOLD: usize = 1_024;

impl Told {
    /// Tells the log, at error level, that the limit under `prefix` (named `policy`) has `fault`, unless it
    /// was told already.
    #[cold]
    pub(crate) fn tell(&self, prefix: &str, policy: &str, fault: Fault) {
        {
            let mut told = self.prefixes.lock().unwrap_or_else(PoisonError::into_inner);
            if told.len() >= MOST_TOLD || told.contains(prefix) {
                return;
            }
            told.insert(prefix.into());
        }
        tracing::error!(
            prefix,
            policy,
            "rate limiter: {}; every call of it is refused as misconfigured (HTTP 500) until the rule is \
             fixed (told once per prefix)",
            fault.sentence(prefix)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(max: u64, burst: u64) -> Terms {
        Terms {
            window: 1_000_000,
            max,
            cost: 1,
            burst,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        }
    }

    /// Checks that only a limit of zero is a fault: a `max` of 0 (of calls in flight: an `in_flight` of 0),
    /// or a token bucket's `burst` of 0; a `burst` of 0 means nothing to another algorithm.
    #[test]
    fn a_limit_of_zero_is_the_only_fault() {
        assert_eq!(
            Fault::of(Algorithm::SlidingLog, &terms(0, 0)),
            Some(Fault::Max)
        );
        assert_eq!(
            Fault::of(Algorithm::TokenBucket, &terms(0, 5)),
            Some(Fault::Max)
        );
        assert_eq!(
            Fault::of(Algorithm::InFlight, &terms(0, 0)),
            Some(Fault::InFlight)
        );
        assert_eq!(
            Fault::of(Algorithm::TokenBucket, &terms(5, 0)),
            Some(Fault::Burst)
        );
        assert_eq!(Fault::of(Algorithm::FixedWindow, &terms(5, 0)), None);
        assert_eq!(Fault::of(Algorithm::TokenBucket, &terms(1, 1)), None);
        assert_eq!(
            Fault::Max.sentence("zero:"),
            "the limit `zero:` has a max of 0: a limit admits at least one call (the attribute and \
             LIMITER_MAX refuse 0 too)"
        );
    }
}
