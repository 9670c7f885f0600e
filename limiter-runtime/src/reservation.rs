//! Admissions kept to be given back: [`Reservation`] (reserve an estimate, settle to the actual cost) and
//! what an annotated function with `count = failures | successes` holds while its body runs.

use std::borrow::Cow;
use std::fmt;

use crate::decide::{Decided, Request};
use crate::key::StoreKey;
use crate::{Decision, Limiter, Rule};

/// An admitted call's limits and what each charged: enough to give any of it back.
pub(crate) struct Held<const N: usize> {
    pub(crate) limiter: Limiter,
    pub(crate) rules: Cow<'static, [Rule; N]>,
    pub(crate) keys: [StoreKey; N],
    pub(crate) costs: [u64; N],
    pub(crate) skipped: [bool; N],
    pub(crate) decided: Decided<N>,
}

impl<const N: usize> Held<N> {
    /// Gives back `units` of each limit's charge (at most what it charged).
    pub(crate) async fn give_back(&self, units: [u64; N]) {
        let batch: [Request<'_, '_>; N] = std::array::from_fn(|i| Request {
            rule: &self.rules[i],
            key: self.keys[i].parts(),
            cost: self.costs[i],
            skip: self.skipped[i],
        });
        self.limiter.refund(&batch, &self.decided, units).await;
    }
}

/// An admission of an estimated cost, to settle to the actual cost once it is known: what
/// [`Limiter::reserve`] returns. Reserve-then-settle keeps concurrent callers from overshooting (the estimate
/// is taken up front) and charges exactly what was used (the rest is given back).
///
/// ```
/// use limiter_runtime::{Limiter, Rule};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = Limiter::in_memory();
/// // An LLM budget: 10,000 tokens a minute.
/// let tokens = Rule::new().prefix("llm:").max(10_000).window(Duration::from_secs(60));
/// let reservation = limiter.reserve(&tokens, "alice", 1_000).await.unwrap();
/// assert_eq!(reservation.decision().remaining, 9_000);
/// let used = 250; // what the model actually spent
/// reservation.settle(used).await;
/// assert_eq!(limiter.check_cost(&tokens, "alice", 0).await.remaining, 9_750);
/// # }
/// ```
///
/// Dropped without settling, the whole estimate stays charged. Giving back is exact while nothing else was
/// admitted after it (a sliding log gives back this call's own entries, a window only the window charged, a
/// bucket what is left of the charge), never more than the charge, and nothing once the charge has left the
/// limit. With Redis, a settlement that cannot reach Redis is dropped: the limit keeps the charge, and admits
/// less, never more.
#[must_use = "dropped, a reservation keeps its whole estimate charged; settle it to give back what was not used"]
pub struct Reservation(pub(crate) Held<1>);

impl Reservation {
    /// The decision that admitted the estimate.
    pub fn decision(&self) -> &Decision {
        let [answer] = &self.0.decided.answers;
        &answer.decision
    }

    /// Settles to the units actually `used`: gives back the rest of the estimate (nothing when `used` is as
    /// much or more).
    pub async fn settle(self, used: u64) {
        let [estimate] = self.0.costs;
        self.0.give_back([estimate.saturating_sub(used)]).await;
    }

    /// Gives the whole estimate back: as if the call had never been admitted.
    pub async fn cancel(self) {
        self.settle(0).await;
    }
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ([key], [estimate]) = (&self.0.keys, &self.0.costs);
        f.debug_struct("Reservation")
            .field("key", key)
            .field("estimate", estimate)
            .field("decision", self.decision())
            .finish()
    }
}
