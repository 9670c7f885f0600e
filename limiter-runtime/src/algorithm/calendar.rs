//! Calendar quota: the twin of `scripts/algorithms/calendar.lua`.
//!
//! A fixed window whose windows are the periods of the calendar, each named by when it ends: at most `max`
//! units per period. The call says where the periods around its "now" end ([`Terms::ends`]); the store
//! decides, on its own clock, which one "now" is in.

use super::fixed_window::FixedWindow;
use super::{Outcome, Receipt, Terms};

/// The current period (by its end, µs) and the units admitted in it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Calendar(pub(super) FixedWindow);

impl Calendar {
    /// Creates the period ending at `end` holding `count` units.
    pub(crate) fn at(end: u64, count: u64) -> Self {
        Calendar(FixedWindow::at(end, count))
    }

    pub(crate) fn decide(&mut self, now: u64, charge: &Terms) -> Outcome {
        let end = end(now, charge);
        self.0.decide_in(end, now, end.saturating_sub(now), charge)
    }

    /// Takes `units` off the period charged, if it is still the current one.
    pub(crate) fn give_back(&mut self, units: u64, receipt: &Receipt) {
        // A period's count keeps no window's length (its end names it).
        self.0.give_back(0, units, receipt);
    }
}

/// Returns the end of the period `now` is in: the first of the call's ends after it (the last, should the call's
/// clock be a whole period behind: Redis refuses such a call, see `scripts/algorithms/calendar.lua`).
pub(crate) fn end(now: u64, charge: &Terms) -> u64 {
    let [previous, current, next] = charge.ends;
    match now {
        _ if now < previous => previous,
        _ if now < current => current,
        _ => next,
    }
}
