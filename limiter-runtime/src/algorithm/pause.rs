//! An upstream's pause, and a rate its answers lowered, as each algorithm takes it: the twin of the `pause` sections of `scripts/algorithms/`
//! (see their README). A leaky bucket waits a pause out: its line ends no earlier than the pause, so a call
//! is given a slot after it, or refused as a full line refuses it. Every other algorithm has no `pause`: the
//! pause refuses its calls, as any block does.

use super::{Algorithm, State};

impl State {
    /// Returns whether `algorithm` waits out an upstream's pause rather than refusing during it (its script
    /// has a `pause` section): only the leaky bucket, whose calls wait for their slots.
    #[inline]
    pub(crate) fn waits_out_pauses(algorithm: Algorithm) -> bool {
        algorithm == Algorithm::LeakyBucket
    }

    /// Moves the state for calls at `now` of a key an upstream paused until `until` (µs, later than `now`), of a
    /// limit of `max`, when its algorithm waits the pause out ([`waits_out_pauses`](State::waits_out_pauses)),
    /// as the algorithm's `pause` section does: a leaky bucket's line then ends no earlier than the pause's
    /// end. Returns whether it did; any other state is left as it is, and the pause refuses its calls.
    pub(crate) fn after_pause(&mut self, now: u64, until: u64, max: u64) -> bool {
        match self {
            State::LeakyBucket(bucket) => {
                bucket.after_pause(now, until, max);
                true
            }
            _ => false,
        }
    }

    /// Re-spaces a line at `now` for a rate lowered from `from` to `to` (thousandths), as `scripts/pause.lua`
    /// does: a leaky bucket's reach past now stretched by `from / to`. Returns how far it then reaches (µs),
    /// `None` for any other state.
    pub(crate) fn stretch(&mut self, now: u64, max: u64, (from, to): (u32, u32)) -> Option<u64> {
        match self {
            State::LeakyBucket(bucket) => Some(bucket.stretch(now, max, from, to)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::Terms;
    use super::*;

    const SECOND: u64 = 1_000_000;

    /// Ten slots a second, waiting up to `max_wait`.
    fn terms(max_wait: u64, cost: u64) -> Terms {
        Terms {
            window: SECOND,
            max: 10,
            cost,
            burst: 10,
            max_wait,
            ends: [0; 3],
            kept: 0,
        }
    }

    /// Checks that only the leaky bucket waits a pause out, and that the others' states are left as they were.
    #[test]
    fn only_the_leaky_bucket_waits_a_pause_out() {
        let now = 3_600 * SECOND;
        for algorithm in [
            Algorithm::SlidingLog,
            Algorithm::FixedWindow,
            Algorithm::SlidingWindow,
            Algorithm::TokenBucket,
            Algorithm::LeakyBucket,
            Algorithm::InFlight,
            Algorithm::Calendar,
        ] {
            let mut state = State::new(algorithm);
            let waits = state.after_pause(now, now + SECOND, 10);
            assert_eq!(waits, State::waits_out_pauses(algorithm), "{algorithm}");
            assert_eq!(waits, algorithm == Algorithm::LeakyBucket, "{algorithm}");
        }
    }

    /// Checks the leaky bucket's pause on an empty line, by hand: a call 2 s into a pause is given the slot at its
    /// end (a delay of 2 s), the next one the slot after (2.1 s); one that would wait past its 1 s is refused,
    /// told to come back when its slot is within its wait, and the line it found stays moved.
    #[test]
    fn a_paused_leaky_bucket_gives_the_slot_after_the_pause() {
        let now = 3_600 * SECOND;
        let mut state = State::new(Algorithm::LeakyBucket);
        assert!(state.after_pause(now, now + 2 * SECOND, 10));
        let first = state.decide(now, &terms(5 * SECOND, 1));
        assert!(first.allowed);
        assert_eq!(first.delay, 2 * SECOND);
        assert_eq!(first.receipt.since, now, "a new run starts at the pause");
        let second = state.decide(now, &terms(5 * SECOND, 1));
        assert_eq!(second.delay, 2 * SECOND + SECOND / 10);

        let mut state = State::new(Algorithm::LeakyBucket);
        assert!(state.after_pause(now, now + 2 * SECOND, 10));
        let refused = state.decide(now, &terms(SECOND, 1));
        assert!(!refused.allowed && !refused.blocked);
        assert_eq!(refused.retry_after, SECOND);
        assert_eq!(refused.reset_after, 2 * SECOND);
        // Refused, the line stays moved: a call that may wait 3 s finds the slot at the pause's end.
        assert_eq!(state.decide(now, &terms(3 * SECOND, 1)).delay, 2 * SECOND);
    }

    /// Waits for nothing: a leaky bucket's `max_wait` no call here reaches.
    const FOREVER: u64 = u64::MAX / 1_000;

    proptest! {
        /// Checks that, whatever the line held, a call decided after the pause's floor is given a slot no earlier
        /// than the pause's end and no earlier than the line's end, admitted exactly when that slot is within its
        /// wait (else told to come back when it is); that the floor is kept when the call is refused; that a
        /// line that reached past now keeps its run, and an empty one starts a new run at now, as a charge's
        /// move; and that a line already past the pause does not move.
        #[test]
        fn the_slot_after_a_pause_lands_after_it_and_the_line(
            queued in 0..40u64,
            pause in 1..5 * SECOND,
            max_wait in 0..6 * SECOND,
            cost in 0..=10u64,
        ) {
            let (slot, max) = (SECOND / 10, 10);
            // The line filled a second before now, one slot at a time: what is left of it now.
            let (filled_at, now) = (3_599 * SECOND, 3_600 * SECOND);
            let mut bucket = State::new(Algorithm::LeakyBucket);
            for _ in 0..queued {
                prop_assert!(bucket.decide(filled_at, &terms(FOREVER, 1)).allowed);
            }
            let line = (queued * slot).saturating_sub(SECOND);
            let mut paused = bucket.clone();
            prop_assert!(paused.after_pause(now, now + pause, max));
            let outcome = paused.decide(now, &terms(max_wait, cost));
            let starts = line.max(pause);
            prop_assert_eq!(outcome.allowed, starts <= max_wait);
            prop_assert!(!outcome.blocked);
            if outcome.allowed {
                prop_assert_eq!(outcome.delay, starts);
                prop_assert_eq!(outcome.reset_after, starts + cost * slot);
                let since = if line > 0 { filled_at } else { now };
                prop_assert_eq!(outcome.receipt.since, since);
            } else {
                prop_assert_eq!(outcome.retry_after, starts - max_wait);
                prop_assert_eq!(outcome.reset_after, starts);
                // The floor is kept: a call that may wait as long finds the same slot.
                prop_assert_eq!(paused.decide(now, &terms(FOREVER, 0)).delay, starts);
            }
            // A line past the pause does not move.
            if line > 0 {
                let mut unmoved = bucket.clone();
                prop_assert!(unmoved.after_pause(now, now + pause.min(line), max));
                let (a, b) = (
                    unmoved.decide(now, &terms(FOREVER, 0)),
                    bucket.decide(now, &terms(FOREVER, 0)),
                );
                prop_assert_eq!((a.delay, a.reset_after, a.receipt), (b.delay, b.reset_after, b.receipt));
            }
        }
    }
}
