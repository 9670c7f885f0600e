//! What a key's state carries over when its limit's terms change between two calls on it (a reloaded rule,
//! another plan, an override): the twin of the carry each algorithm's `read` section makes
//! (`scripts/algorithms/`), the same integers, so that the two stores carry alike. `guide::limits` has the
//! table.
//!
//! - The windows and the log keep their counts: raising `max` admits exactly the difference at once, and
//!   lowering it admits nothing past the new `max` until the count falls below it.
//! - A changed window keeps what the old terms still count. The log keeps its admissions, by their times, as
//!   ever (those older than the new window no longer count). A fixed window (a calendar period) has a count
//!   and no times: while its old window is still current, its whole count moves into the window now is in
//!   (all of it may fall there), once; a window that has ended carries nothing. A sliding window moves what it
//!   weighs at the change, in whole units rounded up, into now's window as its count.
//! - A bucket carries its level by the rule's `Carry` ([`Level`]), in a new run of charges (those before
//!   give nothing back: their places moved). A token bucket's tokens in use, against its burst: the same share of the
//!   new burst (proportional), or as many tokens left as there were, at most the new burst (as is). A leaky
//!   bucket's line: its slots queued stay queued, spaced anew (proportional: the line's reach follows the
//!   spacing, `window / max`), or it ends where it ended (as is), so that every call admitted keeps its
//!   slot; a call's `max_wait` is its own patience, not the line's, and moves nothing. The level is computed
//!   in doubles, as the script computes it, and rounded up to the queue's grain (a millionth of a unit, for
//!   a window of a second): never more room than there was, in proportion, and a limit changed back and
//!   forth leaves the bucket as it was, to that grain. A bucket with nothing in use (its key gone) is full
//!   under any terms.
//!
//! The memory store carries a key's state before each of its decisions ([`State::carry`]); from Redis, the
//! script has carried it before it answers, and the twin replays the calls on what it answered.

use super::calendar::{self, Calendar};
use super::fixed_window::FixedWindow;
use super::sliding_window::SlidingWindow;
use super::{ceil_div, narrow, Algorithm, Queue, State, Terms};

/// How a bucket's level carries over: its rule's `Carry`, as the algorithms take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    /// In proportion: a token bucket's share of its burst; a leaky bucket's slots, spaced anew.
    Proportional,
    /// As it is: a token bucket's tokens (at most its burst); a leaky bucket's line's end.
    AsIs,
}

/// The terms a bucket's queue was last charged under: its window, max and, a token bucket's, burst, as its
/// script tags the queue (`@<t|l><window>,<max>,<burst or 0>`). A leaky bucket's `max_wait` is a call's
/// patience, not its line's: a change of it moves nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Under {
    window: u64,
    max: u64,
    burst: u64,
}

impl Under {
    /// Returns the terms of a call of `terms` on a bucket of `algorithm`.
    fn of(algorithm: Algorithm, terms: &Terms) -> Under {
        Under {
            window: terms.window,
            max: terms.max,
            burst: match algorithm {
                Algorithm::TokenBucket => terms.burst,
                _ => 0,
            },
        }
    }
}

impl State {
    /// Carries the state over, at `now`, to a call of `terms` (see the module's docs), a bucket's level by
    /// `carry` (`None`: not carried, the terms adopted as they come). The terms it was counted in are
    /// remembered, so that the same terms again change nothing.
    pub(crate) fn carry(&mut self, now: u64, terms: &Terms, carry: Option<Level>) {
        match self {
            State::FixedWindow(window) => window.carry(now, terms.window),
            State::Calendar(period) => period.carry(now, calendar::end(now, terms)),
            State::SlidingWindow(window) => window.carry(now, terms.window),
            State::TokenBucket(bucket) => {
                let under = &mut bucket.under;
                let queue = &mut bucket.full_at;
                carry_queue(Algorithm::TokenBucket, (queue, under), now, terms, carry);
            }
            State::LeakyBucket(bucket) => {
                let under = &mut bucket.under;
                let queue = &mut bucket.free_at;
                carry_queue(Algorithm::LeakyBucket, (queue, under), now, terms, carry);
            }
            State::SlidingLog(_) | State::InFlight(_) => {}
        }
    }
}

impl FixedWindow {
    /// Carries the count over to windows of `window` µs: into now's window while the old one is current.
    fn carry(&mut self, now: u64, window: u64) {
        let counted = std::mem::replace(&mut self.window, window);
        if counted == 0 || counted == window || self.index == u64::MAX {
            return;
        }
        let ends = self.index.saturating_add(1).saturating_mul(counted);
        if ends > now && self.count > 0 {
            self.index = now / window;
        } else {
            *self = FixedWindow {
                window,
                ..FixedWindow::default()
            };
        }
    }
}

impl Calendar {
    /// Carries the count over to the period ending at `end`: from another period still current (the period
    /// or the zone changed).
    fn carry(&mut self, now: u64, end: u64) {
        let held = &mut self.0;
        if held.index != u64::MAX && held.index != end && held.index > now && held.count > 0 {
            held.index = end;
        }
    }
}

impl SlidingWindow {
    /// Carries the counts over to windows of `window` µs: what they weigh now, in whole units rounded up, as
    /// now's window's count.
    fn carry(&mut self, now: u64, window: u64) {
        let counted = std::mem::replace(&mut self.window, window);
        if counted == 0 || counted == window || self.index == u64::MAX {
            return;
        }
        let length = u128::from(counted);
        let since = u128::from(now.saturating_sub(self.index.saturating_mul(counted)));
        let (current, previous) = (u128::from(self.current), u128::from(self.previous));
        let weighed = if since < length {
            previous * (length - since) + current * length
        } else if since < 2 * length {
            current * (2 * length - since)
        } else {
            0
        };
        *self = match narrow(ceil_div(weighed, length)) {
            0 => SlidingWindow {
                window,
                ..SlidingWindow::default()
            },
            carried => SlidingWindow {
                index: now / window,
                current: carried,
                previous: 0,
                window,
            },
        };
    }
}

/// Carries a bucket's queue (and the terms it was charged under) over to a call of `terms` at `now`, by
/// `carry` (see the module's docs).
fn carry_queue(
    algorithm: Algorithm,
    (queue, under): (&mut Queue, &mut Option<Under>),
    now: u64,
    terms: &Terms,
    carry: Option<Level>,
) {
    let to = Under::of(algorithm, terms);
    let (Some(from), Some(carry)) = (under.replace(to), carry) else {
        return;
    };
    if from == to {
        return;
    }
    let used = queue.used(now, from.max);
    if used == 0 {
        return;
    }
    // The level, exactly, in doubles as the script computes it (the same operations in the same order: the
    // same roundings), rounded up to the queue's grain (1/max µs).
    let (was, window) = (from.window as f64, to.window as f64);
    let reach = match (algorithm, carry) {
        (Algorithm::TokenBucket, Level::Proportional) => {
            let (had, has) = (from.burst.max(1) as f64, to.burst as f64);
            narrow_f64(used as f64 * has * window / (had * was))
        }
        (Algorithm::TokenBucket, Level::AsIs) => {
            let (had, has) = (from.burst.max(1) as f64, to.burst as f64);
            let left = used as f64 * window / was + (has - had) * window;
            narrow_f64(left.max(0.0).min(has * window))
        }
        // The slots queued stay, spaced anew.
        (_, Level::Proportional) => narrow_f64(used as f64 * window / was),
        (_, Level::AsIs) => {
            // Where the line ends, in the new max's fractions (rounded up): it stays.
            let (old, new) = (u128::from(from.max), u128::from(to.max));
            used / old * new + ceil_div(used % old * new, old)
        }
    };
    *queue = match reach {
        0 => Queue::default(),
        reach => Queue::at(now, reach, to.max, now, 0),
    };
}

/// Returns `x` (not negative) rounded up, as a whole number of the queue's grain.
fn narrow_f64(x: f64) -> u128 {
    x.ceil() as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000;

    /// A limit of `max` per second; a token bucket of `burst`, a leaky bucket waiting up to `wait` seconds.
    fn terms(max: u64, burst: u64, wait: u64) -> Terms {
        Terms {
            window: SECOND,
            max,
            cost: 1,
            burst,
            max_wait: wait * SECOND,
            ends: [0; 3],
            kept: 0,
        }
    }

    /// Returns what a call of one unit finds left of `state` (its outcome's `remaining`, plus the unit).
    fn left(state: &State, now: u64, terms: &Terms) -> u64 {
        let outcome = state.clone().decide(now, terms);
        outcome.remaining + u64::from(outcome.allowed)
    }

    /// Checks that a token bucket 70% used stays 70% used of a doubled burst (proportional), keeps its tokens
    /// (as is), and that the same terms again change nothing.
    #[test]
    fn a_token_bucket_keeps_its_share_or_its_tokens() {
        let before = terms(10, 10, 0);
        let mut bucket = State::new(Algorithm::TokenBucket);
        bucket.carry(0, &before, Some(Level::Proportional));
        for _ in 0..7 {
            assert!(bucket.decide(0, &before).allowed);
        }
        let mut again = bucket.clone();
        again.carry(0, &before, Some(Level::Proportional));
        assert_eq!(left(&again, 0, &before), 3, "the same terms: nothing moves");
        let after = terms(20, 20, 0);
        let mut proportional = bucket.clone();
        proportional.carry(0, &after, Some(Level::Proportional));
        assert_eq!(left(&proportional, 0, &after), 6, "30% of 20");
        let mut as_is = bucket.clone();
        as_is.carry(0, &after, Some(Level::AsIs));
        assert_eq!(left(&as_is, 0, &after), 3, "the three tokens it held");
        let smaller = terms(10, 2, 0);
        let mut capped = bucket.clone();
        capped.carry(0, &smaller, Some(Level::AsIs));
        assert_eq!(left(&capped, 0, &smaller), 2, "at most the burst");
        let mut unchanged = bucket;
        unchanged.carry(0, &after, None);
        // Not carried: the queue read under the new terms, as it comes (7 tokens of 10 per second, 0.7 s to
        // refill, read as 14 tokens of 20).
        assert_eq!(left(&unchanged, 0, &after), 6);
    }

    /// Checks that a leaky bucket's line keeps its slots, spaced anew, or its end; that a call's wait moves
    /// nothing; and that it stays as it was when its rate changes back and forth.
    #[test]
    fn a_leaky_line_keeps_its_slots_or_its_end() {
        // Ten slots a second, waiting up to a second; five queued, the line ends at 0.5 s.
        let before = terms(10, 0, 1);
        let mut line = State::new(Algorithm::LeakyBucket);
        line.carry(0, &before, Some(Level::Proportional));
        for _ in 0..5 {
            assert!(line.decide(0, &before).allowed);
        }
        let delay = |line: &State, to: &Terms, carry| {
            let mut line = line.clone();
            line.carry(0, to, Some(carry));
            line.decide(0, to).delay
        };
        // A rate doubled: five slots of 0.05 s; halved: of 0.2 s; a wait doubled: as it was.
        assert_eq!(
            delay(&line, &terms(20, 0, 1), Level::Proportional),
            SECOND / 4
        );
        assert_eq!(delay(&line, &terms(5, 0, 1), Level::Proportional), SECOND);
        assert_eq!(
            delay(&line, &terms(10, 0, 2), Level::Proportional),
            SECOND / 2
        );
        // As is, the line ends where it did.
        for to in [terms(20, 0, 1), terms(5, 0, 1), terms(10, 0, 2)] {
            assert_eq!(delay(&line, &to, Level::AsIs), SECOND / 2);
        }
        // Back and forth between a fast rate and a slow one, the line stays as it was.
        for carry in [Level::Proportional, Level::AsIs] {
            let mut line = line.clone();
            for round in 0..20 {
                let to = match round % 2 {
                    0 => terms(1_000, 0, 0),
                    _ => terms(10, 0, 1),
                };
                line.carry(0, &to, Some(carry));
            }
            assert_eq!(line.decide(0, &before).delay, SECOND / 2, "{carry:?}");
        }
    }

    /// Checks that a fixed window's count moves whole into now's window while its own is current, and not
    /// once it has ended; a sliding window's weighs what it weighed.
    #[test]
    fn the_windows_move_their_counts_while_they_count() {
        let minute = |max| Terms {
            window: 60 * SECOND,
            ..terms(max, max, 0)
        };
        let mut fixed = State::new(Algorithm::FixedWindow);
        fixed.carry(0, &minute(5), None);
        for _ in 0..5 {
            assert!(fixed.decide(0, &minute(5)).allowed);
        }
        // A window of 10 s at 30 s: the minute is current, its five move into [30 s, 40 s).
        let mut moved = fixed.clone();
        moved.carry(30 * SECOND, &terms(5, 5, 0), None);
        assert!(!moved.decide(30 * SECOND, &terms(5, 5, 0)).allowed);
        assert!(moved.decide(40 * SECOND, &terms(5, 5, 0)).allowed);
        // At 61 s the minute has ended: nothing moves.
        let mut ended = fixed;
        ended.carry(61 * SECOND, &terms(5, 5, 0), None);
        assert_eq!(left(&ended, 61 * SECOND, &terms(5, 5, 0)), 5);

        let mut sliding = State::new(Algorithm::SlidingWindow);
        sliding.carry(0, &minute(10), None);
        for _ in 0..10 {
            assert!(sliding.decide(SECOND, &minute(10)).allowed);
        }
        // At 90 s the ten weigh half: five units move into the new window.
        let mut carried = sliding;
        carried.carry(90 * SECOND, &terms(10, 10, 0), None);
        assert_eq!(left(&carried, 90 * SECOND, &terms(10, 10, 0)), 5);
    }
}
