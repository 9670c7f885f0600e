//! Fixed window: the twin of `scripts/algorithms/fixed_window.lua`.
//!
//! Guarantee: at most `max` units admitted per aligned window `[k·window, (k+1)·window)`.

use super::{Outcome, Receipt, Terms};

/// The current window's index and the units admitted in it, and the window's length (µs) it was counted in
/// (0: not known, as a script reports the state; the hash's `d`).
#[derive(Debug, Clone)]
pub(crate) struct FixedWindow {
    pub(super) index: u64,
    pub(super) count: u64,
    pub(super) window: u64,
}

impl Default for FixedWindow {
    fn default() -> Self {
        FixedWindow {
            index: u64::MAX,
            count: 0,
            window: 0,
        }
    }
}

impl FixedWindow {
    /// Creates window `index` holding `count` units.
    pub(crate) fn at(index: u64, count: u64) -> Self {
        FixedWindow {
            index,
            count,
            window: 0,
        }
    }

    pub(crate) fn decide(&mut self, now: u64, req: &Terms) -> Outcome {
        let index = now / req.window;
        self.decide_in(index, now, (index + 1) * req.window - now, req)
    }

    /// Decides a call at `now` in window `index`, which ends `reset_after` from now (a calendar period's
    /// window is its end: see `calendar.rs`).
    pub(crate) fn decide_in(
        &mut self,
        index: u64,
        now: u64,
        reset_after: u64,
        req: &Terms,
    ) -> Outcome {
        let count = if self.index == index { self.count } else { 0 };
        let asked = req.cost.saturating_add(req.kept);

        if count.saturating_add(asked) <= req.max {
            // A call of nothing writes nothing, as in Redis: a calendar key keeps the count of the period it
            // holds, should a call of another zone's period weigh nothing.
            if req.cost > 0 {
                *self = FixedWindow {
                    index,
                    count: count + req.cost,
                    window: self.window,
                };
            }
            return Outcome {
                allowed: true,
                remaining: req.max - count - asked,
                retry_after: 0,
                reset_after,
                delay: 0,
                receipt: Receipt {
                    at: now,
                    mark: index,
                    ..Receipt::default()
                },
                blocked: false,
                reserved: false,
            };
        }
        let retry_after = if asked > req.max {
            req.window
        } else {
            reset_after
        };
        Outcome::counted_out(req, count, retry_after, reset_after)
    }

    /// Takes `units` off the window charged, if it is still the current one (of the charge's length, `window`;
    /// 0 for any).
    pub(crate) fn give_back(&mut self, window: u64, units: u64, receipt: &Receipt) {
        let length = window == 0 || self.window == 0 || self.window == window;
        if self.index == receipt.mark && length {
            self.count = self.count.saturating_sub(units);
        }
    }
}
