//! A call's permits in flight, held while it runs: what [`Limiter::acquire`] returns.

use std::fmt;

use super::held::{HeldCall, Used};
use crate::call::{Call, Ruling};
use crate::{Decision, Limiter};

/// An admitted call that holds a permit of each of its [in-flight](crate::Rule::in_flight) limits while it
/// runs: dropped (or [`settle`](Permit::settle)d), it gives them back. What its rate limits charged stays
/// charged.
///
/// ```
/// use limiter_runtime::{Limiter, Rule};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let limiter = Limiter::in_memory();
/// // At most 2 uploads of a tenant at once.
/// let uploads = Rule::new().prefix("uploads:").in_flight(2);
/// let first = limiter.acquire(&uploads, "acme").await.unwrap();
/// let second = limiter.acquire(&uploads, "acme").await.unwrap();
/// assert!(limiter.acquire(&uploads, "acme").await.is_err());
/// drop(first);
/// assert!(limiter.acquire(&uploads, "acme").await.is_ok());
/// # drop(second);
/// # }
/// ```
///
/// With Redis a permit is given back by a task of this limiter's (with the releases of other calls); one that
/// cannot reach Redis expires after its [`in_flight_ttl`](crate::Rule::in_flight_ttl).
#[must_use = "a permit is given back when dropped: hold it while the call runs"]
pub struct Permit(Option<HeldCall>);

impl Permit {
    pub(crate) fn new(limiter: Limiter, call: Call<'static>, decided: Ruling) -> Permit {
        Permit(Some(HeldCall {
            limiter,
            call,
            decided,
        }))
    }

    /// Returns the decision of its first limit (the only one, for [`acquire`](Limiter::acquire)).
    pub fn decision(&self) -> Decision {
        self.held().decision()
    }

    /// Returns each limit's decision, in the order given.
    pub fn decisions(&self) -> Vec<Decision> {
        self.held().decisions()
    }

    /// Ends the call, having used `used` of its rates (see [`Used`]; [`AsCharged`](crate::AsCharged) for
    /// what they charged): gives back its permits and what its rates charged and it did not use, and returns
    /// once they are given back (the next call finds the permits free). Dropped, a permit settles as charged:
    /// in memory at once, with Redis by a task of the limiter's.
    pub async fn settle(mut self, used: impl Used) {
        if let Some(held) = self.0.take() {
            held.give_back(&held.unused(&used)).await;
        }
    }

    /// Gives everything back, the rates' charges with the permits: as if the call had never been admitted.
    pub async fn cancel(mut self) {
        if let Some(held) = self.0.take() {
            held.give_back(&held.costs()).await;
        }
    }

    fn held(&self) -> &HeldCall {
        self.0.as_ref().expect("a permit is settled once")
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(held) = self.0.take() {
            let permits = held.permits();
            held.give_back_now(permits);
        }
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Permit");
        if let Some(held) = &self.0 {
            let keys: Vec<&str> = held.call.limits().iter().map(|l| &*l.key).collect();
            debug
                .field("keys", &keys)
                .field("decisions", &self.decisions());
        }
        debug.finish()
    }
}
