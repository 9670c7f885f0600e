//! Token bucket as GCRA: the twin of `scripts/token_bucket.lua`.
//!
//! Guarantee: never more than `burst + max · t / window` units admitted over any interval of length `t`.

use super::{ceil_div, div, narrow, Charge, Outcome, Schedule};

/// When the bucket is full again (the theoretical arrival time).
#[derive(Debug, Default)]
pub(crate) struct TokenBucket {
    full_at: Schedule,
}

impl TokenBucket {
    pub(crate) fn decide(&mut self, now: u64, req: &Charge) -> Outcome {
        let (max, w) = (u128::from(req.max), u128::from(req.window));
        // The part of the bucket in use, in µs × max: one token weighs `window`.
        let used = self.full_at.ahead(now, req.max);
        let capacity = u128::from(req.burst) * w;
        let need = u128::from(req.cost) * w;

        if req.cost <= req.burst && used + need <= capacity {
            let used = used + need;
            self.full_at = Schedule::at(now, used, req.max);
            return Outcome {
                allowed: true,
                remaining: narrow(div(capacity - used, w)),
                retry_after: 0,
                reset_after: narrow(ceil_div(used, max)),
                delay: 0,
            };
        }
        let retry_after = if req.cost > req.burst {
            w
        } else {
            ceil_div(used + need - capacity, max)
        };
        Outcome::denied(
            narrow(div(capacity.saturating_sub(used), w)),
            narrow(retry_after),
            narrow(ceil_div(used, max)),
        )
    }
}
