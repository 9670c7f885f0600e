//! Errors that read like sentences: the rejection users return, and the runtime's own failures.

pub(crate) mod limits;

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use crate::key::StoreKey;
use crate::policy::{Applied, PolicyName};
use crate::Decision;

/// A call was rejected by a rate limit.
///
/// Annotated functions return it through their own error type (`E: From<RateLimited>`); its `Display` is the
/// limit's message. It carries what a caller needs to answer well: the key, the limit, what remains, and when
/// to retry.
///
/// # Example
///
/// ```
/// use limiter_runtime::RateLimited;
///
/// #[derive(Debug)]
/// enum AppError {
///     TooManyRequests(RateLimited),
/// }
///
/// impl From<RateLimited> for AppError {
///     fn from(e: RateLimited) -> Self {
///         AppError::TooManyRequests(e)
///     }
/// }
/// ```
///
/// One pointer wide (what it carries is boxed, made only on a rejection), so that a `Result` carrying it stays
/// small on the path where nothing is rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimited(Box<Rejection>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rejection {
    message: Cow<'static, str>,
    /// The limit's policy name.
    policy: PolicyName,
    /// The plan or override that set the limit's values.
    applied: Applied,
    /// When the call had several limits: each one's state, in the order written.
    limits: Vec<LimitState>,
    /// Whether the quota headers advertise the limit's decision (see `LimitState::advertised`).
    advertised: bool,
    /// The limit's prefix, then the key.
    key: StoreKey,
    decision: Decision,
    reason: Reason,
}

/// One limit of a rejected call of several.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LimitState {
    pub(crate) policy: PolicyName,
    pub(crate) applied: Applied,
    pub(crate) decision: Decision,
    /// Whether the quota headers advertise it: it applies to the call (not a shadow limit, not one the call
    /// skipped) and its decision was counted (not made by `on_error = open | closed` while Redis failed).
    pub(crate) advertised: bool,
}

/// What a rejection asks of its caller: to come back later (429), to wait out a limiter that cannot decide
/// (503), never to send this call again as it is (413), or nothing, the server being at fault (500). The
/// response a refusal becomes (its status, and whether it has a `Retry-After`) is decided by this alone.
///
/// Beside it, each limit's [`Verdict`](crate::Verdict) says why it was decided so, finer (a refusal for the
/// limit reached, a block, a share kept for a higher priority are all [`Limited`](Reason::Limited)), for the
/// metrics, traces and operators' views: a verdict explains a decision, a reason answers a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The limit was reached (HTTP 429): Redis said so, or, while it could not decide, this node's share of
    /// the limit ([`OnError::Local`](crate::OnError::Local); the decision is
    /// [`degraded`](crate::Decision::degraded)).
    Limited,
    /// The store could not decide and the rule fails closed ([`OnError::Closed`](crate::OnError::Closed)):
    /// not the caller's fault (HTTP 503).
    Unavailable,
    /// The call weighs more than the limit can ever admit (a cost above `max`, or above a token bucket's
    /// capacity): no wait admits it, so the rejection has no retry time (HTTP 413, with no `Retry-After`). A
    /// limit of zero admits no call of any weight: it is [`Misconfigured`](Reason::Misconfigured).
    TooLarge,
    /// The limit is one of zero (`Rule::max(0)`, `Rule::in_flight(0)`, a token bucket's `Rule::burst(0)`),
    /// which the attribute refuses at compile time and `LIMITER_MAX=0` at start: the server's mistake, not the
    /// caller's, so the call is refused before any store is asked, and nothing is charged (HTTP 500, with no
    /// `Retry-After`; gRPC `INTERNAL`). The message names the limit's policy and the fault; the log tells
    /// its prefix once, at error level.
    Misconfigured,
}

/// The message of a rejection for [`Reason::Unavailable`].
pub(crate) const UNAVAILABLE: &str = "rate limiting is unavailable; please try again later";

impl RateLimited {
    /// Creates the rejection of `decision`, for `reason`: an unavailable limiter answers with its own message, not the
    /// limit's.
    pub(crate) fn new(
        message: Cow<'static, str>,
        (policy, applied): (PolicyName, Applied),
        key: StoreKey,
        decision: Decision,
        advertised: bool,
        limits: Vec<LimitState>,
        reason: Reason,
    ) -> Self {
        let message = match reason {
            Reason::Unavailable => Cow::Borrowed(UNAVAILABLE),
            Reason::Limited | Reason::TooLarge | Reason::Misconfigured => message,
        };
        RateLimited(Box::new(Rejection {
            message,
            policy,
            applied,
            limits,
            advertised,
            key,
            decision,
            reason,
        }))
    }

    /// Returns the message of the limit that rejected the call; for an unavailable limiter, or a misconfigured
    /// limit, the runtime's own sentence saying so.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Returns the full store key: prefix followed by the key (long keys end in a digest, see the crate docs).
    pub fn key(&self) -> &str {
        &self.0.key
    }

    /// Returns the limit's prefix: the start of [`key`](RateLimited::key), naming the limit (and its HTTP policy).
    pub fn prefix(&self) -> &str {
        self.0.key.parts().prefix
    }

    /// Returns the name of the limit's policy, as the HTTP quota headers call it: its `name`, else `limit-` and the
    /// first 8 hex digits of the SHA-1 of its prefix (`limit-d357682f` for `rate_limit:emp:`), which is stable
    /// and distinct for distinct prefixes without showing the prefix.
    pub fn policy(&self) -> &str {
        &self.0.policy
    }

    /// Returns the plan the call was on ([`Plan`](crate::Plan)), if the limit that refused it took its values
    /// from one of its policy's plans.
    pub fn plan(&self) -> Option<&str> {
        self.0.applied.plan.as_deref()
    }

    /// Returns whether a run-time [`Override`](crate::Override) (of the key, a pattern of keys or the policy) set
    /// any of the values of the limit that refused the call.
    pub fn overridden(&self) -> bool {
        self.0.applied.overridden
    }

    /// Returns every limit of the call, in the order written, with its policy name and state: the one that refused it
    /// (this rejection's own) and those that did not (which charged nothing either). One for a call with one
    /// limit.
    pub fn limits(&self) -> impl Iterator<Item = (&str, &Decision)> {
        self.states()
            .map(|(policy, decision, _, _)| (policy, decision))
    }

    /// Returns the limits a response advertises in its quota headers: those that apply to the call (not a shadow
    /// limit, not one it skipped) whose decisions were counted (not made by `on_error = open | closed`
    /// while Redis failed: the count is unknown).
    #[cfg_attr(not(any(feature = "axum", feature = "tower")), allow(dead_code))]
    pub(crate) fn advertised(&self) -> impl Iterator<Item = (&str, &Decision, &Applied)> {
        self.states()
            .filter(|(_, _, advertised, _)| *advertised)
            .map(|(policy, decision, _, applied)| (policy, decision, applied))
    }

    /// Returns the advertised policies that refused the call.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn refusing(&self) -> impl Iterator<Item = &str> {
        self.advertised()
            .filter(|(_, decision, _)| !decision.allowed)
            .map(|(policy, _, _)| policy)
    }

    /// Returns each limit's policy, state, and whether it is advertised.
    fn states(&self) -> impl Iterator<Item = (&str, &Decision, bool, &Applied)> {
        let own = self.0.limits.is_empty().then_some((
            &*self.0.policy,
            &self.0.decision,
            self.0.advertised,
            &self.0.applied,
        ));
        own.into_iter().chain(self.0.limits.iter().map(|limit| {
            let state = (&*limit.policy, &limit.decision, limit.advertised);
            (state.0, state.1, state.2, &limit.applied)
        }))
    }

    /// Returns the admissions per window.
    pub fn limit(&self) -> u64 {
        self.0.decision.limit
    }

    /// Returns the admissions left in the window.
    pub fn remaining(&self) -> u64 {
        self.0.decision.remaining
    }

    /// Returns how long until the same call would be admitted if nothing else happened; zero when no wait admits it
    /// ([`Reason::TooLarge`], [`Reason::Misconfigured`]).
    pub fn retry_after(&self) -> Duration {
        self.0.decision.retry_after
    }

    /// Returns how long until the limit is back to its full quota if nothing else happened.
    pub fn reset_after(&self) -> Duration {
        self.0.decision.reset_after
    }

    /// Returns why the call was rejected.
    pub fn reason(&self) -> Reason {
        self.0.reason
    }

    /// Returns the whole decision behind the rejection.
    pub fn decision(&self) -> &Decision {
        &self.0.decision
    }
}

impl fmt::Display for RateLimited {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for RateLimited {}

/// The runtime could not be set up as asked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The Redis URL does not parse.
    #[error("the Redis URL {url:?} is invalid: {source}")]
    InvalidRedisUrl {
        /// The URL as given, any password written `***`.
        url: String,
        /// What the Redis client said of it.
        #[source]
        source: redis::RedisError,
    },
    /// An environment variable holds a value the limiter cannot read.
    #[error("{name}={value:?} is invalid: expected {expected}")]
    InvalidEnv {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it should look like.
        expected: &'static str,
    },
    /// The Redis setup an environment variable gives cannot work (`LIMITER_REDIS_URL` names a URL the limiter
    /// cannot use, say `rediss://` without the `tls` feature).
    #[error("{name} cannot be used: {source}")]
    InvalidEnvSetup {
        /// The variable.
        name: &'static str,
        /// Why the setup it gives cannot work.
        #[source]
        source: Box<Error>,
    },
    /// An environment variable names a file the limiter cannot use (`LIMITER_REDIS_CA`, ...).
    #[error("{name}={path:?} cannot be used: {reason}")]
    InvalidEnvFile {
        /// The variable.
        name: &'static str,
        /// The path it holds.
        path: String,
        /// What is wrong with the file.
        reason: String,
    },
    /// Redis refused or failed a change (an override).
    #[error("Redis could not apply the change: {0}")]
    Redis(#[source] redis::RedisError),
    /// Redis did not answer a change (an override) in time; it may or may not have been applied.
    #[error("Redis did not answer within {0:?}; the change may or may not have been applied")]
    Timeout(Duration),
    /// The Redis setup cannot work as given: Redis Cluster or Sentinel with nothing to start from (no node
    /// URL, no master name), or TLS settings that cannot be used (`rediss://` without the `tls` feature, a CA
    /// that holds no certificate, a CA with no `rediss://` URL to use it).
    #[error("{0}")]
    InvalidRedisSetup(String),
    /// Redis cannot be used as set up: it refused or did not answer the connection, refused the password,
    /// the database, or the scripts ([`Limiter::ready`](crate::Limiter::ready) says so at start-up).
    #[error("Redis ({redis}) is not ready: {cause}")]
    NotReady {
        /// Where Redis is, without a password.
        redis: String,
        /// What failed.
        cause: String,
    },
    /// Redis did not answer an operator's read ([`Limiter::inspect`](crate::Limiter::inspect),
    /// [`Limiter::top_limited`](crate::Limiter::top_limited)) within the deadline, or failed it.
    #[error("Redis could not answer the read: {0}")]
    Read(String),
    /// An admin token the admin door refuses (`admin::Builder::build`, feature `admin`): none
    /// given for the operator, one shorter than 16 characters, or a viewer's that is the operator's. Its API
    /// changes limits for the whole service.
    #[error("the admin {role} token is refused: {reason}")]
    InvalidAdminToken {
        /// Whose token: `operator` or `viewer`.
        role: &'static str,
        /// Why, as a sentence.
        reason: String,
    },
    /// An override no runtime takes ([`Limiter::set_override`](crate::Limiter::set_override)): a `max` of zero,
    /// which would refuse every call (as `max = 0` on the attribute is a compile error), or a window shorter
    /// than a microsecond. Nothing was changed.
    #[error("the override of {target} is invalid: {reason}")]
    InvalidOverride {
        /// What it overrides: `prefix "p:"`, or `key "k" of prefix "p:"`.
        target: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The limits file cannot be used ([`LimiterBuilder::limits_file`](crate::LimiterBuilder::limits_file),
    /// `LIMITER_LIMITS`, [`Limiter::push_limits`](crate::Limiter::push_limits)): the error says where in it
    /// (file, line and column) and what was expected. Nothing was changed: the limits in force stay.
    #[error(transparent)]
    Limits(#[from] limits::LimitsError),
    /// No node has used a policy of that name or prefix ([`Limiter::policy`](crate::Limiter::policy)): a
    /// policy is known once a call of it has been decided, on this node or on another one that shares the
    /// store.
    #[error("no node has used the policy {policy:?} (by name or by prefix)")]
    UnknownPolicy {
        /// The name or prefix asked for.
        policy: String,
    },
    /// An operator's read ([`Limiter::inspect`](crate::Limiter::inspect), [`Limiter::usage`](crate::Limiter::usage))
    /// of a limit of zero, which no call can pass (its calls are refused with
    /// [`Reason::Misconfigured`]): nothing was read. The sentence names its prefix and its fault.
    #[error("{0}")]
    Misconfigured(String),
    /// A time zone name that is not in the zone data ([`Zone::get`](crate::Zone::get)).
    #[error("unknown time zone {0:?}: expected an IANA name, such as \"Europe/Berlin\" or \"America/New_York\"")]
    UnknownZone(String),
    /// A limiter was already installed as the shared runtime.
    #[error("a limiter is already installed as the shared runtime; install one once, at start-up")]
    AlreadyInstalled,
}

/// Why a store could not decide: the cause behind a degraded decision.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum BackendError {
    #[error("Redis did not answer within the {0:?} deadline")]
    Timeout(Duration),
    /// The connection could not be made in time (a connection attempt's own bound, not a decision's).
    #[error("Redis could not be connected to within {0:?}")]
    Connect(Duration),
    #[error("Redis failed: {0}")]
    Redis(#[from] redis::RedisError),
    /// What Redis answered, written out.
    #[error("Redis answered {0}, which is not a decision")]
    Reply(String),
}

impl BackendError {
    /// Returns whether Redis answered, with a fault of the call's own keys rather than of Redis: a key holding a
    /// value of another type (`WRONGTYPE`), an error raised in the script (a value it cannot read, a calendar
    /// period out of reach), or a reply that is not a decision. Such a fault is that call's, decided by its
    /// `on_error`; it never counts toward the breaker, which is for Redis itself failing (no connection, no
    /// answer in time, an error of the whole server: `LOADING`, `BUSY`, `OOM`, `READONLY`, ...).
    pub(crate) fn is_the_keys(&self) -> bool {
        match self {
            BackendError::Reply(_) => true,
            BackendError::Redis(error) => match error.code() {
                Some("WRONGTYPE") => true,
                Some("ERR") => error.detail().is_some_and(|detail| {
                    detail.contains("script") || detail.starts_with("calendar:")
                }),
                _ => false,
            },
            BackendError::Timeout(_) | BackendError::Connect(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::BackendError;

    /// Returns the error Redis answers with `line` (the RESP error line, without its `-`).
    fn answered(line: &str) -> BackendError {
        let reply = redis::parse_redis_value(format!("-{line}\r\n").as_bytes()).unwrap();
        BackendError::Redis(reply.extract_error().unwrap_err())
    }

    #[test]
    fn a_keys_own_fault_is_told_from_redis_failing() {
        for keys in [
            "WRONGTYPE Operation against a key holding the wrong kind of value script: 1f0e, on @user_script:37.",
            "ERR user_script:12: attempt to compare nil with number script: 1f0e, on @user_script:12.",
            "ERR calendar: the periods sent all ended before now: the client clock is a period behind",
        ] {
            assert!(answered(keys).is_the_keys(), "{keys}");
        }
        assert!(BackendError::Reply("nil".into()).is_the_keys());
        for redis in [
            "LOADING Redis is loading the dataset in memory",
            "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.",
            "OOM command not allowed when used memory > 'maxmemory'.",
            "READONLY You can't write against a read only replica.",
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
            "ERR max number of clients reached",
            "NOPERM this user has no permissions to run the 'evalsha' command",
            "CLUSTERDOWN The cluster is down",
        ] {
            assert!(!answered(redis).is_the_keys(), "{redis}");
        }
        assert!(!BackendError::Timeout(Duration::from_millis(50)).is_the_keys());
        assert!(!BackendError::Connect(Duration::from_millis(50)).is_the_keys());
    }
}
