//! Sliding-window log: the twin of `scripts/sliding_log.lua` (and of its branch of `scripts/limiter.lua`).
//!
//! Guarantee: at most `max` units admitted in any interval of length `window`. An admission at time `s`
//! counts while `s > now - window`.

use std::collections::VecDeque;

use super::{Charge, Outcome, Receipt};

/// The admission times (µs) of one key, oldest first; never more than `max` of them.
#[derive(Debug, Default)]
pub(crate) struct SlidingLog {
    admitted: VecDeque<u64>,
}

impl SlidingLog {
    pub(crate) fn decide(&mut self, now: u64, req: &Charge) -> Outcome {
        while self
            .admitted
            .front()
            .is_some_and(|&s| s.saturating_add(req.window) <= now)
        {
            self.admitted.pop_front();
        }
        let count = self.admitted.len() as u64;
        let outcome = outcome(
            now,
            req,
            count,
            |index| self.admitted[index],
            self.admitted.back().copied(),
        );
        if outcome.allowed {
            self.admitted.extend((0..req.cost).map(|_| now));
        }
        outcome
    }

    /// Removes `units` of the admissions made at the receipt's time, while they are in the window (those of
    /// one microsecond count alike, whichever call made them).
    pub(crate) fn refund(&mut self, now: u64, req: &Charge, units: u64, receipt: &Receipt) {
        if receipt.at.saturating_add(req.window) <= now {
            return;
        }
        // The log is in time order: the admissions of that microsecond are one run.
        let start = self.admitted.partition_point(|&s| s < receipt.at);
        let end = self.admitted.partition_point(|&s| s <= receipt.at);
        let units = usize::try_from(units)
            .unwrap_or(usize::MAX)
            .min(end - start);
        self.admitted.drain(end - units..end);
    }
}

/// What a log holding `count` admissions in the window decides of a call of `req` at `now`: `blocking(i)` is
/// the time of its `i`-th oldest admission (asked for only when the call is refused, and can be admitted
/// later), `newest` the time of its newest. In memory the log is at hand; from Redis, the script reports
/// these times.
pub(crate) fn outcome(
    now: u64,
    req: &Charge,
    count: u64,
    blocking: impl FnOnce(usize) -> u64,
    newest: Option<u64>,
) -> Outcome {
    if count + req.cost <= req.max {
        return Outcome {
            allowed: true,
            remaining: req.max - count - req.cost,
            retry_after: 0,
            reset_after: req.window,
            delay: 0,
            receipt: Receipt {
                at: now,
                ..Receipt::default()
            },
        };
    }
    let retry_after = if req.cost <= req.max {
        // Admitted once the (count + cost - max)-th oldest admission has left the window.
        let index = (count + req.cost - req.max - 1) as usize;
        (blocking(index) + req.window).saturating_sub(now)
    } else {
        req.window
    };
    let reset_after = newest.map_or(0, |s| (s + req.window).saturating_sub(now));
    Outcome::denied(req.max.saturating_sub(count), retry_after, reset_after)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000;

    fn req(max: u64) -> Charge {
        Charge {
            window: 10 * SECOND,
            max,
            cost: 1,
            burst: max,
            max_wait: 0,
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
        let o = log.decide(0, &Charge { cost: 6, ..req(5) });
        assert!(!o.allowed);
        assert_eq!(o.retry_after, 10 * SECOND);
        assert_eq!(o.remaining, 5);
    }
}
