//! In flight: the twin of `scripts/algorithms/in_flight.lua`.
//!
//! Guarantee: at most `max` permits of the key held at once. A call takes one permit, whatever its cost, and
//! holds it until it is given back (the body ended). In Redis a permit also expires `window` after it was
//! taken or last renewed, so that a node that dies gives its permits back; in memory a permit lives until it
//! is given back (a process that dies takes its permits with it).

use super::{Outcome, Receipt, Terms};

/// The permits held: each one's mark (naming it, to give it back) and when it expires (µs).
#[derive(Debug, Clone, Default)]
pub(crate) struct InFlight {
    permits: Vec<(u64, u64)>,
    /// The mark of the next permit taken in memory.
    next: u64,
}

/// When a permit taken in memory expires: never (it is given back, or its process is gone).
pub(crate) const HELD: u64 = u64::MAX;

impl InFlight {
    /// Creates the state a script reports: `held` permits, none of whose marks this twin needs (it only replays the
    /// calls on the count).
    pub(crate) fn at(held: u64) -> Self {
        InFlight {
            permits: vec![(0, HELD); usize::try_from(held).unwrap_or(usize::MAX)],
            next: 0,
        }
    }

    /// Takes a permit at `now` if fewer than `max` are held.
    pub(crate) fn decide(&mut self, now: u64, charge: &Terms) -> Outcome {
        self.permits.retain(|&(_, expires)| expires > now);
        let held = self.permits.len() as u64;
        if held.saturating_add(charge.kept) < charge.max {
            self.next += 1;
            self.permits.push((self.next, HELD));
            return Outcome {
                allowed: true,
                remaining: charge.max - charge.kept - held - 1,
                retry_after: 0,
                reset_after: 0,
                delay: 0,
                receipt: Receipt {
                    at: now,
                    mark: self.next,
                    ..Receipt::default()
                },
                blocked: false,
                reserved: false,
            };
        }
        // When a permit comes back is not known: it is the holder's to say.
        Outcome::denied(0, 0, 0).reserved(charge.kept > 0 && held < charge.max)
    }

    /// Gives back the permit `receipt` names (a permit is given back whole, whatever `units` says).
    pub(crate) fn give_back(&mut self, receipt: &Receipt) {
        if let Some(at) = self
            .permits
            .iter()
            .position(|&(mark, _)| mark == receipt.mark)
        {
            self.permits.swap_remove(at);
        }
    }

    /// Returns whether no permit is held: the key can be forgotten.
    pub(crate) fn is_empty(&self) -> bool {
        self.permits.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charge(max: u64) -> Terms {
        Terms {
            window: 30_000_000,
            max,
            cost: 1,
            burst: max,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        }
    }

    #[test]
    fn at_most_max_permits_are_held_and_each_comes_back_once() {
        let mut state = InFlight::default();
        let taken: Vec<Outcome> = (0..3).map(|t| state.decide(t, &charge(3))).collect();
        assert!(taken.iter().all(|outcome| outcome.allowed));
        assert_eq!(taken[2].remaining, 0);
        assert!(!state.decide(3, &charge(3)).allowed);
        state.give_back(&taken[1].receipt);
        // Given back twice, a permit comes back once.
        state.give_back(&taken[1].receipt);
        assert!(state.decide(4, &charge(3)).allowed);
        assert!(!state.decide(5, &charge(3)).allowed);
    }

    #[test]
    fn a_cost_takes_one_permit() {
        let mut state = InFlight::default();
        let heavy = Terms {
            cost: 7,
            ..charge(2)
        };
        assert!(state.decide(0, &heavy).allowed);
        assert!(state.decide(0, &heavy).allowed);
        assert!(!state.decide(0, &heavy).allowed);
    }
}
