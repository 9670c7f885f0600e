//! Store keys spread over mutex-guarded shards: the maps of the in-memory store and of the deny cache.
//!
//! One SipHash of the key (std's `RandomState`, with this process's random keys: callers choose the keys, and
//! must not be able to choose colliding ones) picks both the shard and the slot within it, and is kept with
//! the key, so that a table grows without hashing again.

use std::fmt;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, MutexGuard, PoisonError};

use hashbrown::hash_table::{Entry, HashTable};

/// `S` (a shard's state, holding a [`Keys`] map) times `count`, each behind its own mutex.
#[derive(Debug)]
pub(crate) struct Sharded<S> {
    shards: Box<[Padded<Mutex<S>>]>,
    hasher: RandomState,
}

/// A shard on cache lines of its own, so that two threads working in two shards never share a line.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Padded<T>(T);

/// A key's hash, and the shard it belongs to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyHash {
    hash: u64,
    pub(crate) shard: usize,
}

impl<S: Default> Sharded<S> {
    pub(crate) fn new(count: usize) -> Self {
        Sharded {
            shards: (0..count).map(|_| Padded::default()).collect(),
            hasher: RandomState::new(),
        }
    }
}

impl<S> Sharded<S> {
    /// The shard of `key`, locked, and the key's hash (for the shard's [`Keys`]).
    pub(crate) fn lock(&self, key: &str) -> (MutexGuard<'_, S>, KeyHash) {
        let hash = self.hasher.hash_one(key);
        // The slot within a shard comes from the hash's low bits and its tag from the top ones: the shard
        // takes bits of its own.
        let shard = (hash >> 32) as usize % self.shards.len();
        (self.lock_shard(shard), KeyHash { hash, shard })
    }

    /// Shard `index`, locked. A panic elsewhere cannot leave a shard half-updated (every update of its users
    /// is a single assignment), so a poisoned lock is taken as is.
    pub(crate) fn lock_shard(&self, index: usize) -> MutexGuard<'_, S> {
        self.shards[index]
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Shard `index`, if no one holds it.
    pub(crate) fn try_lock_shard(&self, index: usize) -> Option<MutexGuard<'_, S>> {
        self.shards[index].0.try_lock().ok()
    }

    pub(crate) fn count(&self) -> usize {
        self.shards.len()
    }
}

/// One shard's map: store key → `V`, looked up with the key's [`KeyHash`].
pub(crate) struct Keys<V> {
    table: HashTable<Slot<V>>,
}

struct Slot<V> {
    hash: u64,
    key: Box<str>,
    value: V,
}

impl<V> Default for Keys<V> {
    fn default() -> Self {
        Keys {
            table: HashTable::new(),
        }
    }
}

impl<V> fmt::Debug for Keys<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keys")
            .field("len", &self.table.len())
            .finish_non_exhaustive()
    }
}

impl<V> Keys<V> {
    pub(crate) fn get_mut(&mut self, hash: KeyHash, key: &str) -> Option<&mut V> {
        self.table
            .find_mut(hash.hash, |slot| {
                slot.hash == hash.hash && *slot.key == *key
            })
            .map(|slot| &mut slot.value)
    }

    /// `key`'s value, made by `new` (and the key copied) if it has none; and whether it was just made.
    pub(crate) fn get_or_insert_with(
        &mut self,
        hash: KeyHash,
        key: &str,
        new: impl FnOnce() -> V,
    ) -> (&mut V, bool) {
        let same = |slot: &Slot<V>| slot.hash == hash.hash && *slot.key == *key;
        match self.table.entry(hash.hash, same, |slot| slot.hash) {
            Entry::Occupied(slot) => (&mut slot.into_mut().value, false),
            Entry::Vacant(slot) => {
                let slot = slot.insert(Slot {
                    hash: hash.hash,
                    key: key.into(),
                    value: new(),
                });
                (&mut slot.into_mut().value, true)
            }
        }
    }

    pub(crate) fn remove(&mut self, hash: KeyHash, key: &str) -> Option<V> {
        let same = |slot: &Slot<V>| slot.hash == hash.hash && *slot.key == *key;
        match self.table.find_entry(hash.hash, same) {
            Ok(slot) => Some(slot.remove().0.value),
            Err(_) => None,
        }
    }

    /// Keeps the values `keep` says to keep; says how many it removed.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&mut V) -> bool) -> usize {
        let before = self.table.len();
        self.table.retain(|slot| keep(&mut slot.value));
        before - self.table.len()
    }

    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    pub(crate) fn clear(&mut self) {
        self.table.clear();
    }
}
