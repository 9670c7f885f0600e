//! Sliding-window log: the twin of `scripts/algorithms/sliding_log.lua`.
//!
//! Guarantee: at most `max` units admitted in any interval of length `window`. An admission at time `s`
//! counts while `s > now - window`.

use std::collections::VecDeque;

use super::{Outcome, Receipt, Terms};

/// The admissions of one key, oldest first: one entry per microsecond that admitted anything, weighing the
/// units admitted then (a call's cost is a weight, never a number of entries), and their sum.
#[derive(Debug, Clone, Default)]
pub(crate) struct SlidingLog {
    admitted: VecDeque<Admitted>,
    units: u64,
}

/// The units admitted at one time (µs).
#[derive(Debug, Clone, Copy)]
struct Admitted {
    at: u64,
    units: u64,
}

impl SlidingLog {
    pub(crate) fn decide(&mut self, now: u64, req: &Terms) -> Outcome {
        self.forget_before(now, req.window);
        let admitted = &self.admitted;
        let outcome = outcome(
            now,
            req,
            self.units,
            |need| blocking(admitted, need),
            admitted.back().map(|newest| newest.at),
        );
        if outcome.allowed && req.cost > 0 {
            self.units += req.cost;
            match self.admitted.back_mut().filter(|newest| newest.at == now) {
                Some(newest) => newest.units += req.cost,
                None => {
                    // Most keys a flood brings see one admission: room for exactly one, not four.
                    if self.admitted.capacity() == 0 {
                        self.admitted.reserve_exact(1);
                    }
                    self.admitted.push_back(Admitted {
                        at: now,
                        units: req.cost,
                    })
                }
            }
        }
        outcome
    }

    /// Reads what the log holds at `now`, for a `window`, its expired admissions forgotten: the units in the window,
    /// and when the newest was admitted.
    pub(crate) fn read(&mut self, now: u64, window: u64) -> (u64, Option<u64>) {
        self.forget_before(now, window);
        (self.units, self.admitted.back().map(|newest| newest.at))
    }

    /// Returns when the admission was made whose leaving takes the oldest `need` units out of the window.
    pub(crate) fn leaving(&self, need: u64) -> u64 {
        blocking(&self.admitted, need)
    }

    /// Forgets the admissions that have left the window at `now`.
    fn forget_before(&mut self, now: u64, window: u64) {
        while let Some(oldest) = self
            .admitted
            .front()
            .filter(|oldest| oldest.at.saturating_add(window) <= now)
        {
            self.units -= oldest.units;
            self.admitted.pop_front();
        }
    }

    /// Removes `units` of the admissions made at the receipt's time, while they are in the window (those of
    /// one microsecond count alike, whichever call made them).
    pub(crate) fn give_back(&mut self, now: u64, req: &Terms, units: u64, receipt: &Receipt) {
        if receipt.at.saturating_add(req.window) <= now {
            return;
        }
        // The log is in time order, one entry per microsecond.
        let Ok(i) = self
            .admitted
            .binary_search_by_key(&receipt.at, |admitted| admitted.at)
        else {
            return;
        };
        let entry = &mut self.admitted[i];
        let back = units.min(entry.units);
        entry.units -= back;
        self.units -= back;
        if entry.units == 0 {
            self.admitted.remove(i);
        }
    }
}

/// Returns the time of the admission whose leaving takes the oldest `need` units (at least 1) out of the window.
fn blocking(admitted: &VecDeque<Admitted>, need: u64) -> u64 {
    let mut left = need;
    for admission in admitted {
        if admission.units >= left {
            return admission.at;
        }
        left -= admission.units;
    }
    // Never reached: a log holds at least the units a refused call that fits needs to leave.
    admitted.back().map_or(0, |newest| newest.at)
}

/// Returns what a log holding `count` units in the window decides of a call of `req` at `now`: `blocking(need)` is
/// the time of the admission whose leaving takes the oldest `need` units out of the window (asked for only
/// when the call is refused, and can be admitted later), `newest` the time of its newest. In memory the log is
/// at hand; from Redis, the script reports these times.
pub(crate) fn outcome(
    now: u64,
    req: &Terms,
    count: u64,
    blocking: impl FnOnce(u64) -> u64,
    newest: Option<u64>,
) -> Outcome {
    let asked = req.cost.saturating_add(req.kept);
    if count.saturating_add(asked) <= req.max {
        return Outcome {
            allowed: true,
            remaining: req.max - count - asked,
            retry_after: 0,
            reset_after: req.window,
            delay: 0,
            receipt: Receipt {
                at: now,
                ..Receipt::default()
            },
            blocked: false,
            reserved: false,
        };
    }
    let retry_after = if asked <= req.max {
        // Admitted once the oldest (count + cost + kept - max) units have left the window.
        (blocking(count + asked - req.max) + req.window).saturating_sub(now)
    } else {
        req.window
    };
    let reset_after = newest.map_or(0, |s| (s + req.window).saturating_sub(now));
    Outcome::counted_out(req, count, retry_after, reset_after)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000;

    fn req(max: u64) -> Terms {
        Terms {
            window: 10 * SECOND,
            max,
            cost: 1,
            burst: max,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        }
    }

    #[test]
    fn admits_max_then_rejects_until_the_oldest_leaves() {
        let mut log = SlidingLog::default();
        for i in 0..5 {
            let o = log.decide(i * SECOND, &req(5));
            assert!(o.allowed);
            assert_eq!(o.remaining, 4 - i);
        }
        let o = log.decide(5 * SECOND, &req(5));
        assert!(!o.allowed);
        assert_eq!(o.retry_after, 5 * SECOND);
        assert_eq!(o.reset_after, 9 * SECOND);
        assert!(!log.decide(10 * SECOND - 1, &req(5)).allowed);
        assert!(log.decide(10 * SECOND, &req(5)).allowed);
    }

    #[test]
    fn a_cost_above_the_limit_is_rejected_with_the_whole_window() {
        let mut log = SlidingLog::default();
        let o = log.decide(0, &Terms { cost: 6, ..req(5) });
        assert!(!o.allowed);
        assert_eq!(o.retry_after, 10 * SECOND);
        assert_eq!(o.remaining, 5);
    }

    /// Checks that a cost is a weight: one entry however heavy, and exact at the edge.
    #[test]
    fn a_cost_is_a_weight_exact_at_the_edge() {
        let mut log = SlidingLog::default();
        let limit = |cost| Terms {
            cost,
            ..req(10_000_000)
        };
        assert!(log.decide(0, &limit(1_000_000)).allowed);
        let refused = log.decide(SECOND, &limit(9_000_001));
        assert!(!refused.allowed);
        assert_eq!(refused.remaining, 9_000_000);
        // The first admission's leaving makes room.
        assert_eq!(refused.retry_after, 9 * SECOND);
        assert!(log.decide(SECOND, &limit(9_000_000)).allowed);
        assert_eq!(log.admitted.len(), 2);
        // Full: a unit waits for the oldest call to leave; 9,000,001 units, for both.
        assert_eq!(log.decide(2 * SECOND, &limit(1)).retry_after, 8 * SECOND);
        let all = log.decide(2 * SECOND, &limit(9_000_001));
        assert_eq!(all.retry_after, 9 * SECOND);
    }

    /// Checks that giving back part of a call leaves the rest of it counted.
    #[test]
    fn a_give_back_takes_part_of_a_call() {
        let mut log = SlidingLog::default();
        let limit = |cost| Terms { cost, ..req(100) };
        let heavy = log.decide(0, &limit(60));
        log.give_back(SECOND, &limit(60), 25, &heavy.receipt);
        assert_eq!(log.decide(SECOND, &limit(65)).remaining, 0);
        assert!(!log.decide(SECOND, &limit(1)).allowed);
        log.give_back(SECOND, &limit(60), 1_000, &heavy.receipt);
        assert_eq!(log.units, 65);
    }
}
