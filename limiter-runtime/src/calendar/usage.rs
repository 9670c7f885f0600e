//! What a key has used of a quota, and when it starts again: [`Limiter::usage`](crate::Limiter::usage).

use std::time::Duration;

use super::{rfc3339, Zone};

/// A key's use of one limit, and when its quota starts again ([`Limiter::usage`](crate::Limiter::usage)):
/// for a calendar quota, at its period's end, written in the rule's zone.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// The limit's policy name.
    pub policy: String,
    /// The key, as the key expression made it (without the store prefix).
    pub key: String,
    /// The quota: units per period (or per window, for a rate).
    pub limit: u64,
    /// Units used in the current period.
    pub used: u64,
    /// Units left in it.
    pub remaining: u64,
    /// When the quota starts again, as RFC 3339: a calendar quota's period end in the rule's zone
    /// (`2026-12-01T00:00:00+01:00`); for a rate, when it is back to its full quota, in UTC.
    pub resets_at: String,
    /// Until then, on the store's clock.
    pub reset_after: Duration,
}

impl Usage {
    /// Builds the usage: `used` of `limit` units by `key` under `policy`, and `remaining`, read at `at` (µs since the
    /// Unix epoch, on the store's clock), the quota starting again `reset_after` (µs) later: written in `zone`.
    pub(crate) fn new(
        (policy, key): (String, String),
        (limit, used, remaining): (u64, u64, u64),
        at: u64,
        reset_after: u64,
        zone: &Zone,
    ) -> Usage {
        Usage {
            policy,
            key,
            limit,
            used,
            remaining,
            resets_at: rfc3339(at.saturating_add(reset_after), zone),
            reset_after: Duration::from_micros(reset_after),
        }
    }
}
