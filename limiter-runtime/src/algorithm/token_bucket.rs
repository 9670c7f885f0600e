//! Token bucket as GCRA: the twin of `scripts/algorithms/token_bucket.lua`.
//!
//! Guarantee: never more than `burst + max · t / window` units admitted over any interval of length `t`.

use super::carry::Under;
use super::{ceil_div, div, narrow, Outcome, Queue, Receipt, Terms};

/// When the bucket is full again (the theoretical arrival time).
#[derive(Debug, Clone, Default)]
pub(crate) struct TokenBucket {
    pub(super) full_at: Queue,
    /// The terms the queue was last charged under (`None`: not known, as a script reports it): see
    /// [`Under`].
    pub(super) under: Option<Under>,
}

impl TokenBucket {
    /// Creates a bucket whose queue is `queue`.
    pub(crate) fn at(queue: Queue) -> Self {
        TokenBucket {
            full_at: queue,
            under: None,
        }
    }

    pub(crate) fn decide(&mut self, now: u64, req: &Terms) -> Outcome {
        let (max, w) = (u128::from(req.max), u128::from(req.window));
        // The part of the bucket in use, in µs × max: one token weighs `window`.
        let used = self.full_at.used(now, req.max);
        let capacity = u128::from(req.burst) * w;
        let need = u128::from(req.cost) * w;
        // What the call must leave free: the tokens kept above its priority.
        let kept = u128::from(req.kept) * w;

        if req.cost <= req.burst && used + need + kept <= capacity {
            let used = used + need;
            let receipt = self.full_at.charge(now, used, req.max);
            return Outcome {
                allowed: true,
                remaining: narrow(div(capacity - used - kept, w)),
                retry_after: 0,
                reset_after: narrow(ceil_div(used, max)),
                delay: 0,
                receipt,
                blocked: false,
                reserved: false,
            };
        }
        let retry_after = if need + kept > capacity {
            w
        } else {
            ceil_div(used + need + kept - capacity, max)
        };
        Outcome::denied(
            narrow(div(capacity.saturating_sub(used + kept), w)),
            narrow(retry_after),
            narrow(ceil_div(used, max)),
        )
        .reserved(kept > 0 && req.cost <= req.burst && used + need <= capacity)
    }

    /// Gives back `units` of what a charge left in the queue (see [`Queue::give_back`]).
    pub(crate) fn give_back(&mut self, now: u64, req: &Terms, units: u64, receipt: &Receipt) {
        self.full_at.give_back(now, req, units, receipt);
    }
}
