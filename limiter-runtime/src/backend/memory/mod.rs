//! The in-process store: the embedded default, with the same semantics as the Redis scripts.
//!
//! Keys are spread over mutex-guarded shards, each a hash table; one hash of the key picks both the shard and
//! the slot. Each shard forgets idle keys as it goes, so idle limits leave nothing behind, and gives memory
//! back once mostly empty.
//!
//! Live keys are bounded ([`LimiterBuilder::max_keys`](crate::LimiterBuilder::max_keys)), so keys a caller
//! chooses cannot take the process's memory: a shard at its share of the bound forgets its expired keys, then,
//! if still full, the eighth of its keys closest to their expiry, the ones that hold the least (a key
//! forgotten early starts afresh, so its limit may admit more than `max` once). A flood pays that scan once
//! per many new keys.

mod operations;
#[cfg(feature = "admin")]
mod record;
mod shard;

use std::sync::{Arc, MutexGuard};

use self::shard::Shard;
use crate::algorithm::{Algorithm, Outcome, Receipt, Terms};
use crate::call::{Call, CallLimit, LimitRuling, OneOrMany, Ruling};
use crate::clock::Clock;
use crate::key::KeyRef;
use crate::sharded::{KeyHash, Sharded};

const SHARDS: usize = 32;
/// A shard sweeps its expired keys once per this many decisions.
const SWEEP_EVERY: u32 = 1024;

/// Live keys held at most by default (see [`LimiterBuilder::max_keys`](crate::LimiterBuilder::max_keys)).
pub(crate) const DEFAULT_MAX_KEYS: usize = 1_000_000;

#[derive(Debug)]
pub(crate) struct MemoryStore {
    shards: Sharded<Shard>,
    clock: Arc<dyn Clock>,
    /// Keys one shard holds at most.
    per_shard: usize,
    /// The admin door's record of changes, newest first (see `record.rs`).
    #[cfg(feature = "admin")]
    record: std::sync::Mutex<std::collections::VecDeque<String>>,
}

impl MemoryStore {
    /// Creates a store on `clock` holding at most about `max_keys` live keys (at least one per shard).
    pub(crate) fn new(clock: Arc<dyn Clock>, max_keys: usize) -> Self {
        MemoryStore {
            shards: Sharded::new(SHARDS),
            clock,
            per_shard: max_keys.div_ceil(SHARDS).max(1),
            #[cfg(feature = "admin")]
            record: Default::default(),
        }
    }

    /// Returns the clock this store decides on.
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// Counts the live keys held now (a key's block, under a penalty, counts as one more).
    pub(crate) fn keys(&self) -> u64 {
        self.sum(|shard| (shard.entries.len() + shard.blocks.len()) as u64)
    }

    /// Counts the keys forgotten before their expiry so far, to stay within the bound.
    pub(crate) fn evicted(&self) -> u64 {
        self.sum(|shard| shard.evicted)
    }

    /// Forgets every key whose limit is full again (each shard locked in turn), so that memory is given back
    /// without a decision to sweep as it goes: the `local` fallback's, once Redis decides again.
    pub(crate) fn sweep(&self) {
        let now = self.clock.now_micros();
        for i in 0..self.shards.count() {
            self.shards.lock_shard(i).sweep(now);
        }
    }

    /// Forgets every key.
    pub(crate) fn clear(&self) {
        for i in 0..self.shards.count() {
            let mut shard = self.shards.lock_shard(i);
            shard.entries.retain(|_| false);
            shard.entries.shrink_when_mostly_empty();
        }
    }

    /// Adds up `count` of every shard (each shard locked in turn).
    fn sum(&self, count: impl Fn(&Shard) -> u64) -> u64 {
        (0..self.shards.count())
            .map(|i| count(&self.shards.lock_shard(i)))
            .sum()
    }

    /// Decides `call`: each of its limits charged its own terms, and what the call comes to.
    #[inline(always)]
    pub(crate) fn rule(&self, call: &Call<'_>) -> Ruling {
        let (outcomes, at) = self.decide(call, |limit| limit.terms);
        let admitted = call.admits(|i| outcomes[i].allowed);
        let limits = call.limits().iter().zip(outcomes.iter());
        let limits = limits.map(|(limit, outcome)| LimitRuling::of(limit, *outcome, at, admitted));
        Ruling {
            limits: limits.collect(),
            admitted,
        }
    }

    /// Decides the limits of `call` as one, each charged what `charge` says (its own charge, or under
    /// `on_error = local` this node's share of it), and says when on this store's clock (µs): under the locks
    /// of every shard they live in, each limit decides (and charges) in turn; when one that vetoes denies, what
    /// the others charged is given back at once, exactly, before the locks are released. A limit given back
    /// reports its remaining quota as the call left it.
    #[inline(always)]
    pub(crate) fn decide(
        &self,
        call: &Call<'_>,
        charge: impl Fn(&CallLimit<'_>) -> Terms,
    ) -> (OneOrMany<Outcome>, u64) {
        match call.limits() {
            [limit] => {
                let (outcome, at) = self.decide_one(limit, &charge(limit));
                (OneOrMany::One(outcome), at)
            }
            _ => self.decide_together(call, charge, self.clock.now_micros()),
        }
    }

    /// Decides a call of one limit, as [`decide`](MemoryStore::decide) does: one shard, and nothing to give back (a
    /// denial charges nothing). Inlined: the caller reads the outcome where it builds its decision.
    #[inline(always)]
    pub(crate) fn decide_one(&self, limit: &CallLimit<'_>, charge: &Terms) -> (Outcome, u64) {
        // Read before the lock (its latency overlaps the hashing), then never behind the shard's latest
        // decision: as a script reads `TIME`, the decisions of one key see time in their order.
        let read = self.clock.now_micros();
        let key = limit.key.parts();
        let (mut shard, hash) = self.shards.lock(key);
        let now = read.max(shard.latest);
        shard.latest = now;
        let outcome = match limit.preset {
            Some(preset) => preset.outcome(charge),
            None => shard.decide_penalized(
                (hash, key),
                limit.algorithm,
                (charge, limit.penalty, limit.carry),
                now,
                self.per_shard,
            ),
        };
        self.forget_idle(hash.shard, &mut shard, now);
        (outcome, now)
    }

    /// Returns `f` of `limit`'s key in its shard, locked, at this store's "now" (read before the lock, then never
    /// behind the shard's latest decision, as a decision reads it); and that "now" (µs).
    fn at_key<T>(
        &self,
        limit: &CallLimit<'_>,
        f: impl FnOnce(&mut Shard, (KeyHash, KeyRef<'_>), u64) -> T,
    ) -> (T, u64) {
        let read = self.clock.now_micros();
        let key = limit.key.parts();
        let (mut shard, hash) = self.shards.lock(key);
        let now = read.max(shard.latest);
        (f(&mut shard, (hash, key), now), now)
    }

    /// Decides a call of several limits, as [`decide`](MemoryStore::decide) does, the clock read at `read` (before the
    /// locks, then never behind any shard's latest decision, as for one).
    fn decide_together(
        &self,
        call: &Call<'_>,
        charge: impl Fn(&CallLimit<'_>) -> Terms,
        read: u64,
    ) -> (OneOrMany<Outcome>, u64) {
        let limits = call.limits();
        let charges: Vec<Terms> = limits.iter().map(&charge).collect();
        let hashes: Vec<_> = limits
            .iter()
            .map(|limit| self.shards.hash(limit.key.parts()))
            .collect();
        // Shards are locked in their order, each once, so that two calls never wait for each other; limits
        // in one shard keep the order written.
        let mut order: Vec<usize> = (0..limits.len()).collect();
        order.sort_by_key(|&i| hashes[i].shard);
        let mut held: Vec<(usize, MutexGuard<'_, Shard>)> = Vec::with_capacity(limits.len());
        let mut now = read;
        for (k, &i) in order.iter().enumerate() {
            if k == 0 || hashes[order[k - 1]].shard != hashes[i].shard {
                let shard = self.shards.lock_shard(hashes[i].shard);
                now = now.max(shard.latest);
                held.push((hashes[i].shard, shard));
            }
        }
        let mut outcomes: Vec<Outcome> = limits
            .iter()
            .zip(&charges)
            .map(|(limit, charge)| {
                limit
                    .preset
                    .map_or(Outcome::denied(0, 0, 0), |preset| preset.outcome(charge))
            })
            .collect();
        let mut asked = order.iter().copied().peekable();
        for (index, shard) in &mut held {
            shard.latest = now;
            while let Some(i) = asked.next_if(|&i| hashes[i].shard == *index) {
                let limit = &limits[i];
                if limit.preset.is_none() {
                    let key = (hashes[i], limit.key.parts());
                    let charge = (&charges[i], limit.penalty, limit.carry);
                    outcomes[i] =
                        shard.decide_penalized(key, limit.algorithm, charge, now, self.per_shard);
                }
            }
        }
        if !call.admits(|i| outcomes[i].allowed) {
            let mut given_back = order.iter().copied().peekable();
            for (index, shard) in &mut held {
                while let Some(i) = given_back.next_if(|&i| hashes[i].shard == *index) {
                    let (limit, outcome) = (&limits[i], &mut outcomes[i]);
                    if outcome.allowed && limit.preset.is_none() {
                        let units = charges[i].cost;
                        let key = (hashes[i], limit.key.parts());
                        let given = (units, &outcome.receipt);
                        shard.give_back(key, limit.algorithm, &charges[i], now, given);
                        // A permit in flight is one, whatever the call weighs.
                        outcome.remaining += match limit.algorithm {
                            Algorithm::InFlight => 1,
                            _ => units,
                        };
                    }
                }
            }
        }
        for (index, shard) in &mut held {
            self.forget_idle(*index, shard, now);
        }
        (OneOrMany::Many(outcomes), now)
    }

    /// Gives back `units` of what `limit`'s admission, charged `charge`, charged (`receipt`), now.
    pub(crate) fn give_back(
        &self,
        limit: &CallLimit<'_>,
        charge: &Terms,
        units: u64,
        receipt: &Receipt,
    ) {
        self.at_key(limit, |shard, key, now| {
            shard.latest = now;
            shard.give_back(key, limit.algorithm, charge, now, (units, receipt));
        });
    }

    /// Forgets idle keys now and then: after a decision, so the keys just used are never among them.
    #[inline]
    fn forget_idle(&self, index: usize, shard: &mut Shard, now: u64) {
        shard.decisions = shard.decisions.wrapping_add(1);
        if shard.decisions.is_multiple_of(SWEEP_EVERY) {
            shard.sweep(now);
            shard.next_to_sweep = (shard.next_to_sweep + 1) % SHARDS;
            if shard.next_to_sweep != index {
                // Never wait for another shard while holding this one.
                if let Some(mut other) = self.shards.try_lock_shard(shard.next_to_sweep) {
                    other.sweep(now);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::Algorithm;
    use crate::clock::as_micros;
    use crate::FakeClock;
    use std::time::Duration;

    /// Makes one limit's decision.
    fn decide(
        store: &MemoryStore,
        algorithm: Algorithm,
        key: &str,
        charge: &Terms,
    ) -> (Outcome, u64) {
        let call = Call::of([(algorithm, key, *charge)]);
        let (outcomes, at) = store.decide(&call, |limit| limit.terms);
        (outcomes[0], at)
    }

    /// The times a clock was read at, in the order the reads were made, whichever call's lock is taken first.
    #[derive(Debug)]
    struct Reads(std::sync::Mutex<Vec<u64>>);

    impl Clock for Reads {
        fn now(&self) -> Duration {
            Duration::from_micros(self.0.lock().unwrap().remove(0))
        }
    }

    /// Checks that a decision is never made before the one before it: the clock is read before the shard is locked, so
    /// a call can lock after another one that read the clock later: it is then decided at that later time, never before
    /// a decision already made (a script reads `TIME` once it runs). Here the second call's read is the earlier one, as
    /// if the first call had read later and locked first.
    #[test]
    fn a_decision_is_never_made_before_the_one_before_it() {
        let second = 1_000_000;
        let store = MemoryStore::new(
            Arc::new(Reads(std::sync::Mutex::new(vec![10 * second, 9 * second]))),
            DEFAULT_MAX_KEYS,
        );
        let charge = Terms {
            window: 5 * second,
            max: 2,
            cost: 1,
            burst: 2,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        };
        let (first, at) = decide(&store, Algorithm::SlidingLog, "k", &charge);
        assert_eq!((first.allowed, at), (true, 10 * second));
        let (then, at) = decide(&store, Algorithm::SlidingLog, "k", &charge);
        assert_eq!((then.allowed, at), (true, 10 * second));
        // Both admissions at 10 s: the log is in order, and both leave the window together.
        assert_eq!(then.reset_after, 5 * second);
    }

    #[test]
    fn idle_keys_are_forgotten() {
        let clock = FakeClock::new();
        let store = MemoryStore::new(Arc::new(clock.clone()), DEFAULT_MAX_KEYS);
        let charge = Terms {
            window: 1_000_000,
            max: 1,
            cost: 1,
            burst: 1,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        };
        for i in 0..5_000 {
            decide(&store, Algorithm::SlidingLog, &format!("k{i}"), &charge);
        }
        assert_eq!(store.keys() as usize, 5_000);
        clock.advance(Duration::from_secs(2));
        for _ in 0..(SWEEP_EVERY as usize * (SHARDS + 1)) {
            decide(&store, Algorithm::SlidingLog, "hot", &charge);
        }
        assert_eq!(store.keys() as usize, 1);
    }

    /// Checks that a key is kept exactly as long as its state matters: until its limit is back to its full quota
    /// (`reset_after`), and forgotten then, whatever the algorithm and whether the last call was admitted.
    #[test]
    fn a_key_is_kept_until_its_limit_is_full_again() {
        let charge = Terms {
            window: 1_000_000,
            max: 3,
            cost: 1,
            burst: 3,
            max_wait: 1_000_000,
            ends: [0; 3],
            kept: 0,
        };
        for algorithm in Algorithm::ALL {
            for calls in [1, 2, 5] {
                let clock = FakeClock::new();
                let store = MemoryStore::new(Arc::new(clock.clone()), DEFAULT_MAX_KEYS);
                let mut reset_after = 0;
                for _ in 0..calls {
                    clock.advance(Duration::from_micros(123_457));
                    reset_after = decide(&store, algorithm, "k", &charge).0.reset_after;
                }
                let sweep_at = |after: u64| {
                    let clock = clock.clone();
                    clock.advance(Duration::from_micros(after));
                    let now = as_micros(clock.now());
                    let (mut shard, _) = store.shards.lock("k".into());
                    shard.sweep(now);
                    drop(shard);
                    store.keys() as usize
                };
                let name = format!("{algorithm:?} after {calls} calls");
                assert!(reset_after > 0, "{name}");
                assert_eq!(sweep_at(reset_after - 1), 1, "{name}: forgotten too early");
                assert_eq!(sweep_at(1), 0, "{name}: kept after its reset");
            }
        }
    }

    /// Checks that limits are decided as one: a call one of them denies is charged to none, wherever they live; a
    /// shadow limit's denial denies nothing.
    #[test]
    fn a_call_one_limit_denies_is_charged_to_none() {
        let store = MemoryStore::new(Arc::new(FakeClock::new()), DEFAULT_MAX_KEYS);
        let once = Terms {
            window: 10_000_000,
            max: 1,
            cost: 1,
            burst: 1,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        };
        let twice = Terms {
            max: 2,
            burst: 2,
            ..once
        };
        // Pairs of keys in the same shard and in others. (The leaky bucket shapes rather than counts: the
        // differential test checks its stacked calls against Redis.)
        let counting = Algorithm::ALL
            .into_iter()
            .filter(|a| *a != Algorithm::LeakyBucket);
        for algorithm in counting {
            for other in 0..64 {
                let tag = |key: &str| format!("{algorithm}:{key}");
                let (first, second) = (tag(&format!("first:{other}")), tag(&format!("k{other}")));
                let both = |store: &MemoryStore| {
                    let call = Call::of([(algorithm, &*first, twice), (algorithm, &*second, once)]);
                    let (outcomes, _) = store.decide(&call, |limit| limit.terms);
                    (outcomes[0], outcomes[1])
                };
                let (a, b) = both(&store);
                assert!(a.allowed && b.allowed, "{algorithm}");
                let (a, b) = both(&store);
                assert!(
                    a.allowed && !b.allowed,
                    "{algorithm}: the second limit is spent"
                );
                assert_eq!(a.remaining, 1, "{algorithm}: the first was given back");
                // So the first still has room for one call of its own.
                assert!(
                    decide(&store, algorithm, &first, &twice).0.allowed,
                    "{algorithm}"
                );
                assert!(
                    !decide(&store, algorithm, &first, &twice).0.allowed,
                    "{algorithm}"
                );
                // A shadow limit that denies lets the others charge.
                let fresh = tag(&format!("fresh:{other}"));
                let call = Call::of([(algorithm, &*fresh, once), (algorithm, &*second, once)])
                    .shadowing(1);
                let (outcomes, _) = store.decide(&call, |limit| limit.terms);
                let (a, b) = (outcomes[0], outcomes[1]);
                assert!(a.allowed && !b.allowed, "{algorithm}");
                assert!(
                    !decide(&store, algorithm, &fresh, &once).0.allowed,
                    "{algorithm}: charged"
                );
            }
        }
    }
}
