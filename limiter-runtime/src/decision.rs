//! The answer to one call.

use std::time::Duration;

use crate::algorithm::{Charge, Outcome};

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
    /// The limit that applied: admissions per window.
    pub limit: u64,
    /// The window the limit applies to.
    pub window: Duration,
    /// Admissions left in the current window after this call.
    pub remaining: u64,
    /// When denied, how long until a call of the same cost would be admitted if nothing else happened;
    /// zero when allowed.
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
}

impl Decision {
    /// What `outcome` says of a call charged `charge`, decided at `decided_at` µs on the store's clock.
    #[inline]
    pub(crate) fn new(charge: &Charge, outcome: Outcome, decided_at: u64, degraded: bool) -> Self {
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
        }
    }
}
