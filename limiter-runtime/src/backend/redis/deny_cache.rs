//! The deny cache: once Redis says a key is limited for `retry_after`, this node answers further calls of that
//! key (of the same cost) itself until then, with no round trip.
//!
//! Exact for every algorithm: `retry_after` is when a call of that cost would first be admitted if nothing else
//! happened, and nothing another node does can make it earlier (admissions only add); the only thing that can,
//! an override, clears the cache. The deadline runs from when the request was *sent*, never later than Redis
//! decided, so the cache can only under-deny (send a call Redis will deny), never deny one Redis would admit.
//!
//! When a denial runs out, one call per node at a time re-asks Redis (the key's room is filled call by call,
//! so no more than the limit is ever admitted); calls that come meanwhile are denied with a `retry_after` of
//! zero, "ask again now", instead of all rushing to Redis at once. Under an abusive key, this node sends Redis
//! a few calls per retry period.
//!
//! Times are read from the limiter's clock (monotonic; a test's fake clock in test mode). A cached answer's
//! `remaining` and `reset_after` are as Redis last reported them; whether the call is denied, and its
//! `retry_after`, are exact (on one node; with several, another node's admissions can only make the true
//! `retry_after` later, never the answer wrong).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::backend::sharded::{Keys, Sharded};
use crate::key::KeyRef;
use crate::Decision;

const SHARDS: usize = 16;
/// Keys held at most, per shard: an abusive key is what this is for, not every key ever denied.
const CAPACITY: usize = 4_096;

#[derive(Debug)]
pub(crate) struct DenyCache {
    /// Denials by store key.
    shards: Sharded<Keys<Denial>>,
    /// Denials held, in every shard: while there are none (the usual case) nothing is locked or hashed.
    held: AtomicUsize,
}

#[derive(Debug, Clone, Copy)]
struct Denial {
    until: Duration,
    /// The cost denied: a call of another cost has another `retry_after` (a smaller one may even fit).
    cost: u64,
    decision: Decision,
    /// When the denied request was sent.
    sent: Duration,
    /// Until when a call re-asking Redis about this expired denial may still answer (zero: none is). A probe
    /// that failed or was dropped is forgotten after the Redis deadline.
    probing_until: Duration,
}

/// What the cache knows of a call.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// Nothing: ask Redis.
    Miss,
    /// Redis said no, and it still holds.
    Denied(Decision),
    /// The denial ran out: this call re-asks Redis, and must report back with [`DenyCache::answered`].
    Probe,
}

impl Default for DenyCache {
    fn default() -> Self {
        DenyCache {
            shards: Sharded::new(SHARDS),
            held: AtomicUsize::new(0),
        }
    }
}

impl DenyCache {
    /// What is known of a call of `cost` to `key` at `now`; a probe it starts may take up to `deadline`.
    pub(crate) fn get(
        &self,
        key: KeyRef<'_>,
        cost: u64,
        now: Duration,
        deadline: Duration,
    ) -> Lookup {
        if self.held.load(Ordering::Relaxed) == 0 {
            return Lookup::Miss;
        }
        let (mut shard, hash) = self.shards.lock(key);
        let Some(denial) = shard
            .get_mut(hash, key)
            .filter(|denial| denial.cost == cost)
        else {
            // Another cost has another `retry_after` (a smaller one may even fit).
            return Lookup::Miss;
        };
        let mut decision = denial.decision;
        if now < denial.until {
            // Another call may have stored this denial after `now` was read: never below zero.
            let elapsed = now.saturating_sub(denial.sent);
            decision.retry_after = denial.until - now;
            decision.reset_after = decision.reset_after.saturating_sub(elapsed);
            decision.decided_at += elapsed;
            return Lookup::Denied(decision);
        }
        if now < denial.probing_until {
            decision.retry_after = Duration::ZERO;
            return Lookup::Denied(decision);
        }
        denial.probing_until = now + deadline;
        Lookup::Probe
    }

    /// Records Redis's answer to a call of `cost` to `key`, sent at `sent`, after a [`Lookup::Probe`] (`probe`)
    /// or a [`Lookup::Miss`].
    pub(crate) fn answered(
        &self,
        key: KeyRef<'_>,
        cost: u64,
        decision: &Decision,
        sent: Duration,
        probe: bool,
    ) {
        if !decision.allowed {
            self.insert(key, cost, decision, sent);
        } else if probe {
            // Admitted: the next call re-asks, one at a time, until the room is filled.
            let (mut shard, hash) = self.shards.lock(key);
            if let Some(denial) = shard.get_mut(hash, key) {
                denial.probing_until = Duration::ZERO;
            }
        } else {
            // This node saw the key admit a call: its count changed.
            self.remove(key);
        }
    }

    /// Remembers Redis's denial of a call of `cost` to `key`, sent at `sent`.
    fn insert(&self, key: KeyRef<'_>, cost: u64, decision: &Decision, sent: Duration) {
        if decision.degraded || decision.retry_after.is_zero() {
            self.remove(key);
            return;
        }
        let (mut shard, hash) = self.shards.lock(key);
        if shard.len() >= CAPACITY {
            let removed = shard.retain(|denial| denial.until > sent);
            self.held.fetch_sub(removed, Ordering::Relaxed);
            if shard.len() >= CAPACITY {
                return;
            }
        }
        let denial = Denial {
            until: sent + decision.retry_after,
            cost,
            decision: *decision,
            sent,
            probing_until: Duration::ZERO,
        };
        let (known, new) = shard.get_or_insert_with(hash, key, || denial);
        *known = denial;
        if new {
            self.held.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Forgets `key`'s denial.
    fn remove(&self, key: KeyRef<'_>) {
        if self.held.load(Ordering::Relaxed) == 0 {
            return;
        }
        let (mut shard, hash) = self.shards.lock(key);
        if shard.remove(hash, key).is_some() {
            self.held.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Forgets every denial: the limits changed.
    pub(crate) fn clear(&self) {
        for index in 0..self.shards.count() {
            let mut shard = self.shards.lock_shard(index);
            self.held.fetch_sub(shard.len(), Ordering::Relaxed);
            shard.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: Duration = Duration::from_secs(3_600);

    fn denied(retry_after: Duration) -> Decision {
        Decision {
            allowed: false,
            limit: 5,
            window: Duration::from_secs(10),
            remaining: 0,
            retry_after,
            reset_after: Duration::from_secs(9),
            delay: Duration::ZERO,
            decided_at: Duration::from_secs(1_000),
            degraded: false,
        }
    }

    const DEADLINE: Duration = Duration::from_millis(50);

    fn get(cache: &DenyCache, key: &str, cost: u64, now: Duration) -> Lookup {
        cache.get(key.into(), cost, now, DEADLINE)
    }

    fn denied_now(cache: &DenyCache, key: &str, cost: u64, now: Duration) -> Option<Decision> {
        match get(cache, key, cost, now) {
            Lookup::Denied(decision) => Some(decision),
            _ => None,
        }
    }

    #[test]
    fn answers_until_retry_after_from_the_send() {
        let cache = DenyCache::default();
        let sent = T0;
        cache.answered(
            "k".into(),
            2,
            &denied(Duration::from_millis(500)),
            sent,
            false,
        );
        let later = sent + Duration::from_millis(200);
        let cached = denied_now(&cache, "k", 2, later).unwrap();
        assert_eq!(cached.retry_after, Duration::from_millis(300));
        assert_eq!(cached.decided_at, Duration::from_millis(1_000_200));
        assert!(
            matches!(get(&cache, "k", 3, later), Lookup::Miss),
            "another cost: ask Redis"
        );
        assert!(matches!(get(&cache, "other", 2, later), Lookup::Miss));
    }

    #[test]
    fn once_expired_one_call_at_a_time_re_asks() {
        let cache = DenyCache::default();
        cache.answered(
            "k".into(),
            1,
            &denied(Duration::from_millis(500)),
            T0,
            false,
        );
        let expired = T0 + Duration::from_millis(500);
        assert!(matches!(get(&cache, "k", 1, expired), Lookup::Probe));
        let meanwhile = denied_now(&cache, "k", 1, expired).expect("denied while the probe is out");
        assert_eq!(meanwhile.retry_after, Duration::ZERO, "ask again now");
        // A probe that never reports back is given up after the deadline.
        assert!(matches!(
            get(&cache, "k", 1, expired + DEADLINE),
            Lookup::Probe
        ));
        // The probe was admitted: the next call probes in turn.
        cache.answered(
            "k".into(),
            1,
            &Decision {
                allowed: true,
                ..denied(Duration::ZERO)
            },
            expired,
            true,
        );
        assert!(matches!(get(&cache, "k", 1, expired), Lookup::Probe));
        // That one was denied again: a fresh denial.
        cache.answered(
            "k".into(),
            1,
            &denied(Duration::from_millis(100)),
            expired,
            true,
        );
        assert!(denied_now(&cache, "k", 1, expired + Duration::from_millis(50)).is_some());
        // An admission seen outside a probe forgets the key.
        cache.answered(
            "k".into(),
            1,
            &Decision {
                allowed: true,
                ..denied(Duration::ZERO)
            },
            expired,
            false,
        );
        assert!(matches!(get(&cache, "k", 1, expired), Lookup::Miss));
    }

    #[test]
    fn keeps_no_degraded_decision() {
        let cache = DenyCache::default();
        let mut degraded = denied(Duration::from_secs(1));
        degraded.degraded = true;
        cache.answered("a".into(), 1, &degraded, T0, false);
        assert!(matches!(get(&cache, "a", 1, T0), Lookup::Miss));
        cache.answered("c".into(), 1, &denied(Duration::from_secs(1)), T0, false);
        cache.clear();
        assert!(matches!(get(&cache, "c", 1, T0), Lookup::Miss));
    }
}
