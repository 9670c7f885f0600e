//! The policies with bans in force: while a policy is here, its calls read their keys' blocks, whether or not
//! its rule has a penalty (a rule with one always does). A ban on a policy without a penalty puts it here,
//! on every runtime, until the ban ends; a policy that no ban concerns pays nothing but one atomic read.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::clock::Clock;

/// How long after a ban's end (µs) a runtime still reads its policy's blocks: room for a node's clock that
/// runs ahead of the one the ban was set on (Redis's). Reading a block for longer costs a little; for
/// shorter, it would admit a banned key early.
pub(crate) const SLACK: u64 = 60_000_000;

/// Policies by prefix, each with when its last ban ends (µs, on the store's clock), replaced whole on a change
/// (bans are rare) and read without a lock.
#[derive(Debug, Default)]
pub(crate) struct Banning {
    until: ArcSwap<HashMap<String, u64>>,
    /// How many policies are here: with none (the common case), a decision reads only this.
    len: AtomicUsize,
}

impl Banning {
    /// Returns whether calls under `prefix` read their keys' blocks now.
    #[inline]
    pub(crate) fn reads_blocks(&self, prefix: &str, clock: &dyn Clock) -> bool {
        if self.len.load(Ordering::Acquire) == 0 {
            return false;
        }
        self.until
            .load()
            .get(prefix)
            .is_some_and(|&until| clock.now_micros() < until.saturating_add(SLACK))
    }

    /// Notes a ban under `prefix` ending at `until` (µs): the later of it and the one noted before.
    pub(crate) fn note(&self, prefix: &str, until: u64) {
        let mut all = HashMap::clone(&self.until.load());
        let at = all.entry(prefix.to_owned()).or_default();
        *at = (*at).max(until);
        self.len.store(all.len(), Ordering::Release);
        self.until.store(Arc::new(all));
    }

    /// Replaces every policy noted with `all`, as read from the store.
    pub(crate) fn replace(&self, all: impl IntoIterator<Item = (String, u64)>) {
        let mut fresh = HashMap::new();
        for (prefix, until) in all {
            let at: &mut u64 = fresh.entry(prefix).or_default();
            *at = (*at).max(until);
        }
        self.len.store(fresh.len(), Ordering::Release);
        self.until.store(Arc::new(fresh));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::FakeClock;

    #[test]
    fn a_policy_reads_blocks_until_its_last_ban_ends_and_the_slack() {
        let clock = FakeClock::new();
        let banning = Banning::default();
        assert!(!banning.reads_blocks("p:", &clock));
        let now = clock.now_micros();
        banning.note("p:", now + 10);
        banning.note("p:", now + 5);
        assert!(banning.reads_blocks("p:", &clock));
        assert!(!banning.reads_blocks("q:", &clock));
        clock.advance(Duration::from_micros(10 + SLACK - 1));
        assert!(banning.reads_blocks("p:", &clock));
        clock.advance(Duration::from_micros(1));
        assert!(!banning.reads_blocks("p:", &clock));
        banning.replace([]);
        assert_eq!(banning.len.load(Ordering::Relaxed), 0);
    }
}
