//! [`Estimate`]: an admission of an estimated cost, settled to the actual cost once it is known.

use std::fmt;

use super::held::{HeldCall, Used};
use crate::call::{Call, Ruling};
use crate::{Decision, Limiter};

/// An admission of an estimated cost, to settle to the actual cost once it is known: what
/// [`Limiter::estimate`] returns. Charging the estimate up front keeps concurrent callers from overshooting,
/// and settling charges exactly what was used (the rest is given back).
///
/// ```
/// use limiter_runtime::{Algorithm, Limiter, Rule};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = Limiter::in_memory();
/// // An LLM budget: 10,000 tokens a minute, refilled as they are spent (a token bucket: a cost is a weight).
/// let tokens = Rule::new()
///     .prefix("llm:")
///     .algorithm(Algorithm::TokenBucket)
///     .max(10_000)
///     .window(Duration::from_secs(60));
/// let estimate = limiter.estimate(&tokens, "alice").cost(1_000).await.unwrap();
/// assert_eq!(estimate.decision().remaining, 9_000);
/// let used = 250; // what the model actually spent
/// estimate.settle(used).await;
/// assert_eq!(limiter.check(&tokens, "alice").cost(0).await.remaining, 9_750);
/// # }
/// ```
///
/// Dropped without being settled (an early return, `?`, a cancelled task), it gives the whole estimate back, as
/// [`cancel`](Estimate::cancel) does: in memory at once, with Redis on a task of its own. Giving back is
/// exact, whatever was admitted or given back since (a sliding log gives back this call's own entry, a window
/// only the window charged, a bucket what is left of the charge ahead of now), never more than the charge,
/// and nothing once the charge has left the limit. With Redis, a settlement that cannot reach Redis is
/// dropped: the limit keeps the charge, and admits less, never more.
#[must_use = "dropped, an estimate gives its whole charge back; settle it to charge what was used"]
pub struct Estimate(Option<HeldCall>);

impl Estimate {
    pub(crate) fn new(limiter: Limiter, call: Call<'static>, decided: Ruling) -> Estimate {
        Estimate(Some(HeldCall {
            limiter,
            call,
            decided,
        }))
    }

    /// Returns the decision that admitted the estimate (its first limit's, for [`Limiter::all`]).
    pub fn decision(&self) -> Decision {
        self.held().decision()
    }

    /// Returns each limit's decision, in the order given.
    pub fn decisions(&self) -> Vec<Decision> {
        self.held().decisions()
    }

    /// Settles to the units actually `used` (see [`Used`]: a number for the first limit, a list for each):
    /// gives back the rest of the estimate (nothing when `used` is as much or more), and a permit in flight
    /// the call held.
    pub async fn settle(mut self, used: impl Used) {
        if let Some(held) = self.0.take() {
            held.give_back(&held.unused(&used)).await;
        }
    }

    /// Gives the whole estimate back: as if the call had never been admitted.
    pub async fn cancel(mut self) {
        if let Some(held) = self.0.take() {
            held.give_back(&held.costs()).await;
        }
    }

    fn held(&self) -> &HeldCall {
        self.0.as_ref().expect("an estimate is settled once")
    }
}

impl Drop for Estimate {
    /// Gives the whole estimate back: in memory at once, with Redis on a task of its own (when there is no
    /// Tokio runtime to run it, the charge stays: the limit admits less, never more).
    fn drop(&mut self) {
        if let Some(held) = self.0.take() {
            let costs = held.costs();
            held.give_back_now(costs);
        }
    }
}

impl fmt::Debug for Estimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Estimate");
        if let Some(held) = &self.0 {
            let limit = &held.call.limits()[0];
            debug
                .field("key", &limit.key)
                .field("estimate", &limit.terms.cost)
                .field("decision", &held.decided.limits[0].decision);
        }
        debug.finish()
    }
}
