//! Sliding window counter: the twin of `scripts/algorithms/sliding_window.lua`.
//!
//! Guarantee: the weighted estimate `previous · (window - elapsed) / window + current` never exceeds `max`
//! after an admission; hence never more than `max` per aligned window.

use super::{div, narrow, Outcome, Receipt, Terms};

/// The current aligned window's index, its count and the previous window's count, and the window's length
/// (µs) they were counted in (0: not known, as a script reports the state; the string's `/<d>`).
#[derive(Debug, Clone)]
pub(crate) struct SlidingWindow {
    pub(super) index: u64,
    pub(super) current: u64,
    pub(super) previous: u64,
    pub(super) window: u64,
}

impl Default for SlidingWindow {
    fn default() -> Self {
        SlidingWindow {
            index: u64::MAX,
            current: 0,
            previous: 0,
            window: 0,
        }
    }
}

impl SlidingWindow {
    /// Creates window `index` holding `current` units, after a window that held `previous`.
    pub(crate) fn at(index: u64, current: u64, previous: u64) -> Self {
        SlidingWindow {
            index,
            current,
            previous,
            window: 0,
        }
    }

    pub(crate) fn decide(&mut self, now: u64, req: &Terms) -> Outcome {
        let w = u128::from(req.window);
        let index = now / req.window;
        let elapsed = u128::from(now - index * req.window);
        let (current, previous) = if self.index == index {
            (self.current, self.previous)
        } else if self.index != u64::MAX && self.index + 1 == index {
            (0, self.current)
        } else {
            (0, 0)
        };
        let (current_w, previous_w) = (u128::from(current), u128::from(previous));
        let (max, cost) = (u128::from(req.max), u128::from(req.cost));
        // What the call must find free: its cost, and the units kept above its priority.
        let asked = cost + u128::from(req.kept);

        // Weights scaled by `window`: a unit of the current window weighs `window`.
        let used = previous_w * (w - elapsed) + current_w * w;
        let capacity = max * w;
        if used + asked * w <= capacity {
            *self = SlidingWindow {
                index,
                current: current + req.cost,
                previous,
                window: self.window,
            };
            return Outcome {
                allowed: true,
                remaining: narrow(div(capacity - used - asked * w, w)),
                retry_after: 0,
                reset_after: narrow(2 * w - elapsed),
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

        let retry_after = if asked > max {
            w
        } else if max >= asked + current_w {
            // Later in this window, once the previous window weighs little enough.
            w - elapsed - div((max - asked - current_w) * w, previous_w)
        } else {
            // In the next window, once this window (then the previous one) weighs little enough.
            w - elapsed + w - div((max - asked) * w, current_w)
        };
        let reset_after = if current > 0 {
            2 * w - elapsed
        } else if previous > 0 {
            w - elapsed
        } else {
            0
        };
        let kept = u128::from(req.kept) * w;
        Outcome::denied(
            narrow(div(capacity.saturating_sub(used + kept), w)),
            narrow(retry_after),
            narrow(reset_after),
        )
        .reserved(kept > 0 && used + cost * w <= capacity)
    }

    /// Takes `units` off the window charged, while it counts: as the current window, or as the previous (of the
    /// charge's length, `window`).
    pub(crate) fn give_back(&mut self, window: u64, units: u64, receipt: &Receipt) {
        if self.window != 0 && self.window != window {
            return;
        }
        if self.index == receipt.mark {
            self.current = self.current.saturating_sub(units);
        } else if self.index == receipt.mark.wrapping_add(1) {
            self.previous = self.previous.saturating_sub(units);
        }
    }
}
