//! Store keys spread over mutex-guarded shards: the maps of the in-memory store, the deny cache and the
//! per-key overrides.
//!
//! One hash of the key picks both the shard and the slot within it: a SipHash by default (std's
//! `RandomState`, with this process's random keys: callers choose the keys, and must not be able to choose
//! colliding ones; a map of only the keys in flight, bounded by the calls under way, may take a faster one), and is kept with
//! the key, so that a table grows without hashing again. A key is hashed and compared piece by piece
//! ([`KeyRef`]), so it is copied only when it is inserted. A short key is kept in its slot, so a lookup reads
//! one place in memory, not a slot and then the key's own allocation.

use std::fmt;
use std::hash::{BuildHasher, Hasher, RandomState};
use std::sync::{Mutex, MutexGuard, PoisonError};

use hashbrown::hash_table::HashTable;

use crate::key::{InlineKey, KeyRef};

/// `S` (a shard's state, holding a [`Keys`] map) times `count` (a power of two), each behind its own mutex.
#[derive(Debug)]
pub(crate) struct Sharded<S, H = RandomState> {
    shards: Box<[Padded<Mutex<S>>]>,
    hasher: H,
}

/// The bytes a key is hashed in at a time (a prefix and a user id or an address fit in one).
const BLOCK: usize = 64;

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

impl<S: Default, H: BuildHasher + Default> Sharded<S, H> {
    /// Creates `count` shards: a power of two, so that a shard is picked with a mask, not a division.
    pub(crate) fn new(count: usize) -> Self {
        debug_assert!(count.is_power_of_two(), "{count} shards");
        Sharded {
            shards: (0..count).map(|_| Padded::default()).collect(),
            hasher: H::default(),
        }
    }
}

impl<S, H: BuildHasher> Sharded<S, H> {
    /// Returns the shard of `key`, locked, and the key's hash (for the shard's [`Keys`]).
    pub(crate) fn lock(&self, key: KeyRef<'_>) -> (MutexGuard<'_, S>, KeyHash) {
        let hash = self.hash(key);
        (self.lock_shard(hash.shard), hash)
    }

    /// Returns `key`'s hash, and so its shard.
    #[inline]
    pub(crate) fn hash(&self, key: KeyRef<'_>) -> KeyHash {
        // The key's bytes, in blocks of one size whatever its split: the same hash for every split of the same
        // key, with any hasher (SipHash reads its input as one stream; a faster one hashes each write apart).
        let mut hasher = self.hasher.build_hasher();
        let (prefix, rest) = (key.prefix.as_bytes(), key.rest.as_bytes());
        let mut block = [0u8; BLOCK];
        let mut filled = 0;
        for piece in [prefix, rest] {
            let mut piece = piece;
            while !piece.is_empty() {
                let taken = piece.len().min(BLOCK - filled);
                block[filled..filled + taken].copy_from_slice(&piece[..taken]);
                (filled, piece) = (filled + taken, &piece[taken..]);
                if filled == BLOCK {
                    hasher.write(&block);
                    filled = 0;
                }
            }
        }
        hasher.write(&block[..filled]);
        hasher.write_u8(0xff);
        self.key_hash(hasher.finish())
    }

    /// Returns a key's hash, and its shard.
    #[inline]
    fn key_hash(&self, hash: u64) -> KeyHash {
        // The slot within a shard comes from the hash's low bits and its tag from the top ones: the shard
        // takes bits of its own.
        let shard = (hash >> 32) as usize & (self.shards.len() - 1);
        KeyHash { hash, shard }
    }

    /// Returns shard `index`, locked. A panic elsewhere cannot leave a shard half-updated (every update of its users
    /// is a single assignment), so a poisoned lock is taken as is.
    pub(crate) fn lock_shard(&self, index: usize) -> MutexGuard<'_, S> {
        self.shards[index]
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns shard `index`, if no one holds it.
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
    key: SlotKey,
    value: V,
}

impl<V> Slot<V> {
    /// Checks whether this is `key`'s slot: its whole hash first (cheap, and nearly always decisive), then the key.
    #[inline]
    fn is(&self, hash: KeyHash, key: KeyRef<'_>) -> bool {
        self.hash == hash.hash && self.key.is(key)
    }
}

/// Keys up to this many bytes are kept in their slot (a prefix and a user id or an IPv6 address fit): a
/// slot's key then takes 40 bytes, its own length and prefix's included.
const SLOT_INLINE: usize = 37;

/// A key, in its slot when it is short, else in an allocation of its own.
type SlotKey = InlineKey<SLOT_INLINE>;

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
    pub(crate) fn get_mut(&mut self, hash: KeyHash, key: KeyRef<'_>) -> Option<&mut V> {
        self.table
            .find_mut(hash.hash, |slot| slot.is(hash, key))
            .map(|slot| &mut slot.value)
    }

    /// Returns `key`'s value, made by `new` (and the key copied) if it has none; and whether it was just made.
    pub(crate) fn get_or_insert_with(
        &mut self,
        hash: KeyHash,
        key: KeyRef<'_>,
        new: impl FnOnce() -> V,
    ) -> (&mut V, bool) {
        // Looked up first, without the entry API's room-making: nearly every call finds its key.
        match self.table.find_entry(hash.hash, |slot| slot.is(hash, key)) {
            Ok(slot) => (&mut slot.into_mut().value, false),
            Err(absent) => {
                let slot = absent.into_table().insert_unique(
                    hash.hash,
                    Slot {
                        hash: hash.hash,
                        key: SlotKey::joined(key.prefix, key.rest),
                        value: new(),
                    },
                    |slot| slot.hash,
                );
                (&mut slot.into_mut().value, true)
            }
        }
    }

    pub(crate) fn remove(&mut self, hash: KeyHash, key: KeyRef<'_>) -> Option<V> {
        match self.table.find_entry(hash.hash, |slot| slot.is(hash, key)) {
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

    /// Returns every value, in no particular order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.table.iter().map(|slot| &slot.value)
    }

    /// Returns every key and its value, in no particular order.
    pub(crate) fn entries(&self) -> impl Iterator<Item = (&str, &V)> {
        self.table
            .iter()
            .map(|slot| (slot.key.as_str(), &slot.value))
    }

    /// Gives memory back once the table is mostly empty (a quarter full or less, past a small size): after a
    /// flood of keys, the table does not stay at its peak.
    pub(crate) fn shrink_when_mostly_empty(&mut self) {
        const SMALL: usize = 1024;
        let (len, capacity) = (self.table.len(), self.table.capacity());
        if capacity > SMALL && capacity / 4 >= len {
            self.table.shrink_to(len * 2, |slot| slot.hash);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.table.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(key: &str) -> KeyRef<'_> {
        KeyRef::from(key)
    }

    /// Checks that a slot's key is the key itself, not its prefix or an extension of it, whether kept in the slot or
    /// apart, across the length where slots stop holding keys. (In a table, two keys rarely share a whole
    /// hash, so this comparison is checked here directly.)
    #[test]
    fn a_slot_key_is_only_itself() {
        for len in [0, 1, SLOT_INLINE - 1, SLOT_INLINE, SLOT_INLINE + 1, 300] {
            let key = "k".repeat(len);
            let slot = SlotKey::joined("", &key);
            assert!(slot.is(whole(&key)), "{len}");
            assert!(!slot.is(whole(&format!("{key}k"))), "{len}: an extension");
            if len > 0 {
                assert!(!slot.is(whole(&key[1..])), "{len}: a shorter key");
                assert!(
                    !slot.is(whole(&format!("{}j", &key[1..]))),
                    "{len}: same length"
                );
            }
        }
    }

    /// Checks that keys kept in their slot and keys kept apart are found, kept and removed alike.
    #[test]
    fn short_and_long_keys_are_found_and_removed() {
        let sharded: Sharded<Keys<usize>> = Sharded::new(4);
        let keys: Vec<String> = [0, 1, SLOT_INLINE - 1, SLOT_INLINE, SLOT_INLINE + 1, 300]
            .iter()
            .map(|&len| "k".repeat(len))
            .collect();
        for (i, key) in keys.iter().enumerate() {
            let (mut shard, hash) = sharded.lock(whole(key));
            let (value, new) = shard.get_or_insert_with(hash, whole(key), || i);
            assert_eq!((*value, new), (i, true));
        }
        for (i, key) in keys.iter().enumerate() {
            let (mut shard, hash) = sharded.lock(whole(key));
            assert_eq!(
                shard.get_mut(hash, whole(key)).copied(),
                Some(i),
                "{}",
                key.len()
            );
            let (value, new) = shard.get_or_insert_with(hash, whole(key), || 99);
            assert_eq!((*value, new), (i, false));
        }
        for (i, key) in keys.iter().enumerate() {
            let (mut shard, hash) = sharded.lock(whole(key));
            assert_eq!(shard.remove(hash, whole(key)), Some(i));
            assert_eq!(shard.get_mut(hash, whole(key)), None);
        }
    }

    /// Checks that a key is one key wherever its prefix ends (however long the prefix of a rule, and a key given with
    /// no prefix at all): every split hashes alike and finds the one value, and another key finds nothing.
    #[test]
    fn a_key_is_the_same_key_in_any_two_pieces() {
        same_key_in_any_two_pieces::<RandomState>();
        same_key_in_any_two_pieces::<foldhash::fast::RandomState>();
    }

    fn same_key_in_any_two_pieces<H: BuildHasher + Default>() {
        let sharded: Sharded<Keys<usize>, H> = Sharded::new(4);
        for (i, len) in [
            0,
            1,
            9,
            SLOT_INLINE - 1,
            SLOT_INLINE,
            SLOT_INLINE + 1,
            63,
            64,
            65,
            128,
            300,
        ]
        .into_iter()
        .enumerate()
        {
            let key: String = ('a'..='z').cycle().take(len).collect();
            let (mut shard, hash) = sharded.lock(whole(&key));
            shard.get_or_insert_with(hash, whole(&key), || i);
            drop(shard);
            for at in 0..=len {
                let (prefix, rest) = key.split_at(at);
                let (mut shard, hash) = sharded.lock(KeyRef { prefix, rest });
                assert_eq!(
                    shard.get_mut(hash, KeyRef { prefix, rest }).copied(),
                    Some(i),
                    "{len} at {at}"
                );
                let (value, new) = shard.get_or_insert_with(hash, KeyRef { prefix, rest }, || 99);
                assert_eq!((*value, new), (i, false), "{len} at {at}");
            }
            if len > 0 {
                // The same bytes but one, split the same way.
                let other = format!("{}!", &key[..len - 1]);
                let (prefix, rest) = other.split_at(len / 2);
                let (mut shard, hash) = sharded.lock(KeyRef { prefix, rest });
                assert_eq!(shard.get_mut(hash, KeyRef { prefix, rest }), None, "{len}");
            }
        }
    }
}
