//! The keys an upstream paused, as this node heard of them: its own answers, and every other node's through
//! the overrides' channel. A call waiting for its turn looks here before it goes, so that none is sent while
//! its key is paused, even one whose slot Redis gave before the pause (see [`outbound`](crate::outbound)).
//! Redis holds the pause itself, at the key's block: a node that missed the message is refused there.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Paused store keys, each with when its pause ends on this node's clock.
#[derive(Debug, Default)]
pub(crate) struct Pauses {
    until: Mutex<HashMap<String, Instant>>,
}

impl Pauses {
    /// Notes that `key` (a store key) is paused for `length` from now: the later of it and a pause noted before.
    pub(crate) fn note(&self, key: &str, length: Duration) {
        let until = Instant::now() + length;
        let mut all = self.lock();
        all.retain(|_, &mut ends| ends > Instant::now());
        let at = all.entry(key.to_owned()).or_insert(until);
        *at = (*at).max(until);
    }

    /// Returns when `key`'s pause ends, if one is in force.
    pub(crate) fn until(&self, key: &str) -> Option<Instant> {
        let all = self.lock();
        if all.is_empty() {
            return None;
        }
        all.get(key).copied().filter(|&ends| ends > Instant::now())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.until.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_holds_until_its_end_and_a_shorter_one_does_not_shorten_it() {
        let pauses = Pauses::default();
        assert_eq!(pauses.until("k"), None);
        pauses.note("k", Duration::from_secs(60));
        let until = pauses.until("k").unwrap();
        pauses.note("k", Duration::from_secs(1));
        assert_eq!(pauses.until("k"), Some(until));
        assert_eq!(pauses.until("other"), None);
        pauses.note("brief", Duration::ZERO);
        assert_eq!(pauses.until("brief"), None);
    }
}
