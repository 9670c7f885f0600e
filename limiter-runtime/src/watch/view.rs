//! What an operator reads: a key's state ([`Inspection`]), the most limited keys ([`TopKey`]), and the
//! service at a glance ([`Overview`]: its policies and its nodes).

use std::time::Duration;

/// One limit's state for one key, read without charging it ([`Limiter::inspect`](crate::Limiter::inspect)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Inspection {
    /// The limit's policy name.
    pub policy: String,
    /// The key, as the key expression made it (without the store prefix).
    pub key: String,
    /// The limit: units per window, or calls at once for a limit in flight.
    pub limit: u64,
    /// The window (a permit's time to live, for a limit in flight).
    pub window: Duration,
    /// Units counted now, of what a fresh key holds: of `limit` (permits held, for a limit in flight), of a
    /// token bucket's burst, of the slots a leaky bucket's `max_wait` allows.
    pub used: u64,
    /// Units a call could take now: a call of the whole limit, `Critical`'s (what each priority below it may
    /// take, where the limit keeps shares, is in [`ceilings`](Inspection::ceilings)).
    pub remaining: u64,
    /// Until a call of one unit fits again: zero while one does (and for a limit in flight, whose permits
    /// come back when their holders say).
    pub retry_after: Duration,
    /// Until the limit is back to its full quota, if nothing else happens (zero when nothing is used).
    pub reset_after: Duration,
    /// Whether the limit counts calls in flight ([`Rule::in_flight`](crate::Rule::in_flight)).
    pub in_flight: bool,
    /// Whether this node refuses calls on the key without asking Redis, from a denial Redis gave
    /// (always `false` in memory).
    pub deny_cached: bool,
    /// When it was read, on the store's clock, since the Unix epoch (Redis's `TIME` for Redis).
    pub read_at: Duration,
    /// What is left of the key's block (a [`Penalty`](crate::Penalty)'s or a [ban](crate::Limiter::ban)):
    /// zero when none is in force.
    pub blocked_for: Duration,
    /// Whether the block in force is an operator's ban.
    pub banned: bool,
    /// Whether the block in force is a pause an upstream asked for ([`Turn::answered`](crate::Turn::answered)),
    /// and its cause: the status it answered (429, 503), or 0 when its quota fields said nothing was left.
    pub paused: Option<u16>,
    /// The rate the fleet learned for the key from its upstream's answers, when they lowered it below
    /// `limit`: in thousandths of `limit` (900 after a refusal: 9/10 of it). Turns space their slots for it
    /// (see [`Turn::answered`](crate::Turn::answered)).
    pub learned: Option<u32>,
    /// The key's offences its penalty still counts (each makes the next block longer, until forgiven).
    pub offences: u32,
    /// What each priority may use, when the rule keeps shares for the higher ones
    /// ([`Rule::reserve`](crate::Rule::reserve)): one per priority, from the highest; empty when it keeps none.
    pub ceilings: Vec<Ceiling>,
}

/// What calls of one priority may use of a limit that keeps shares for the priorities above it, in the units of
/// [`Inspection::used`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ceiling {
    /// The calls' priority.
    pub priority: crate::Priority,
    /// The most they may see used: the limit less the shares kept above them.
    pub ceiling: u64,
    /// What a call of theirs could take now.
    pub remaining: u64,
}

/// A key's block in force, an operator's ban or a penalty's ([`Limiter::bans`](crate::Limiter::bans)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Ban {
    /// The policy's name (as this node knows it; else the one derived from its prefix).
    pub policy: String,
    /// The store key's prefix.
    pub prefix: String,
    /// The key, as the key expression made it (without the store prefix): what [`Limiter::unban`](crate::Limiter::unban)
    /// takes. (A key longer than the store keeps whole reads as its shortened copy and digest.)
    pub key: String,
    /// What is left of it.
    pub remaining: Duration,
    /// Whether an operator banned the key ([`Limiter::ban`](crate::Limiter::ban)); else a penalty blocked it,
    /// or an upstream paused it.
    pub banned: bool,
    /// The status an upstream answered when it paused the key ([`Turn::answered`](crate::Turn::answered)):
    /// 429, 503, or 0 for quota fields that left nothing; `None` for a ban or a penalty's block.
    pub paused: Option<u16>,
    /// The key's offences its penalty still counts.
    pub offences: u32,
}

/// A key among the most refused of a policy, over the last minute, for the whole service
/// ([`Limiter::top_limited`](crate::Limiter::top_limited)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TopKey {
    /// The policy's name.
    pub policy: String,
    /// The key, as the key expression made it (without the store prefix).
    pub key: String,
    /// Its refusals over the last minute, summed over the nodes: never fewer than it had. Each node reports
    /// its 100 most refused keys and the most any other key may have had there; a node that did not list the
    /// key counts that most. So the sum is above the truth by at most that, for each such node (and by what a
    /// node's bounded summary forgot).
    pub refused: u64,
}

/// One policy of the service, over the last minute ([`Overview::policies`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PolicyView {
    /// Its name.
    pub policy: String,
    /// Its store prefix.
    pub prefix: String,
    /// Decisions per second, over the last second or so, summed over the nodes.
    pub decided_per_s: f64,
    /// Refusals per second, likewise: the limit reached, and calls refused because Redis could not decide
    /// and the rule fails closed ([`OnError::Closed`](crate::OnError::Closed)).
    pub refused_per_s: f64,
    /// Decisions over the last minute.
    pub decided: u64,
    /// Refusals over the last minute, of either kind (those of a rule failing closed are not counted against
    /// their keys: [`TopKey`] is of the limit reached).
    pub refused: u64,
    /// The keys most decided over the last minute, heaviest first, with their decisions: an estimate, from one
    /// decision in 16 (each weighing 16), never above `decided`.
    pub busiest: Vec<(String, u64)>,
}

impl PolicyView {
    /// Returns a policy known but not decided over the last minute.
    pub(crate) fn idle(policy: String, prefix: String) -> PolicyView {
        PolicyView {
            policy,
            prefix,
            decided_per_s: 0.0,
            refused_per_s: 0.0,
            decided: 0,
            refused: 0,
            busiest: Vec::new(),
        }
    }
}

/// One node (runtime) of the service, as it last reported ([`Overview::nodes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeView {
    /// Its id: the process id and a random suffix.
    pub node: String,
    /// Whether it is this node.
    pub this: bool,
    /// Whether it counts in Redis (else in memory: it is alone).
    pub redis: bool,
    /// Whether its breaker is open: Redis failing, decided by each limit's failure policy.
    pub breaker_open: bool,
    /// Its decisions made in degraded mode since it started.
    pub degraded: u64,
    /// Whether limiting is on there.
    pub enabled: bool,
    /// How long ago it reported (zero for this node: read now).
    pub seen_ago: Duration,
    /// The version of the limits file in force there (the first 8 hex digits of its text's SHA-1), if it
    /// reads one: a node still on an older version than the others shows here.
    pub limits: Option<String>,
    /// Why the last limits file offered to it was refused (file, line and column, and what was expected), if
    /// it was: it keeps the version above.
    pub limits_refused: Option<String>,
}

/// The service at a glance ([`Limiter::overview`](crate::Limiter::overview)): its policies and its nodes.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Overview {
    /// Each policy decided over the last minute, by name.
    pub policies: Vec<PolicyView>,
    /// Each node that reported within its heartbeat's lifetime, this one first.
    pub nodes: Vec<NodeView>,
    /// Whether the view is this node's alone, Redis not answering (for a Redis limiter).
    pub partial: bool,
}
