//! The keys an upstream paused, as this node heard of them: its own answers, and every other node's through
//! the overrides' channel. A call waiting for its turn looks here before it goes, so that none is sent while
//! its key is paused, even one whose slot Redis gave before the pause (see [`outbound`](crate::outbound)).
//! Redis holds the pause itself, at the key's block: a node that missed the message finds it there (a
//! line's slot after it, any other call refused).
//!
//! Beside each pause, the rate the fleet learned for the key (see [`rate`](crate::outbound::rate)), which a
//! turn spaces its slots for: heard with the pause, or read from Redis when this node has not heard of the
//! key lately ([`rate`](Pauses::rate) says `None`).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a rate heard is taken as the fleet's before it is read again from Redis (in case a message was
/// missed).
const FRESH: Duration = Duration::from_secs(10);

/// What this node heard of a key: when its pause ends (on this node's clock), the rate learned, and when it
/// heard.
#[derive(Debug, Clone, Copy)]
struct Heard {
    until: Instant,
    rate: u32,
    at: Instant,
}

/// A rate lowered, as this node heard of it: when (the store's µs, and this node's clock as it heard), and
/// from and to what (thousandths). The line's slots past it stretch by `from / to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cut {
    at: u64,
    heard: Instant,
    from: u32,
    to: u32,
}

/// How long a cut is kept: longer than any call waits for its slot.
const CUTS_KEPT: Duration = Duration::from_secs(3_600);

/// Paused store keys, each with when its pause ends on this node's clock, the rate learned, and the cuts
/// that re-spaced their lines.
#[derive(Debug, Default)]
pub(crate) struct Pauses {
    heard: Mutex<HashMap<String, Heard>>,
    cuts: Mutex<HashMap<String, Vec<Cut>>>,
}

impl Pauses {
    /// Notes that `key` (a store key) is paused for `length` from now (the later of it and a pause noted
    /// before), and that the fleet's rate for it is `rate` (thousandths of its limit).
    pub(crate) fn note(&self, key: &str, length: Duration, rate: u32) {
        let now = Instant::now();
        let until = now + length;
        let mut all = self.lock();
        all.retain(|_, heard| heard.until > now || now.duration_since(heard.at) < FRESH);
        let heard = all.entry(key.to_owned()).or_insert(Heard {
            until,
            rate,
            at: now,
        });
        *heard = Heard {
            until: heard.until.max(until),
            rate,
            at: now,
        };
    }

    /// Returns when `key`'s pause ends, if one is in force.
    pub(crate) fn until(&self, key: &str) -> Option<Instant> {
        let all = self.lock();
        if all.is_empty() {
            return None;
        }
        all.get(key)
            .map(|heard| heard.until)
            .filter(|&ends| ends > Instant::now())
    }

    /// Returns the rate the fleet learned for `key` (thousandths of its limit), if this node heard it lately.
    pub(crate) fn rate(&self, key: &str) -> Option<u32> {
        let all = self.lock();
        all.get(key)
            .filter(|heard| heard.at.elapsed() < FRESH)
            .map(|heard| heard.rate)
    }

    /// Returns the rate this node last heard for `key`, lately or not.
    pub(crate) fn last_rate(&self, key: &str) -> Option<u32> {
        self.lock().get(key).map(|heard| heard.rate)
    }

    /// Notes that `key`'s rate was lowered `from` `to` (thousandths) at `at` (the store's µs): a cut heard
    /// twice (its own node's, and the announcement) counts once.
    pub(crate) fn note_cut(&self, key: &str, at: u64, from: u32, to: u32) {
        if to >= from {
            return;
        }
        let mut cuts = self.cuts.lock().unwrap_or_else(PoisonError::into_inner);
        cuts.retain(|_, list| {
            list.retain(|cut| cut.heard.elapsed() < CUTS_KEPT);
            !list.is_empty()
        });
        let list = cuts.entry(key.to_owned()).or_default();
        if list.iter().all(|cut| cut.at != at) {
            let heard = Instant::now();
            list.push(Cut {
                at,
                heard,
                from,
                to,
            });
            list.sort_by_key(|cut| cut.at);
        }
    }

    /// Returns where a slot of `key`'s line at `slot`, handed out at `decided` (the store's µs), is after the
    /// cuts made since, and the rate it is then spaced for (the last cut's, if one moved it): each stretches
    /// what of the line lies past it by its `from / to`, as Redis stretched the line's end, so the slots keep
    /// the spacing of the rate in force.
    pub(crate) fn respaced(
        &self,
        key: &str,
        decided: u64,
        slot: Instant,
    ) -> (Instant, Option<u32>) {
        let cuts = self.cuts.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(list) = cuts.get(key) else {
            return (slot, None);
        };
        list.iter().filter(|cut| cut.at > decided).fold(
            (slot, None),
            |(slot, rate), cut| match slot.checked_duration_since(cut.heard) {
                Some(past) => {
                    let stretch = f64::from(cut.from) / f64::from(cut.to.max(1));
                    (cut.heard + past.mul_f64(stretch), Some(cut.to))
                }
                None => (slot, rate),
            },
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Heard>> {
        self.heard.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole limit, in thousandths.
    const WHOLE: u32 = 1_000;

    #[test]
    fn a_pause_holds_until_its_end_and_a_shorter_one_does_not_shorten_it() {
        let pauses = Pauses::default();
        assert_eq!(pauses.until("k"), None);
        pauses.note("k", Duration::from_secs(60), WHOLE);
        let until = pauses.until("k").unwrap();
        pauses.note("k", Duration::from_secs(1), 900);
        assert_eq!(pauses.until("k"), Some(until));
        assert_eq!(pauses.rate("k"), Some(900), "the rate heard last holds");
        assert_eq!(pauses.until("other"), None);
        assert_eq!(pauses.rate("other"), None);
        pauses.note("brief", Duration::ZERO, WHOLE);
        assert_eq!(pauses.until("brief"), None);
        assert_eq!(pauses.rate("brief"), Some(WHOLE));
    }

    /// Checks that a cut stretches what of a line lies past it, for slots handed out before it only, once
    /// however often it is heard.
    #[test]
    fn a_cut_stretches_the_slots_handed_out_before_it() {
        let pauses = Pauses::default();
        pauses.note_cut("k", 100, 1_000, 500);
        pauses.note_cut("k", 100, 1_000, 500);
        let slot = Instant::now() + Duration::from_secs(10);
        let (later, rate) = pauses.respaced("k", 99, slot);
        assert_eq!(rate, Some(500));
        let stretched = later.duration_since(Instant::now()).as_secs_f64();
        assert!((19.9..=20.1).contains(&stretched), "{stretched}");
        assert_eq!(
            pauses.respaced("k", 100, slot),
            (slot, None),
            "handed out after the cut"
        );
        assert_eq!(pauses.respaced("other", 0, slot), (slot, None));
    }
}
