//! Property tests of giving a charge back: exact at once, never more than the limit later, nothing once the
//! charge has left.

use proptest::prelude::*;

use super::{Algorithm, Outcome, State, Terms};

/// A call: how long after the previous one (µs), its cost, and how much of it to give back (when admitted)
/// and after how many further calls (0: at once).
type Call = (u64, u64, u64, usize);

fn schedule(window: u64) -> impl Strategy<Value = Vec<Call>> {
    let step = prop_oneof![3 => Just(0u64), 4 => 0..=window / 4, 1 => 0..=3 * window];
    let cost = prop_oneof![6 => Just(1u64), 2 => 0..=3u64, 1 => 0..=12u64];
    let later = prop_oneof![2 => Just(0usize), 1 => 1..20usize];
    prop::collection::vec((step, cost, 0..=12u64, later), 1..200)
}

fn limits() -> impl Strategy<Value = (Algorithm, u64, u64, u64, u64)> {
    (
        prop::sample::select(Algorithm::ALL.to_vec()),
        prop_oneof![Just(1_000_000u64), Just(3_333_333), 1..=5_000_000u64],
        1..=10u64,
        1..=20u64,
        0..=3u64,
    )
}

fn charge(window: u64, max: u64, burst: u64, wait_windows: u64, cost: u64) -> Terms {
    Terms {
        window,
        max,
        cost,
        burst,
        max_wait: wait_windows * window,
        ends: [0; 3],
        kept: 0,
    }
}

proptest! {
    /// Checks that a charge given back at once (partly or wholly) leaves the limit as if the call had weighed only what
    /// it kept: every later decision is the same.
    #[test]
    fn a_give_back_at_once_is_as_if_the_call_weighed_less(
        (algorithm, window, max, burst, waits) in limits(),
        calls in schedule(5_000_000),
    ) {
        let (mut given_back, mut lighter) = (State::new(algorithm), State::new(algorithm));
        let mut now = 3_600_000_000;
        for (i, &(step, cost, back, _)) in calls.iter().enumerate() {
            now += step;
            let full = charge(window, max, burst, waits, cost);
            let outcome = given_back.decide(now, &full);
            let back = if outcome.allowed { back.min(cost) } else { 0 };
            given_back.give_back(now, &full, back, &outcome.receipt);
            let kept = lighter.decide(now, &charge(window, max, burst, waits, cost - back));
            prop_assert_eq!(outcome.allowed, kept.allowed, "call {}", i);
            // What both say of the next call decides whether they are the same limit.
            let (probe, twin) = (given_back.decide(now, &full), lighter.decide(now, &full));
            prop_assert_eq!(probe.allowed, twin.allowed, "after call {}", i);
            prop_assert_eq!(probe.retry_after, twin.retry_after, "after call {}", i);
            given_back.give_back(now, &full, cost, &probe.receipt);
            lighter.give_back(now, &full, cost, &twin.receipt);
        }
    }

    /// Checks that charges given back later never let more through than the limit allows: counting each admission at
    /// what it kept, the algorithm's guarantee still holds.
    #[test]
    fn later_give_backs_never_admit_more_than_the_limit(
        (algorithm, window, max, burst, waits) in limits(),
        calls in schedule(5_000_000),
    ) {
        let mut state = State::new(algorithm);
        let mut now = 3_600_000_000;
        // (admitted at, units kept, its outcome), and give-backs due: (at call index, admission index, units).
        let mut admitted: Vec<(u64, u64, Outcome)> = Vec::new();
        let mut due: Vec<(usize, usize, u64)> = Vec::new();
        for (i, &(step, cost, back, later)) in calls.iter().enumerate() {
            now += step;
            for &(_, which, units) in due.iter().filter(|(at, _, _)| *at == i) {
                let (_, cost, outcome) = admitted[which];
                state.give_back(now, &charge(window, max, burst, waits, cost), units, &outcome.receipt);
                admitted[which].1 -= units;
            }
            let outcome = state.decide(now, &charge(window, max, burst, waits, cost));
            if outcome.allowed {
                due.push((i + later.max(1), admitted.len(), back.min(cost)));
                admitted.push((now, cost, outcome));
            }
        }
        let (w, m, b) = (u128::from(window), u128::from(max), u128::from(burst));
        // A leaky bucket's slots, given back or not, never overlap what each kept: no slot is handed out twice.
        if algorithm == Algorithm::LeakyBucket {
            for (i, &(at, kept, ref outcome)) in admitted.iter().enumerate().filter(|(_, a)| a.1 > 0) {
                let start = u128::from(at + outcome.delay) * m;
                for &(later, _, ref next) in &admitted[i + 1..] {
                    let next_start = u128::from(later + next.delay) * m;
                    prop_assert!(next_start + m > start + u128::from(kept) * w, "slots {} and a later one overlap", i);
                }
            }
        }
        for (i, &(start, _, _)) in admitted.iter().enumerate() {
            let mut units = 0u128;
            for &(end, kept, ref outcome) in &admitted[i..] {
                units += u128::from(kept);
                let span = u128::from(end - start);
                match algorithm {
                    Algorithm::SlidingLog if span < w => prop_assert!(units <= m, "{} units in {} µs", units, span),
                    Algorithm::FixedWindow | Algorithm::SlidingWindow if end / window == start / window => {
                        prop_assert!(units <= m, "{} units in one window", units)
                    }
                    Algorithm::TokenBucket => prop_assert!(units * w <= b * w + m * span, "{} units in {} µs", units, span),
                    Algorithm::LeakyBucket => prop_assert!(outcome.delay <= waits * window),
                    _ => {}
                }
            }
        }
    }

    /// Checks that a charge given back once it has left the limit (the window passed, the bucket refilled) changes
    /// nothing.
    #[test]
    fn a_give_back_of_a_charge_that_has_left_is_nothing(
        (algorithm, window, max, burst, waits) in limits(),
        calls in schedule(5_000_000),
    ) {
        let (mut given_back, mut untouched) = (State::new(algorithm), State::new(algorithm));
        let mut now = 3_600_000_000;
        let mut first = None;
        for (i, &(step, cost, _, _)) in calls.iter().enumerate() {
            now += step;
            let full = charge(window, max, burst, waits, cost);
            let outcome = given_back.decide(now, &full);
            prop_assert_eq!(outcome, untouched.decide(now, &full), "call {}", i);
            if outcome.allowed && cost > 0 && first.is_none() {
                first = Some((full, outcome.receipt));
            }
            if let Some((charged, receipt)) = first {
                // Gone: two windows later (the sliding window counts the previous one too), and a bucket
                // long since full again (its charge never outlasts `burst` and `max_wait` windows).
                let gone = receipt.at + (2 + burst + waits) * window;
                if now >= gone && now / window >= receipt.at / window + 2 {
                    given_back.give_back(now, &charged, charged.cost, &receipt);
                    first = None;
                }
            }
        }
    }
}

/// The queue of a bucket as a list: each charge's part still in it, in the order charged, drained from the
/// front at `max` µs × max per µs. Slow and plainly right: what [`Queue`](super::queue::Queue) must equal.
#[derive(Default)]
struct Fifo {
    last: u64,
    /// What is left of each charge, µs × max, by charge.
    left: Vec<u128>,
}

impl Fifo {
    fn drain(&mut self, now: u64, max: u64) {
        let mut passed = u128::from(now - self.last) * u128::from(max);
        self.last = now;
        for left in &mut self.left {
            let gone = passed.min(*left);
            *left -= gone;
            passed -= gone;
        }
    }

    fn used(&self) -> u128 {
        self.left.iter().sum()
    }
}

/// A leaky bucket's line as a list of slots: each where it starts and ends (µs × max since the epoch), what
/// it kept, and its run (the line empties between runs). Its end is that of the last slot that kept anything,
/// less what that one gave back: a slot given back from the middle leaves a hole the end moves past only once
/// every slot after it went back too.
#[derive(Default)]
struct Line {
    slots: Vec<(u128, u128, u128, u32)>,
    run: u32,
}

impl Line {
    fn end(&self) -> u128 {
        let mut run = self.slots.iter().filter(|slot| slot.3 == self.run);
        let first = run.clone().next().map_or(0, |slot| slot.0);
        run.rfind(|slot| slot.2 > 0)
            .map_or(first, |slot| slot.0 + slot.2)
    }

    fn used(&self, now: u64, max: u64) -> u128 {
        self.end().saturating_sub(u128::from(now) * u128::from(max))
    }

    fn charge(&mut self, now: u64, max: u64, weight: u128) -> usize {
        let now = u128::from(now) * u128::from(max);
        if self.end() <= now {
            self.run += 1;
        }
        let start = self.end().max(now);
        self.slots.push((start, start + weight, weight, self.run));
        self.slots.len() - 1
    }

    fn give_back(&mut self, which: usize, now: u64, max: u64, weight: u128) {
        let now = u128::from(now) * u128::from(max);
        let (_, end, _, run) = self.slots[which];
        if run == self.run && self.end() > now && end > now {
            let back = (end - now).min(weight);
            self.slots[which].2 -= back;
        }
    }
}

proptest! {
    /// Checks charges given back in any order, wholly or in part, at once or much later: the bucket is exactly as
    /// if each charge had weighed what it kept from the moment it was given back, every part of it still
    /// ahead of now returned, nothing of what had left; a leaky bucket's line ends where its last slot that
    /// kept anything ends ([`Line`]).
    #[test]
    fn give_backs_in_any_order_are_exact(
        algorithm in prop::sample::select(vec![Algorithm::TokenBucket, Algorithm::LeakyBucket]),
        (window, max, burst) in (prop_oneof![Just(1_000_000u64), 1..=5_000_000u64], 1..=10u64, 1..=20u64),
        events in prop::collection::vec(
            (prop_oneof![3 => Just(0u64), 3 => 0..=500_000u64, 1 => 0..=10_000_000u64], 0..=4u64, any::<prop::sample::Index>(), 0..=4u64),
            1..200,
        ),
    ) {
        let mut state = State::new(algorithm);
        let (mut fifo, mut line) = (Fifo::default(), Line::default());
        // Charges not given back yet: (charge, its cost, its receipt).
        let mut open: Vec<(usize, u64, Outcome)> = Vec::new();
        let mut now = 3_600_000_000;
        for (i, &(step, cost, pick, units)) in events.iter().enumerate() {
            now += step;
            fifo.drain(now, max);
            let limit = charge(window, max, burst, 2, cost);
            if units == 0 || open.is_empty() {
                let outcome = state.decide(now, &limit);
                if outcome.allowed {
                    open.push((fifo.left.len(), cost, outcome));
                    fifo.left.push(u128::from(cost) * u128::from(window));
                    line.charge(now, max, u128::from(cost) * u128::from(window));
                }
            } else {
                let (which, cost, outcome) = open.swap_remove(pick.index(open.len()));
                let units = units.min(cost);
                state.give_back(now, &charge(window, max, burst, 2, cost), units, &outcome.receipt);
                let back = fifo.left[which].min(u128::from(units) * u128::from(window));
                fifo.left[which] -= back;
                line.give_back(which, now, max, u128::from(units) * u128::from(window));
            }
            let probe = state.decide(now, &charge(window, max, burst, 2, 0));
            // A call of no cost charges nothing and reports the queue: its end, and (leaky) its wait.
            let used = match algorithm {
                Algorithm::LeakyBucket => line.used(now, max),
                _ => fifo.used(),
            };
            prop_assert_eq!(u128::from(probe.reset_after), used.div_ceil(u128::from(max)), "event {}", i);
        }
    }
}
