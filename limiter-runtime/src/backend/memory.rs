//! The in-process store: the embedded default, with the same semantics as the Redis scripts.
//!
//! Keys are spread over mutex-guarded shards, each a hash table; one hash of the key picks both the shard and
//! the slot. Each shard forgets idle keys as it goes, so idle limits leave nothing behind.

use std::sync::Arc;

use super::sharded::{Keys, Sharded};
use crate::algorithm::{Algorithm, Charge, Outcome, State};
use crate::clock::Clock;
use crate::key::KeyRef;

const SHARDS: usize = 32;
/// A shard sweeps its expired keys once per this many decisions.
const SWEEP_EVERY: u32 = 1024;

#[derive(Debug)]
pub(crate) struct MemoryStore {
    shards: Sharded<Shard>,
    clock: Arc<dyn Clock>,
}

#[derive(Debug, Default)]
struct Shard {
    entries: Keys<Entry>,
    decisions: u32,
    /// The time of this shard's latest decision (µs): no decision here is made at an earlier one.
    latest: u64,
    /// The other shard this one sweeps next, so that shards with no traffic of their own are swept too.
    next_to_sweep: usize,
}

/// The state of one key and when it can be forgotten (µs): when its limit is back to its full quota.
#[derive(Debug)]
struct Entry {
    state: State,
    expires_at: u64,
}

impl MemoryStore {
    pub(crate) fn new(clock: Arc<dyn Clock>) -> Self {
        MemoryStore {
            shards: Sharded::new(SHARDS),
            clock,
        }
    }

    /// Decides, and says when on this store's clock (µs). Inlined: the limiter then reads the outcome where
    /// it builds the decision, not copied out through memory.
    #[inline]
    pub(crate) fn decide(
        &self,
        algorithm: Algorithm,
        key: KeyRef<'_>,
        charge: &Charge,
    ) -> (Outcome, u64) {
        // Read before the lock (its latency overlaps the hashing), then never behind the shard's latest
        // decision: as a script reads `TIME`, the decisions of one key see time in their order.
        let read = self.clock.now_micros();
        let (mut shard, hash) = self.shards.lock(key);
        let now = read.max(shard.latest);
        shard.latest = now;
        let (entry, _) = shard.entries.get_or_insert_with(hash, key, || Entry {
            state: State::new(algorithm),
            expires_at: 0,
        });
        // An expired entry, or one kept by another algorithm under the same key, starts afresh.
        if entry.expires_at <= now || entry.state.algorithm() != algorithm {
            entry.state = State::new(algorithm);
        }
        let outcome = entry.state.decide(now, charge);
        // Once the limit is back to its full quota the state says nothing a fresh one would not: the
        // in-memory twin of the key's TTL. Written only when it moves: a denial changes neither the state
        // nor when it is full again, and a hot key's slot, left unwritten, is not taken from the other
        // cores' caches at every call.
        let expires_at = now.saturating_add(outcome.reset_after);
        if entry.expires_at != expires_at {
            entry.expires_at = expires_at;
        }

        // Forget idle keys now and then: after the decision, so the key just used is never among them.
        shard.decisions = shard.decisions.wrapping_add(1);
        if shard.decisions.is_multiple_of(SWEEP_EVERY) {
            shard.sweep(now);
            shard.next_to_sweep = (shard.next_to_sweep + 1) % SHARDS;
            if shard.next_to_sweep != hash.shard {
                // Never wait for another shard while holding this one.
                if let Some(mut other) = self.shards.try_lock_shard(shard.next_to_sweep) {
                    other.sweep(now);
                }
            }
        }
        (outcome, now)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        (0..self.shards.count())
            .map(|i| self.shards.lock_shard(i).entries.len())
            .sum()
    }
}

impl Shard {
    fn sweep(&mut self, now: u64) {
        self.entries.retain(|entry| entry.expires_at > now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::as_micros;
    use crate::FakeClock;
    use std::time::Duration;

    /// The times a clock was read at, in the order the reads were made, whichever call's lock is taken first.
    #[derive(Debug)]
    struct Reads(std::sync::Mutex<Vec<u64>>);

    impl Clock for Reads {
        fn now(&self) -> Duration {
            Duration::from_micros(self.0.lock().unwrap().remove(0))
        }
    }

    /// The clock is read before the shard is locked, so a call can lock after another one that read the
    /// clock later: it is then decided at that later time, never before a decision already made (a script
    /// reads `TIME` once it runs). Here the second call's read is the earlier one, as if the first call had
    /// read later and locked first.
    #[test]
    fn a_decision_is_never_made_before_the_one_before_it() {
        let second = 1_000_000;
        let store = MemoryStore::new(Arc::new(Reads(std::sync::Mutex::new(vec![
            10 * second,
            9 * second,
        ]))));
        let charge = Charge {
            window: 5 * second,
            max: 2,
            cost: 1,
            burst: 2,
            max_wait: 0,
        };
        let (first, at) = store.decide(Algorithm::SlidingLog, "k".into(), &charge);
        assert_eq!((first.allowed, at), (true, 10 * second));
        let (then, at) = store.decide(Algorithm::SlidingLog, "k".into(), &charge);
        assert_eq!((then.allowed, at), (true, 10 * second));
        // Both admissions at 10 s: the log is in order, and both leave the window together.
        assert_eq!(then.reset_after, 5 * second);
    }

    #[test]
    fn idle_keys_are_forgotten() {
        let clock = FakeClock::new();
        let store = MemoryStore::new(Arc::new(clock.clone()));
        let charge = Charge {
            window: 1_000_000,
            max: 1,
            cost: 1,
            burst: 1,
            max_wait: 0,
        };
        for i in 0..5_000 {
            store.decide(
                Algorithm::SlidingLog,
                format!("k{i}").as_str().into(),
                &charge,
            );
        }
        assert_eq!(store.len(), 5_000);
        clock.advance(Duration::from_secs(2));
        for _ in 0..(SWEEP_EVERY as usize * (SHARDS + 1)) {
            store.decide(Algorithm::SlidingLog, "hot".into(), &charge);
        }
        assert_eq!(store.len(), 1);
    }

    /// A key is kept exactly as long as its state matters: until its limit is back to its full quota
    /// (`reset_after`), and forgotten then, whatever the algorithm and whether the last call was admitted.
    #[test]
    fn a_key_is_kept_until_its_limit_is_full_again() {
        let charge = Charge {
            window: 1_000_000,
            max: 3,
            cost: 1,
            burst: 3,
            max_wait: 1_000_000,
        };
        for algorithm in Algorithm::ALL {
            for calls in [1, 2, 5] {
                let clock = FakeClock::new();
                let store = MemoryStore::new(Arc::new(clock.clone()));
                let mut reset_after = 0;
                for _ in 0..calls {
                    clock.advance(Duration::from_micros(123_457));
                    reset_after = store.decide(algorithm, "k".into(), &charge).0.reset_after;
                }
                let sweep_at = |after: u64| {
                    let clock = clock.clone();
                    clock.advance(Duration::from_micros(after));
                    let now = as_micros(clock.now());
                    let (mut shard, _) = store.shards.lock("k".into());
                    shard.sweep(now);
                    drop(shard);
                    store.len()
                };
                let name = format!("{algorithm:?} after {calls} calls");
                assert!(reset_after > 0, "{name}");
                assert_eq!(sweep_at(reset_after - 1), 1, "{name}: forgotten too early");
                assert_eq!(sweep_at(1), 0, "{name}: kept after its reset");
            }
        }
    }
}
