//! Leaky bucket, for shaping: the twin of `scripts/algorithms/leaky_bucket.lua`.
//!
//! Guarantee: admitted slots start at least `window / max` apart (one slot per unit of cost); a call is
//! admitted only if its slot starts within `max_wait`, and is told the delay until then.

use super::carry::Under;
use super::{ceil_div, div, narrow, Outcome, Queue, Receipt, Terms};

/// When the next slot is free.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeakyBucket {
    pub(super) free_at: Queue,
    /// The terms the queue was last charged under (`None`: not known, as a script reports it): see
    /// [`Under`].
    pub(super) under: Option<Under>,
}

impl LeakyBucket {
    /// Creates a bucket whose queue is `queue`.
    pub(crate) fn at(queue: Queue) -> Self {
        LeakyBucket {
            free_at: queue,
            under: None,
        }
    }

    pub(crate) fn decide(&mut self, now: u64, req: &Terms) -> Outcome {
        let (max, w) = (u128::from(req.max), u128::from(req.window));
        // How far ahead the next free slot starts, in µs × max: one slot weighs `window`.
        let queued = self.free_at.used(now, req.max);
        let limit = u128::from(req.max_wait) * max;
        // The slots kept above the call's priority, at the end of those within max wait.
        let kept = u128::from(req.kept) * w;

        if req.cost <= req.max && queued + kept <= limit {
            let after = queued + u128::from(req.cost) * w;
            let receipt = self.free_at.charge(now, after, req.max);
            let remaining = if after + kept <= limit {
                (div(limit - after - kept, w) + 1).min(max)
            } else {
                0
            };
            return Outcome {
                allowed: true,
                remaining: narrow(remaining),
                retry_after: 0,
                reset_after: narrow(ceil_div(after, max)),
                delay: narrow(ceil_div(queued, max)),
                receipt,
                blocked: false,
                reserved: false,
            };
        }
        let retry_after = if req.cost > req.max {
            w
        } else {
            ceil_div(queued + kept - limit, max)
        };
        Outcome::denied(0, narrow(retry_after), narrow(ceil_div(queued, max)))
            .reserved(kept > 0 && req.cost <= req.max && queued <= limit)
    }

    /// Makes the line end no earlier than `until` (µs) at `now`, for a limit of `max`, while an upstream's pause
    /// is in force: `queued = max(queued, (paused - now) * max)`, as the script's `pause` section. The line
    /// moved is as a charge up to there leaves it: one that was empty starts a new run, as the script's write
    /// does (see [`State::after_pause`](super::State::after_pause)).
    pub(crate) fn after_pause(&mut self, now: u64, until: u64, max: u64) {
        let reach = u128::from(until.saturating_sub(now)) * u128::from(max);
        if self.free_at.used(now, max) < reach {
            self.free_at.charge(now, reach, max);
        }
    }

    /// Re-spaces the line at `now` for a rate lowered from `from` to `to`: what it holds past now stretched by
    /// `from / to`, in a new run (the charges before give nothing back: their places moved). Returns how far
    /// it reaches (µs).
    pub(crate) fn stretch(&mut self, now: u64, max: u64, from: u32, to: u32) -> u64 {
        let used = self.free_at.used(now, max);
        if used == 0 || to == 0 {
            return 0;
        }
        let reach = (used * u128::from(from)).div_ceil(u128::from(to));
        self.free_at = Queue::at(now, reach, max, now, 0);
        // Re-spaced for the rate learned, as `scripts/pause.lua` leaves it: its terms unknown, adopted by the
        // next call as they come.
        self.under = None;
        narrow(ceil_div(reach, u128::from(max)))
    }

    /// Gives back `units` of a call's slot: from the line's end only (see [`Queue::give_back_slot`]).
    pub(crate) fn give_back(&mut self, now: u64, req: &Terms, units: u64, receipt: &Receipt) {
        self.free_at.give_back_slot(now, req, units, receipt);
    }
}
