//! The periods' ends each thread found last: they change only when a period ends, and finding them in a
//! zone (a few hundred ns) would otherwise cost more than the rest of an in-memory decision.

use std::cell::RefCell;

use super::{Period, Zone};

/// Entries kept per thread: the rules (periods, billing days, zones) a thread decides for most.
const ENTRIES: usize = 8;

struct Entry {
    period: Period,
    anchor: u8,
    zone: Zone,
    ends: [u64; 3],
}

#[derive(Default)]
struct Recent {
    entries: Vec<Entry>,
    /// The entry replaced next, once they are all taken.
    next: usize,
}

thread_local! {
    static RECENT: RefCell<Recent> = RefCell::default();
}

/// Returns the ends of `period` (from `anchor`) in `zone` around `now`: as found last on this thread while `now` is
/// still in that period, else as `find` says (then kept).
pub(super) fn ends(
    now: u64,
    period: Period,
    anchor: u8,
    zone: &Zone,
    find: impl FnOnce() -> [u64; 3],
) -> [u64; 3] {
    RECENT.with(|recent| {
        let mut recent = recent.borrow_mut();
        let same = |entry: &&mut Entry| {
            entry.period == period && entry.anchor == anchor && entry.zone == *zone
        };
        if let Some(entry) = recent.entries.iter_mut().find(same) {
            if entry.ends[0] <= now && now < entry.ends[1] {
                return entry.ends;
            }
            entry.ends = find();
            return entry.ends;
        }
        let entry = Entry {
            period,
            anchor,
            zone: zone.clone(),
            ends: find(),
        };
        let ends = entry.ends;
        if recent.entries.len() < ENTRIES {
            recent.entries.push(entry);
        } else {
            let next = recent.next;
            recent.entries[next] = entry;
            recent.next = (next + 1) % ENTRIES;
        }
        ends
    })
}
