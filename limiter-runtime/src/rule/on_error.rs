//! A rule's failure policy: what decides its calls when Redis cannot.

use std::fmt;
use std::str::FromStr;

use crate::parse::ParseError;

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
    /// [`LimiterBuilder::instance_group`](crate::LimiterBuilder::instance_group)): a last line of defence.
    /// A call over the share is rejected as a reached limit ([`Reason::Limited`](crate::Reason::Limited),
    /// with the limit's message; HTTP 429).
    Local,
}

impl OnError {
    /// Every policy.
    pub const ALL: [OnError; 3] = [OnError::Open, OnError::Closed, OnError::Local];

    /// Returns its name as the attribute spells it (`on_error = closed`), and as `FromStr` reads it.
    pub const fn name(self) -> &'static str {
        match self {
            OnError::Open => "open",
            OnError::Closed => "closed",
            OnError::Local => "local",
        }
    }
}

impl fmt::Display for OnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for OnError {
    type Err = ParseError;

    /// Parses a policy by its [`name`](OnError::name).
    fn from_str(name: &str) -> Result<OnError, ParseError> {
        OnError::ALL
            .into_iter()
            .find(|policy| policy.name() == name)
            .ok_or_else(|| ParseError::new("on_error", name, "open, closed or local"))
    }
}
