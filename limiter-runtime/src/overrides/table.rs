//! This runtime's copy of the overrides, shaped so that neither a decision nor a change pays for their number.
//!
//! Prefixes are few and change rarely: their map is a snapshot, replaced whole when a prefix's override
//! changes, and read without a lock. Per-key overrides can be many (one per customer's plan): each prefix
//! keeps its own in a sharded map, changed in place. A lookup is then one snapshot read and at most two hash
//! lookups, and a key's change one insertion or removal, whatever the number of overrides.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::{Limits, Override};
use crate::key::KeyRef;
use crate::sharded::{Keys, Sharded};

/// Shards of one prefix's per-key overrides: enough that lookups on every core rarely meet.
const KEY_SHARDS: usize = 16;

/// The overrides of every prefix. Changes must come one at a time (the caller serialises them); lookups may
/// run alongside them.
#[derive(Debug, Default)]
pub(crate) struct Table {
    prefixes: ArcSwap<HashMap<String, Prefix>>,
    /// How many overrides the table holds: with none (the common case), a decision reads only this.
    len: AtomicUsize,
}

/// One prefix's overrides.
#[derive(Debug, Clone, Default)]
struct Prefix {
    /// The override of every key under the prefix.
    all: Option<Limits>,
    /// The overrides of single keys (the key after the prefix), once there has been one.
    keys: Option<Arc<Sharded<Keys<Limits>>>>,
    /// The overrides of patterns: the start of their keys, the longest first. Few, and changed rarely: part
    /// of the snapshot.
    patterns: Vec<(String, Limits)>,
}

impl Table {
    /// Returns what overrides `key` under `prefix`, if anything: the key's own override, completed by its prefix's.
    #[inline]
    pub(crate) fn lookup(&self, prefix: &str, key: &str) -> Option<Limits> {
        if self.len.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.find(prefix, key)
    }

    fn find(&self, prefix: &str, key: &str) -> Option<Limits> {
        let prefixes = self.prefixes.load();
        let entry = prefixes.get(prefix)?;
        let own = entry
            .keys
            .as_ref()
            .and_then(|keys| {
                let key = KeyRef::from(key);
                let (mut shard, hash) = keys.lock(key);
                shard.get_mut(hash, key).copied()
            })
            .or_else(|| {
                let mut patterns = entry.patterns.iter();
                patterns
                    .find_map(|(start, limits)| key.starts_with(start.as_str()).then_some(*limits))
            });
        match (own, entry.all) {
            (Some(own), Some(all)) => Some(own.or(all)),
            (own, all) => own.or(all),
        }
    }

    /// Sets (`set`) or clears `change`: in place for a key's override, a new snapshot for a prefix's.
    pub(crate) fn change(&self, change: &Override, set: bool) {
        if change.pattern {
            return self.change_pattern(change, set);
        }
        let Some(key) = &change.key else {
            let mut prefixes = HashMap::clone(&self.prefixes.load());
            let entry = prefixes.entry(change.prefix.clone()).or_default();
            let before = std::mem::replace(&mut entry.all, set.then_some(change.limits));
            self.prefixes.store(Arc::new(prefixes));
            self.count(before.is_some(), set);
            return;
        };
        let Some(keys) = self.keys_of(&change.prefix, set) else {
            return;
        };
        let key = KeyRef::from(key.as_str());
        let (mut shard, hash) = keys.lock(key);
        let had = if set {
            let (limits, new) = shard.get_or_insert_with(hash, key, || change.limits);
            *limits = change.limits;
            !new
        } else {
            shard.remove(hash, key).is_some()
        };
        drop(shard);
        self.count(had, set);
    }

    /// Sets or clears the override of a pattern: a new snapshot, as for a prefix's.
    fn change_pattern(&self, change: &Override, set: bool) {
        let Some(start) = change.key.as_deref().and_then(|k| k.strip_suffix('*')) else {
            return;
        };
        let mut prefixes = HashMap::clone(&self.prefixes.load());
        let patterns = &mut prefixes.entry(change.prefix.clone()).or_default().patterns;
        let had = patterns.iter().position(|(s, _)| s == start);
        match (had, set) {
            (Some(at), true) => patterns[at].1 = change.limits,
            (Some(at), false) => drop(patterns.remove(at)),
            (None, true) => patterns.push((start.to_owned(), change.limits)),
            (None, false) => {}
        }
        // The longest start first: where several match, the most precise wins.
        patterns.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        self.prefixes.store(Arc::new(prefixes));
        self.count(had.is_some(), set);
    }

    /// Returns the per-key overrides of `prefix`, made if there are none yet and `make`.
    fn keys_of(&self, prefix: &str, make: bool) -> Option<Arc<Sharded<Keys<Limits>>>> {
        if let Some(keys) = self
            .prefixes
            .load()
            .get(prefix)
            .and_then(|p| p.keys.clone())
        {
            return Some(keys);
        }
        if !make {
            return None;
        }
        let keys = Arc::new(Sharded::new(KEY_SHARDS));
        let mut prefixes = HashMap::clone(&self.prefixes.load());
        prefixes.entry(prefix.to_owned()).or_default().keys = Some(keys.clone());
        self.prefixes.store(Arc::new(prefixes));
        Some(keys)
    }

    /// Keeps `len` right after a change: whether the target `had` an override, and whether it has one now.
    fn count(&self, had: bool, has: bool) {
        match (had, has) {
            (false, true) => self.len.fetch_add(1, Ordering::Release),
            (true, false) => self.len.fetch_sub(1, Ordering::Release),
            _ => 0,
        };
    }

    /// Replaces every override with `overrides`.
    pub(crate) fn replace(&self, overrides: impl IntoIterator<Item = Override>) {
        let fresh = Table::default();
        for o in overrides {
            fresh.change(&o, true);
        }
        self.prefixes.store(fresh.prefixes.load_full());
        self.len.store(fresh.len(), Ordering::Release);
    }

    /// Returns how many overrides the table holds.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Lists every override, by prefix and then key.
    pub(crate) fn list(&self) -> Vec<Override> {
        let mut all = Vec::new();
        for (prefix, entry) in self.prefixes.load().iter() {
            if let Some(limits) = entry.all {
                all.push(Override::with(prefix.clone(), None, limits));
            }
            for (start, limits) in &entry.patterns {
                let mut pattern =
                    Override::with(prefix.clone(), Some(format!("{start}*")), *limits);
                pattern.pattern = true;
                all.push(pattern);
            }
            let Some(keys) = &entry.keys else { continue };
            for index in 0..keys.count() {
                let shard = keys.lock_shard(index);
                all.extend(shard.entries().map(|(key, &limits)| {
                    Override::with(prefix.clone(), Some(key.to_owned()), limits)
                }));
            }
        }
        all.sort_by(|a, b| (&a.prefix, &a.key).cmp(&(&b.prefix, &b.key)));
        all
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::key::StoreKey;

    #[test]
    fn a_key_override_wins_over_its_prefix_and_is_completed_by_it() {
        let table = Table::default();
        table.change(
            &Override::policy("p:")
                .max(10)
                .window(Duration::from_secs(5)),
            true,
        );
        table.change(&Override::key("p:", "vip").max(100), true);
        assert_eq!(table.lookup("p:", "anyone").unwrap().max, Some(10));
        let vip = table.lookup("p:", "vip").unwrap();
        assert_eq!(
            (vip.max, vip.window),
            (Some(100), Some(Duration::from_secs(5)))
        );
        assert_eq!(table.lookup("q:", "vip"), None);
        table.change(&Override::policy("p:"), false);
        assert_eq!(table.lookup("p:", "anyone"), None);
        assert_eq!(table.lookup("p:", "vip").unwrap().max, Some(100));
        assert_eq!((table.len(), table.list().len()), (1, 1));
    }

    /// Checks that setting an override again replaces it; clearing one that is not there changes nothing; the count
    /// follows.
    #[test]
    fn the_count_follows_sets_replacements_and_clears() {
        let table = Table::default();
        for max in [1, 2, 3] {
            table.change(&Override::key("p:", "a").max(max), true);
        }
        table.change(&Override::key("p:", "b").max(1), true);
        table.change(&Override::key("q:", "a").max(1), false);
        table.change(&Override::policy("q:"), false);
        assert_eq!(table.len(), 2);
        assert_eq!(table.lookup("p:", "a").unwrap().max, Some(3));
        table.change(&Override::key("p:", "a"), false);
        table.change(&Override::key("p:", "b"), false);
        assert_eq!((table.len(), table.lookup("p:", "a")), (0, None));
    }

    /// Checks that a prefix and a key that spell the same store key are still two targets.
    #[test]
    fn targets_are_told_apart_by_where_the_prefix_ends() {
        let table = Table::default();
        table.change(&Override::key("ab", "c").max(1), true);
        table.change(&Override::key("a", "bc").max(2), true);
        // What a call's store key puts after each prefix.
        let rest = |prefix: &str, key: &str| StoreKey::rest_of(prefix, format_args!("{key}"));
        assert_eq!(table.lookup("ab", &rest("ab", "c")).unwrap().max, Some(1));
        assert_eq!(table.lookup("a", &rest("a", "bc")).unwrap().max, Some(2));
        assert_eq!(table.lookup("abc", &rest("abc", "")), None);
    }

    /// Checks that a key's own override wins over a pattern's, the longest pattern over a shorter one, and a
    /// pattern over its policy's, each completed by the next.
    #[test]
    fn patterns_match_the_start_of_keys_the_longest_first() {
        let table = Table::default();
        table.change(&Override::policy("p:").window(Duration::from_secs(5)), true);
        table.change(&Override::pattern("p:", "acme*").max(10), true);
        table.change(&Override::pattern("p:", "acme-eu*").max(20), true);
        table.change(&Override::key("p:", "acme-eu-1").max(30), true);
        let max = |key: &str| table.lookup("p:", key).and_then(|l| l.max);
        assert_eq!(max("acme"), Some(10));
        assert_eq!(max("acme-us"), Some(10));
        assert_eq!(max("acme-eu-2"), Some(20));
        assert_eq!(max("acme-eu-1"), Some(30));
        assert_eq!(max("initech"), None);
        assert_eq!(
            table.lookup("p:", "acme-eu-2").unwrap().window,
            Some(Duration::from_secs(5))
        );
        assert_eq!(table.lookup("q:", "acme"), None);
        assert_eq!(table.len(), 4);
        let listed: Vec<_> = table
            .list()
            .iter()
            .map(|o| o.target_key().map(str::to_owned))
            .collect();
        assert!(listed.contains(&Some("acme-eu*".to_owned())), "{listed:?}");
        table.change(&Override::pattern("p:", "acme-eu*"), false);
        assert_eq!((max("acme-eu-2"), table.len()), (Some(10), 3));
        // A pattern's override, written in the hash and read back, is a pattern's still.
        let acme = Override::pattern("p:", "acme*").max(10);
        assert_eq!(Override::parse(&acme.field(), &acme.value()), Some(acme));
    }

    #[test]
    fn replacing_installs_exactly_what_is_given() {
        let table = Table::default();
        table.change(&Override::key("p:", "old").max(1), true);
        table.replace([
            Override::key("p:", "new").max(2),
            Override::policy("q:").max(3),
        ]);
        assert_eq!(table.lookup("p:", "old"), None);
        assert_eq!(table.lookup("p:", "new").unwrap().max, Some(2));
        assert_eq!(table.lookup("q:", "x").unwrap().max, Some(3));
        assert_eq!(table.len(), 2);
    }
}
