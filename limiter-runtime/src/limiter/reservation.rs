//! Admissions kept to be given back: [`Reservation`] (reserve an estimate, settle to the actual cost) and what
//! an annotated function with `count = failures | successes` holds while its body runs ([`HeldCall`]).

use std::fmt;
use std::future::Future as _;

use crate::call::{Call, Ruling};
use crate::{Decision, Limiter};

/// An admitted call, and what each of its limits charged: enough to give any of it back.
pub(crate) struct HeldCall {
    pub(crate) limiter: Limiter,
    pub(crate) call: Call<'static>,
    pub(crate) decided: Ruling,
}

impl HeldCall {
    /// Gives back `units[i]` of limit `i`'s charge (at most what it charged).
    pub(crate) async fn give_back(&self, units: &[u64]) {
        let pipeline = &self.limiter.pipeline;
        pipeline.give_back(&self.call, &self.decided, units).await;
    }

    /// Returns each limit's cost: what it charged.
    pub(crate) fn costs(&self) -> Vec<u64> {
        self.call
            .limits()
            .iter()
            .map(|limit| limit.terms.cost)
            .collect()
    }

    /// Returns what gives back its permits in flight and nothing of its rates ([`Call::permits`]).
    pub(crate) fn permits(&self) -> Vec<u64> {
        self.call.permits()
    }

    /// Gives back `units` now, from a destructor: in memory (and a permit in flight) at once, what Redis must
    /// hear on a task of its own (with no Tokio runtime to run it, the charge stays: the limit admits less,
    /// never more; a permit expires after its time to live).
    pub(crate) fn give_back_now(self, units: Vec<u64>) {
        if units.iter().all(|&units| units == 0) {
            return;
        }
        let mut giving = Box::pin(async move { self.give_back(&units).await });
        let waker = futures_util::task::noop_waker();
        let mut cx = std::task::Context::from_waker(&waker);
        if giving.as_mut().poll(&mut cx).is_pending() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(giving);
            }
        }
    }
}

/// An admission of an estimated cost, to settle to the actual cost once it is known: what
/// [`Limiter::reserve`] returns. Reserve-then-settle keeps concurrent callers from overshooting (the estimate
/// is taken up front) and charges exactly what was used (the rest is given back).
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
/// let reservation = limiter.reserve(&tokens, "alice", 1_000).await.unwrap();
/// assert_eq!(reservation.decision().remaining, 9_000);
/// let used = 250; // what the model actually spent
/// reservation.settle(used).await;
/// assert_eq!(limiter.check_cost(&tokens, "alice", 0).await.remaining, 9_750);
/// # }
/// ```
///
/// Dropped without being settled (an early return, `?`, a cancelled task), it gives the whole estimate back, as
/// [`cancel`](Reservation::cancel) does: in memory at once, with Redis on a task of its own. Giving back is
/// exact, whatever was admitted or given back since (a sliding log gives back this call's own entry, a window
/// only the window charged, a bucket what is left of the charge ahead of now), never more than the charge,
/// and nothing once the charge has left the limit. With Redis, a settlement that cannot reach Redis is dropped: the limit keeps
/// the charge, and admits less, never more.
#[must_use = "dropped, a reservation gives its whole estimate back; settle it to charge what was used"]
pub struct Reservation(Option<HeldCall>);

impl Reservation {
    pub(crate) fn new(limiter: Limiter, call: Call<'static>, decided: Ruling) -> Reservation {
        Reservation(Some(HeldCall {
            limiter,
            call,
            decided,
        }))
    }

    /// Returns the decision that admitted the estimate.
    pub fn decision(&self) -> &Decision {
        let held = self.0.as_ref().expect("a reservation is settled once");
        &held.decided.limits[0].decision
    }

    /// Settles to the units actually `used`: gives back the rest of the estimate (nothing when `used` is as
    /// much or more), and a permit in flight the reservation held.
    pub async fn settle(mut self, used: u64) {
        if let Some(held) = self.0.take() {
            let estimate = held.call.limits()[0].terms.cost;
            let permit = held.permits()[0];
            held.give_back(&[estimate.saturating_sub(used).max(permit)])
                .await;
        }
    }

    /// Gives the whole estimate back: as if the call had never been admitted.
    pub async fn cancel(self) {
        self.settle(0).await;
    }
}

impl Drop for Reservation {
    /// Gives the whole estimate back: in memory at once, with Redis on a task of its own (when there is no
    /// Tokio runtime to run it, the charge stays: the limit admits less, never more).
    fn drop(&mut self) {
        let Some(held) = self.0.take() else { return };
        let estimate = held.call.limits()[0].terms.cost;
        let permit = held.permits()[0];
        held.give_back_now(vec![estimate.max(permit)]);
    }
}

impl fmt::Debug for Reservation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Reservation");
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
