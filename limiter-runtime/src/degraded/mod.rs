//! Degraded mode: what decides when Redis fails or is too slow, and how the runtime finds its way back.
//!
//! - Every Redis decision has a deadline; missing it is a failure, never retried (it may have been applied).
//! - The [`breaker`] stops calling Redis after repeated failures, so a dead Redis costs no latency, and probes
//!   for recovery one call at a time.
//! - [`OnError`] says what decides meanwhile; `local` divides each limit by the live [`instances`] last seen.

pub(crate) mod breaker;
pub(crate) mod instances;

use std::time::Duration;

/// What decides a call when the store cannot: Redis failed, missed the deadline, or the breaker is open.
///
/// Set it for the whole limiter ([`LimiterBuilder::on_error`](crate::LimiterBuilder::on_error)), for one
/// rule ([`Rule::on_error`](crate::Rule::on_error)) or on the attribute (`on_error = closed`). Every
/// degraded decision has [`Decision::degraded`](crate::Decision::degraded) set and is counted in
/// [`Stats::degraded`](crate::Stats::degraded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum OnError {
    /// Let the call through (the default): limiting must never take the service down.
    #[default]
    Open,
    /// Reject the call with [`RateLimited`](crate::RateLimited) whose [`reason`](crate::RateLimited::reason) is
    /// [`Reason::Unavailable`](crate::Reason::Unavailable) (HTTP 503, not 429): for limits that protect
    /// something that must not be overrun.
    Closed,
    /// Decide in this process, with the same algorithm and rule, and this node's share of the limit:
    /// `ceil(max / live instances)`, the number of runtimes last seen sharing the Redis (see
    /// [`LimiterBuilder::instance_group`](crate::LimiterBuilder::instance_group)). The articles' "last line of
    /// defence".
    Local,
}

/// The breaker's thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BreakerConfig {
    /// Consecutive failures that open the breaker.
    pub(crate) failures: u32,
    /// While open, how often one call probes Redis.
    pub(crate) probe_every: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failures: 3,
            probe_every: Duration::from_millis(250),
        }
    }
}

/// A node's share of a limit of `max` shared by `instances` runtimes: `ceil(max / instances)`.
pub(crate) fn share(max: u64, instances: u64) -> u64 {
    max.div_ceil(instances.max(1))
}
