//! The rate a fleet learned for an upstream's key: a share of the limit's `max`, in thousandths, that the
//! upstream's answers move as TCP's congestion window moves (additive increase, multiplicative decrease). A
//! refusal of a call spaced for the rate in force cuts it to 9/10 (those spaced for a higher one, before a
//! cut, are already answered by it); each success while it is below the whole gives back a thousandth (a cut made
//! good in a hundred successes); a quota the answers state below the limit's lowers it at once. Never above
//! the whole (the limit as configured), never below a twentieth. Kept in Redis beside the key's pause
//! (`scripts/pause.lua`, the block's last field) and remembered an hour after its last move; a turn's slots
//! are spaced for it ([`turn`](crate::limiter::turn)).

use std::time::Duration;

/// The whole limit: a key no answer lowered.
pub(crate) const WHOLE: u32 = 1_000;

/// What a refusal keeps of the rate (multiplicative decrease).
pub(crate) const CUT: u32 = 900;

/// What a success adds back (additive increase).
pub(crate) const STEP: u32 = 1;

/// The least the rate goes down to.
pub(crate) const LEAST: u32 = 50;

/// How long Redis remembers a learned rate after its last move.
pub(crate) const REMEMBERED: Duration = Duration::from_secs(3_600);

/// How one answer moves the learned rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Move {
    /// What of it is kept (thousandths): [`CUT`] for a refusal, else the whole.
    pub(crate) keep: u32,
    /// The rate the answered call's slot was spaced for: a refusal cuts only a rate no lower (one cut per
    /// rate, as TCP cuts once a window: the slots handed out before a cut, refused, say nothing of the rate
    /// after it).
    pub(crate) spaced_for: u32,
    /// What is added back (thousandths): [`STEP`] for a success.
    pub(crate) step: u32,
    /// The most it may be (thousandths): a stated quota's share of the limit, else the whole.
    pub(crate) ceiling: u32,
}

impl Move {
    /// The move of no answer: the rate stays.
    pub(crate) const NONE: Move = Move {
        keep: WHOLE,
        spaced_for: 0,
        step: 0,
        ceiling: WHOLE,
    };

    /// Returns the rate it moves `rate` to (as `scripts/pause.lua` does).
    pub(crate) fn apply(&self, rate: u32) -> u32 {
        let keep = match rate < self.spaced_for {
            true => WHOLE,
            false => self.keep,
        };
        let rate = rate.min(WHOLE) * keep / WHOLE + self.step;
        rate.min(self.ceiling).clamp(LEAST, WHOLE)
    }
}

/// What the store made of an answer: how long (µs) the key's pause in force lasts, the rate learned and
/// the one before it (thousandths), and when (µs, the store's clock). A rate lowered re-spaces the line from
/// then: what it holds past that time stretched by `from / rate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Moved {
    pub(crate) left: u64,
    pub(crate) rate: u32,
    pub(crate) from: u32,
    pub(crate) at: u64,
}

/// Returns the share of a limit of `max` calls a `window` that a stated quota of `calls` over `over` (the
/// limit's window when not said) allows, in thousandths: the ceiling it sets, the whole when it allows more.
pub(crate) fn ceiling(calls: u64, over: Option<Duration>, max: u64, window: Duration) -> u32 {
    let over = over.unwrap_or(window).as_secs_f64();
    if over <= 0.0 || max == 0 {
        return WHOLE;
    }
    let per_window = calls as f64 * window.as_secs_f64() / over;
    let share = (per_window / max as f64 * f64::from(WHOLE)).floor();
    if share >= f64::from(WHOLE) {
        WHOLE
    } else {
        (share as u32).max(LEAST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that refusals cut the rate to 9/10 each, successes add a thousandth each up to the whole, a
    /// stated quota caps it, and nothing takes it below a twentieth.
    #[test]
    fn refusals_cut_the_rate_and_successes_bring_it_back() {
        let refused = |spaced_for| Move {
            keep: CUT,
            spaced_for,
            ..Move::NONE
        };
        let success = Move {
            step: STEP,
            ..Move::NONE
        };
        assert_eq!(refused(WHOLE).apply(WHOLE), 900);
        assert_eq!(refused(900).apply(900), 810);
        assert_eq!(
            refused(WHOLE).apply(810),
            810,
            "a slot spaced before the cut cuts nothing"
        );
        let back = (0..100).fold(900, |rate, _| success.apply(rate));
        assert_eq!(back, WHOLE);
        assert_eq!(success.apply(WHOLE), WHOLE);
        assert_eq!(
            (0..100).fold(WHOLE, |rate, _| refused(rate).apply(rate)),
            LEAST
        );
        let half = Move {
            ceiling: ceiling(5, None, 10, Duration::from_secs(1)),
            ..success
        };
        assert_eq!(half.apply(WHOLE), 500);
        assert_eq!(
            ceiling(
                600,
                Some(Duration::from_secs(60)),
                10,
                Duration::from_secs(1)
            ),
            WHOLE
        );
        assert_eq!(
            ceiling(
                300,
                Some(Duration::from_secs(60)),
                10,
                Duration::from_secs(1)
            ),
            500
        );
    }
}
