//! A node's line of calls waiting for their turn on one upstream key: Redis hands out the slots in the order
//! calls reach it, across every node; within this node, a slot that comes goes to the most important call
//! waiting, then the one that came first ([`Priority`], then arrival).
//!
//! Slots are exchanged, never made: whenever a call joins, the slots the line holds (with what Redis charged
//! for each) are dealt again, the earliest to the most important call, then to the one that came first
//! (among calls of the same cost). So a `High` call that joins behind `Normal` ones takes the next slot, and
//! each `Normal` call moves one slot later, in its order. What a call gives back, if it leaves, is exactly the
//! slot it holds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::Notify;

use crate::call::LimitRuling;
use crate::Priority;

/// Every line of this node, by the store key of the limit that gives the slots.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    lines: Mutex<HashMap<String, Vec<Seat>>>,
    /// The next seat's number: the order calls joined.
    next: AtomicU64,
    /// How late the store's answers come: a slot is the store's time, not the answer's arrival's.
    pub(crate) lag: super::lag::Lag,
}

/// A call waiting in a line: its slot, and what Redis charged for it.
#[derive(Debug)]
struct Seat {
    id: u64,
    priority: Priority,
    cost: u64,
    slot: Instant,
    charged: LimitRuling,
    /// Told when its slot changes.
    wake: Arc<Notify>,
}

/// A call's place in a line: what it waits with.
#[derive(Debug)]
pub(crate) struct Place {
    pub(crate) id: u64,
    pub(crate) wake: Arc<Notify>,
}

/// What a call whose slot may have come finds.
#[derive(Debug)]
pub(crate) enum AtSlot {
    /// Its turn: the charge of the slot it goes in, and the slot's time.
    Go(LimitRuling, Instant),
    /// Its slot is (now) this one: wait on.
    Wait(Instant),
}

impl Lines {
    /// Seats a call of `priority` and `cost` in `key`'s line, with the `slot` Redis gave it and its charge.
    pub(crate) fn join(
        &self,
        key: &str,
        priority: Priority,
        cost: u64,
        slot: Instant,
        charged: LimitRuling,
    ) -> Place {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let wake = Arc::new(Notify::new());
        let seat = Seat {
            id,
            priority,
            cost,
            slot,
            charged,
            wake: Arc::clone(&wake),
        };
        let mut lines = self.lock();
        let line = lines.entry(key.to_owned()).or_default();
        line.push(seat);
        deal(line, cost);
        Place { id, wake }
    }

    /// Returns whether calls of `cost` wait in `key`'s line.
    pub(crate) fn waiting(&self, key: &str, cost: u64) -> bool {
        let lines = self.lock();
        lines
            .get(key)
            .is_some_and(|line| line.iter().any(|seat| seat.cost == cost))
    }

    /// Returns what seat `id` in `key`'s line finds at `now`: its turn once its slot has come (it holds the
    /// earliest slot of the calls like it: none more important waits), else the slot it holds now.
    pub(crate) fn at_slot(&self, key: &str, id: u64, now: Instant) -> Option<AtSlot> {
        let mut lines = self.lock();
        let line = lines.get_mut(key)?;
        let mine = line.iter().position(|seat| seat.id == id)?;
        if line[mine].slot > now {
            return Some(AtSlot::Wait(line[mine].slot));
        }
        let seat = line.swap_remove(mine);
        if line.is_empty() {
            lines.remove(key);
        }
        Some(AtSlot::Go(seat.charged, seat.slot))
    }

    /// Takes seat `id` out of `key`'s line (a call that leaves before its turn): the charge of the latest slot
    /// of its cost the line holds, which goes back. The calls behind it move up, each one slot earlier (dealt
    /// again, as when a call joins): a caller that gives up never leaves a hole the others wait behind, and
    /// what goes back is the end of this node's line (the end of the fleet's, unless another node's call
    /// came after).
    pub(crate) fn leave(&self, key: &str, id: u64) -> Option<LimitRuling> {
        let mut lines = self.lock();
        let line = lines.get_mut(key)?;
        let mine = line.iter().position(|seat| seat.id == id)?;
        let seat = line.swap_remove(mine);
        let latest = (0..line.len())
            .filter(|&i| line[i].cost == seat.cost && line[i].slot > seat.slot)
            .max_by_key(|&i| line[i].slot);
        let charged = match latest {
            Some(i) => {
                let later = &mut line[i];
                let charged = std::mem::replace(&mut later.charged, seat.charged);
                later.slot = seat.slot;
                later.wake.notify_one();
                deal(line, seat.cost);
                charged
            }
            None => seat.charged,
        };
        if line.is_empty() {
            lines.remove(key);
        }
        Some(charged)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Seat>>> {
        self.lines.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Deals the slots of the seats of `cost` in `line` again: the earliest to the most important, then to the one
/// that came first; each seat whose slot moved is woken.
fn deal(line: &mut [Seat], cost: u64) {
    let mut seats: Vec<&mut Seat> = line.iter_mut().filter(|seat| seat.cost == cost).collect();
    let mut slots: Vec<(Instant, LimitRuling)> =
        seats.iter().map(|seat| (seat.slot, seat.charged)).collect();
    slots.sort_by_key(|(slot, _)| *slot);
    seats.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.id.cmp(&b.id)));
    for (seat, (slot, charged)) in seats.into_iter().zip(slots) {
        if seat.slot != slot {
            (seat.slot, seat.charged) = (slot, charged);
            seat.wake.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{Outcome, Terms};
    use crate::Decision;

    fn charge() -> LimitRuling {
        let terms = Terms {
            window: 1,
            max: 1,
            cost: 1,
            burst: 1,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        };
        LimitRuling::uncharged(Decision::new(&terms, Outcome::admit(1), 0, false))
    }

    /// Checks that a more important call joining takes the earliest slot not yet gone, and the calls it passes
    /// each move one slot later, in their order.
    #[test]
    fn the_earliest_slot_goes_to_the_most_important_call_then_the_first() {
        let lines = Lines::default();
        let at = Instant::now() + std::time::Duration::from_secs(60);
        let slot = |i: u64| at + std::time::Duration::from_millis(100 * i);
        let normal: Vec<_> = (0..3)
            .map(|i| lines.join("k", Priority::Normal, 1, slot(i), charge()).id)
            .collect();
        let high = lines.join("k", Priority::High, 1, slot(3), charge()).id;
        let other_cost = lines.join("k", Priority::Critical, 2, slot(4), charge()).id;
        let held = |id| match lines.at_slot("k", id, Instant::now()) {
            Some(AtSlot::Wait(slot)) => slot,
            other => panic!("{other:?}"),
        };
        assert_eq!(held(high), slot(0));
        assert_eq!(
            normal.iter().map(|&id| held(id)).collect::<Vec<_>>(),
            [slot(1), slot(2), slot(3)]
        );
        assert_eq!(
            held(other_cost),
            slot(4),
            "a call of another cost keeps its slot"
        );
        assert!(matches!(
            lines.at_slot("k", high, slot(0)),
            Some(AtSlot::Go(..))
        ));
        assert!(lines.leave("k", normal[0]).is_some());
        assert!(lines.leave("k", normal[0]).is_none());
    }

    /// Checks that a call leaving from the middle of the line gives back the line's latest slot of its cost,
    /// and the calls behind it each move one slot earlier, in their order.
    #[test]
    fn a_call_that_leaves_gives_back_the_latest_slot_and_the_others_move_up() {
        let lines = Lines::default();
        let at = Instant::now() + std::time::Duration::from_secs(60);
        let slot = |i: u64| at + std::time::Duration::from_millis(100 * i);
        let charged = |i: u64| {
            let mut charge = charge();
            charge.decision.remaining = i;
            charge
        };
        let ids: Vec<_> = (0..4)
            .map(|i| lines.join("k", Priority::Normal, 1, slot(i), charged(i)).id)
            .collect();
        let other_cost = lines.join("k", Priority::Normal, 2, slot(9), charged(9)).id;
        let held = |id| match lines.at_slot("k", id, Instant::now()) {
            Some(AtSlot::Wait(slot)) => slot,
            other => panic!("{other:?}"),
        };
        let back = lines.leave("k", ids[1]).expect("in the line");
        assert_eq!(
            back.decision.remaining, 3,
            "the latest slot's charge goes back"
        );
        assert_eq!(
            [ids[0], ids[2], ids[3]].map(held),
            [slot(0), slot(1), slot(2)],
            "the calls behind move up"
        );
        assert_eq!(
            held(other_cost),
            slot(9),
            "a call of another cost keeps its slot"
        );
        assert!(
            matches!(lines.at_slot("k", ids[2], slot(1)), Some(AtSlot::Go(go, _)) if go.decision.remaining == 1)
        );
        let back = lines.leave("k", ids[3]).expect("in the line");
        assert_eq!(
            back.decision.remaining, 2,
            "the last one gives back its own"
        );
    }
}
