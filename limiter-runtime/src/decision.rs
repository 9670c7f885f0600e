//! The answer to one call.

use std::time::Duration;

use crate::algorithm::{Outcome, Terms};

/// What the limiter decided for one call.
///
/// # Example
///
/// ```
/// use limiter_runtime::{Limiter, Rule};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = Limiter::in_memory();
/// let rule = Rule::new().max(2).window(Duration::from_secs(1));
/// let decision = limiter.check(&rule, "10.0.0.7").await;
/// assert!(decision.allowed);
/// assert_eq!((decision.limit, decision.remaining), (2, 1));
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Decision {
    /// Whether the call may go ahead.
    pub allowed: bool,
    /// The limit that applied: admissions per window; for a call that must leave free a share kept for the
    /// priorities above its own ([`Rule::reserve`](crate::Rule::reserve)), its own ceiling (`max` less that
    /// share), which `remaining` counts against.
    pub limit: u64,
    /// The window the limit applies to.
    pub window: Duration,
    /// Admissions left in the current window after this call.
    pub remaining: u64,
    /// When denied, how long until a call of the same cost would be admitted if nothing else happened;
    /// zero when allowed, and when no wait admits it (a cost above the limit, refused as
    /// [`Reason::TooLarge`](crate::Reason::TooLarge); a limit of zero, refused as
    /// [`Reason::Misconfigured`](crate::Reason::Misconfigured)).
    pub retry_after: Duration,
    /// How long until the limit is back to its full quota if nothing else happened.
    pub reset_after: Duration,
    /// How long the call must wait for its slot before going ahead: non-zero only for an admitted
    /// [`LeakyBucket`](crate::Algorithm::LeakyBucket) call with a `max_wait`. An annotated function with
    /// `mode = wait` (and [`Limiter::enforce`](crate::Limiter::enforce)) sleeps that long, then runs.
    pub delay: Duration,
    /// When the store decided, on its own clock, as a duration since the Unix epoch: Redis's `TIME` for the
    /// Redis store (the one clock every node shares), the limiter's [`Clock`](crate::Clock) in memory, this
    /// process's clock for a degraded decision.
    pub decided_at: Duration,
    /// Whether the store could not decide (Redis failed or was too slow) and the failure policy did.
    pub degraded: bool,
    /// Whether the limit counts calls in flight ([`Rule::in_flight`](crate::Rule::in_flight)), not a rate:
    /// `limit` is then the calls at once, `remaining` the permits left, `window` a permit's time to live, and
    /// `retry_after` and `reset_after` zero (when a permit comes back is its holder's to say).
    pub in_flight: bool,
    /// Why it was decided so: the one vocabulary of the metrics' `reason` label, the tracing events' `reason`
    /// field and the operators' views.
    pub verdict: Verdict,
}

/// Why a decision was made: every decision carries one ([`Decision::verdict`]), and the metrics and tracing
/// events name it by [`as_str`](Verdict::as_str). (What a refusal asks of its caller, the response it
/// becomes, is its [`Reason`](crate::Reason).)
///
/// | verdict | text | the call |
/// |---|---|---|
/// | [`Admitted`](Verdict::Admitted) | `admitted` | goes ahead: the store admitted it |
/// | [`Limited`](Verdict::Limited) | `limited` | is refused: the limit is reached |
/// | [`Blocked`](Verdict::Blocked) | `blocked` | is refused: its key is blocked, by a [`Penalty`](crate::Penalty) or an operator's [ban](crate::Limiter::ban) |
/// | [`Reserved`](Verdict::Reserved) | `reserved` | is refused: what is left is kept for calls of a higher [`Priority`](crate::Priority) |
/// | [`Unavailable`](Verdict::Unavailable) | `unavailable` | is refused: Redis could not decide, and the rule fails closed |
/// | [`DegradedOpen`](Verdict::DegradedOpen) | `degraded_open` | goes ahead: Redis could not decide, and the rule fails open |
/// | [`DegradedLocal`](Verdict::DegradedLocal) | `degraded_local` | was decided by this node's share of the limit, Redis being unreachable |
/// | [`Shadow`](Verdict::Shadow) | `shadow` | goes ahead: a shadow limit would have refused it |
/// | [`Skipped`](Verdict::Skipped) | `skipped` | skips this limit, its `skip_if` held (a call of one limit that skips it is not decided at all), or another limit of the call is misconfigured |
/// | [`SwitchedOff`](Verdict::SwitchedOff) | `switched_off` | goes ahead uncounted: limiting is switched off |
/// | [`Misconfigured`](Verdict::Misconfigured) | `misconfigured` | is refused, the server's mistake: the limit is one of zero, which no call can pass |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verdict {
    /// The store admitted the call.
    Admitted,
    /// The limit is reached: the call is refused.
    Limited,
    /// The key is blocked, by its rule's [`Penalty`](crate::Penalty) (this call's refusal started the block,
    /// or one is in force) or by an operator's [ban](crate::Limiter::ban): the call is refused, and
    /// `retry_after` is what is left of the block.
    Blocked,
    /// The limit would admit the call but for the share it keeps for calls of a higher
    /// [`Priority`](crate::Priority) ([`Rule::reserve`](crate::Rule::reserve)): the call is refused, and
    /// `retry_after` is when its own priority has room again. Not an offence for a penalty.
    Reserved,
    /// Redis could not decide and the rule fails closed: the call is refused.
    Unavailable,
    /// Redis could not decide and the rule fails open: the call goes ahead.
    DegradedOpen,
    /// Redis could not decide, and this node's share of the limit did (admitted or not).
    DegradedLocal,
    /// A shadow limit would have refused the call: it goes ahead.
    Shadow,
    /// The call skips the limit (`skip_if`), beside limits it does not skip: admitted by this one, counted
    /// nowhere. (A call of one limit that skips it is not decided at all.) So is every other limit of a call
    /// that a [`Misconfigured`](Verdict::Misconfigured) limit refuses: none is asked.
    Skipped,
    /// Limiting is switched off: every call goes ahead, counted nowhere.
    SwitchedOff,
    /// The limit is one of zero (`max(0)`, `in_flight(0)`, a token bucket's `burst(0)`), which the attribute
    /// and `LIMITER_MAX` refuse: the call is refused before any store is asked
    /// ([`Reason::Misconfigured`](crate::Reason::Misconfigured)); a shadow limit only reports it.
    Misconfigured,
}

impl Verdict {
    /// Every verdict, in the table's order.
    pub const ALL: [Verdict; 11] = [
        Verdict::Admitted,
        Verdict::Limited,
        Verdict::Blocked,
        Verdict::Reserved,
        Verdict::Unavailable,
        Verdict::DegradedOpen,
        Verdict::DegradedLocal,
        Verdict::Shadow,
        Verdict::Skipped,
        Verdict::SwitchedOff,
        Verdict::Misconfigured,
    ];

    /// Returns its name in metrics labels and tracing fields: `admitted`, `limited`, `blocked`, `reserved`,
    /// `unavailable`, `degraded_open`, `degraded_local`, `shadow`, `skipped`, `switched_off` or
    /// `misconfigured`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Admitted => "admitted",
            Verdict::Limited => "limited",
            Verdict::Blocked => "blocked",
            Verdict::Reserved => "reserved",
            Verdict::Unavailable => "unavailable",
            Verdict::DegradedOpen => "degraded_open",
            Verdict::DegradedLocal => "degraded_local",
            Verdict::Shadow => "shadow",
            Verdict::Skipped => "skipped",
            Verdict::SwitchedOff => "switched_off",
            Verdict::Misconfigured => "misconfigured",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Decision {
    /// Builds the decision: what `outcome` says of a call charged `charge`, decided at `decided_at` µs on the store's
    /// clock.
    #[inline]
    pub(crate) fn new(charge: &Terms, outcome: Outcome, decided_at: u64, degraded: bool) -> Self {
        Decision {
            allowed: outcome.allowed,
            limit: charge.max,
            window: Duration::from_micros(charge.window),
            remaining: outcome.remaining,
            retry_after: Duration::from_micros(outcome.retry_after),
            reset_after: Duration::from_micros(outcome.reset_after),
            delay: Duration::from_micros(outcome.delay),
            decided_at: Duration::from_micros(decided_at),
            degraded,
            in_flight: false,
            // What the store said; the pipeline names degraded, shadow, skipped and switched-off decisions.
            verdict: match (outcome.allowed, outcome.blocked, outcome.reserved) {
                (true, _, _) => Verdict::Admitted,
                (false, true, _) => Verdict::Blocked,
                (false, false, true) => Verdict::Reserved,
                (false, false, false) => Verdict::Limited,
            },
        }
    }
}
