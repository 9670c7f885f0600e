//! Property tests: each algorithm's documented guarantee holds for any schedule of calls.

use proptest::prelude::*;

use super::fixed_window::FixedWindow;
use super::leaky_bucket::LeakyBucket;
use super::sliding_log::SlidingLog;
use super::sliding_window::SlidingWindow;
use super::token_bucket::TokenBucket;
use super::{Algorithm, Outcome, State, Terms};

/// A call: how long after the previous one (µs), and its cost.
type Call = (u64, u64);

fn schedule(window: u64) -> impl Strategy<Value = Vec<Call>> {
    let step = prop_oneof![
        3 => Just(0u64),
        4 => 0..=window / 4,
        1 => 0..=3 * window,
    ];
    prop::collection::vec(
        (
            step,
            prop_oneof![6 => Just(1u64), 2 => 0..=3u64, 1 => 0..=12u64],
        ),
        1..300,
    )
}

fn rule() -> impl Strategy<Value = (u64, u64)> {
    (
        prop_oneof![Just(1_000_000u64), Just(3_333_333), 1..=5_000_000u64],
        1..=10u64,
    )
}

/// Runs `calls` through `decide`, returning each admission's time, cost and outcome.
fn run(calls: &[Call], mut decide: impl FnMut(u64, u64) -> Outcome) -> Vec<(u64, u64, Outcome)> {
    let mut now = 3_600_000_000;
    let mut admitted = Vec::new();
    for &(step, cost) in calls {
        now += step;
        let outcome = decide(now, cost);
        if outcome.allowed {
            admitted.push((now, cost, outcome));
        }
    }
    admitted
}

fn charge(window: u64, max: u64, cost: u64) -> Terms {
    Terms {
        window,
        max,
        cost,
        burst: max,
        max_wait: 0,
        ends: [0; 3],
        kept: 0,
    }
}

proptest! {
    #[test]
    fn sliding_log_never_admits_more_than_max_in_any_window((window, max) in rule(), calls in schedule(5_000_000)) {
        let mut log = SlidingLog::default();
        let admitted = run(&calls, |now, cost| log.decide(now, &charge(window, max, cost)));
        for &(end, _, _) in &admitted {
            // Every interval of length `window` ending at an admission: (end - window, end].
            let units: u64 = admitted.iter().filter(|(t, _, _)| *t + window > end && *t <= end).map(|(_, c, _)| c).sum();
            prop_assert!(units <= max, "{units} units in the window ending at {end}");
        }
    }

    #[test]
    fn fixed_window_never_admits_more_than_max_per_aligned_window((window, max) in rule(), calls in schedule(5_000_000)) {
        let mut state = FixedWindow::default();
        let admitted = run(&calls, |now, cost| state.decide(now, &charge(window, max, cost)));
        for &(at, _, _) in &admitted {
            let units: u64 = admitted.iter().filter(|(t, _, _)| t / window == at / window).map(|(_, c, _)| c).sum();
            prop_assert!(units <= max);
        }
    }

    #[test]
    fn sliding_window_never_admits_more_than_max_per_aligned_window((window, max) in rule(), calls in schedule(5_000_000)) {
        let mut state = SlidingWindow::default();
        let admitted = run(&calls, |now, cost| state.decide(now, &charge(window, max, cost)));
        for &(at, _, _) in &admitted {
            let units: u64 = admitted.iter().filter(|(t, _, _)| t / window == at / window).map(|(_, c, _)| c).sum();
            prop_assert!(units <= max);
        }
    }

    #[test]
    fn token_bucket_never_admits_more_than_burst_plus_the_rate(
        (window, max) in rule(),
        burst in 1..=20u64,
        calls in schedule(5_000_000),
    ) {
        let mut bucket = TokenBucket::default();
        let admitted = run(&calls, |now, cost| bucket.decide(now, &Terms { burst, ..charge(window, max, cost) }));
        for (i, &(start, _, _)) in admitted.iter().enumerate() {
            let mut units = 0u128;
            for &(end, cost, _) in &admitted[i..] {
                units += u128::from(cost);
                // units ≤ burst + max · (end - start) / window, in integers.
                prop_assert!(
                    units * u128::from(window) <= u128::from(burst) * u128::from(window) + u128::from(max) * u128::from(end - start),
                    "{units} units in {} µs", end - start
                );
            }
        }
    }

    #[test]
    fn leaky_bucket_slots_are_never_closer_than_window_over_max(
        (window, max) in rule(),
        wait_windows in 0..=3u64,
        calls in schedule(5_000_000),
    ) {
        let mut bucket = LeakyBucket::default();
        let max_wait = wait_windows * window;
        let admitted = run(&calls, |now, cost| bucket.decide(now, &Terms { max_wait, ..charge(window, max, cost) }));
        for pair in admitted.windows(2) {
            let ((a, cost, first), (b, _, second)) = (pair[0], pair[1]);
            let (slot_a, slot_b) = (a + first.delay, b + second.delay);
            prop_assert!(first.delay <= max_wait);
            // Slots start on whole microseconds: at least the slot length, rounded down.
            let spacing = u128::from(cost) * u128::from(window) / u128::from(max);
            prop_assert!(u128::from(slot_b - slot_a) >= spacing, "slots {slot_a} and {slot_b} closer than {spacing} µs");
        }
    }

    #[test]
    fn retry_after_is_exact(
        (window, max) in rule(),
        calls in schedule(5_000_000),
        algorithm in prop::sample::select(Algorithm::ALL.to_vec()),
    ) {
        // A call made exactly `retry_after` later is admitted, and one made a microsecond earlier is not,
        // when nothing else happened (every algorithm; for the sliding window, exact for its estimate).
        let decide = |state: &mut State, now, cost| state.decide(now, &charge(window, max, cost));
        let make = || State::new(algorithm);
        let mut now = 3_600_000_000;
        let mut history = Vec::new();
        for &(step, cost) in &calls {
            now += step;
            history.push((now, cost));
            // Replay the history into a fresh state, then probe the last call's retry_after.
            let mut state = make();
            let mut last = None;
            for &(t, c) in &history {
                last = Some(decide(&mut state, t, c));
            }
            let last = last.unwrap();
            if last.allowed || cost > max || cost == 0 {
                continue;
            }
            history.pop();
            let probe = |at: u64| {
                let mut state = make();
                for &(t, c) in &history {
                    decide(&mut state, t, c);
                }
                decide(&mut state, at, cost).allowed
            };
            prop_assert!(probe(now + last.retry_after), "not admitted after retry_after {}", last.retry_after);
            if last.retry_after > 0 {
                prop_assert!(!probe(now + last.retry_after - 1), "admitted before retry_after {}", last.retry_after);
            }
        }
    }
}
