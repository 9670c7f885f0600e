//! The deny cache: once Redis says a call is limited for `retry_after`, this node answers further calls of
//! the same limits and keys (of the same costs) itself until then, with no round trip.
//!
//! Exact for every algorithm: `retry_after` is when a call of that cost would first be admitted if nothing else
//! happened, and nothing another node admits can make it earlier (admissions only add); an override, which
//! can, clears the cache, and so does a charge this node gives back. A call with several limits is denied
//! until the last of its refusing limits would admit it. The deadline runs from when the request was *sent*,
//! never later than Redis decided, so the cache can only under-deny (send a call Redis will deny), never deny
//! one Redis would admit. (A charge another node gives back can end a denial early: this node then denies
//! until the `retry_after` it was told, never longer.)
//!
//! When a denial runs out, one call per node at a time re-asks Redis (the key's room is filled call by call,
//! so no more than the limit is ever admitted); calls that come meanwhile are denied with a `retry_after` of
//! zero, "ask again now", instead of all rushing to Redis at once. Under an abusive key, this node sends Redis
//! a few calls per retry period. Not while Redis fails: then a denial that ran out answers nothing, and the
//! failure policy decides (`open` lets the call through).
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
/// Calls held at most, per shard: an abusive key is what this is for, not every key ever denied.
const CAPACITY: usize = 4_096;

#[derive(Debug)]
pub(crate) struct DenyCache {
    /// Denials by the call's key: the store key of its one limit, or its limits' keys joined.
    shards: Sharded<Keys<Denial>>,
    /// Denials held, in every shard: while there are none (the usual case) nothing is locked or hashed.
    held: AtomicUsize,
}

#[derive(Debug)]
struct Denial {
    until: Duration,
    /// Each limit's cost, and what Redis said of it: a call of other costs has another `retry_after` (a
    /// smaller one may even fit).
    limits: Box<[(u64, Decision)]>,
    /// When the denied request was sent.
    sent: Duration,
    /// Until when a call re-asking Redis about this expired denial may still answer (zero: none is). A probe
    /// that failed or was dropped is forgotten after the Redis deadline.
    probing_until: Duration,
}

/// What the cache knows of a call of `N` limits.
#[derive(Debug)]
pub(crate) enum Lookup<const N: usize> {
    /// Nothing: ask Redis.
    Miss,
    /// Redis said no, and it still holds: each limit's decision.
    Denied([Decision; N]),
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
    /// Whether the cache holds no denial: then nothing is worth looking up.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.load(Ordering::Relaxed) == 0
    }

    /// What is known of a call of `costs` to the limits that `key` names, at `now`; a probe it starts may take
    /// up to `deadline`. While Redis `fails`, a denial that ran out is no longer known: no probe holds other
    /// calls back, and the failure policy decides them (a denial still running holds: it is exact).
    pub(crate) fn get<const N: usize>(
        &self,
        key: KeyRef<'_>,
        costs: [u64; N],
        now: Duration,
        deadline: Duration,
        fails: bool,
    ) -> Lookup<N> {
        if self.is_empty() {
            return Lookup::Miss;
        }
        let (mut shard, hash) = self.shards.lock(key);
        let Some(denial) = shard.get_mut(hash, key).filter(|denial| {
            denial.limits.len() == N && denial.limits.iter().zip(costs).all(|(l, c)| l.0 == c)
        }) else {
            // Other costs have another `retry_after` (smaller ones may even fit).
            return Lookup::Miss;
        };
        let decisions = |denial: &Denial, retry_after: &dyn Fn(&Decision) -> Duration| {
            // Another call may have stored this denial after `now` was read: never below zero.
            let elapsed = now.saturating_sub(denial.sent);
            std::array::from_fn(|i| {
                let mut decision = denial.limits[i].1;
                decision.retry_after = retry_after(&decision);
                decision.reset_after = decision.reset_after.saturating_sub(elapsed);
                decision.decided_at += elapsed;
                decision
            })
        };
        if now < denial.until {
            let sent = denial.sent;
            return Lookup::Denied(decisions(denial, &|decision| {
                (sent + decision.retry_after).saturating_sub(now)
            }));
        }
        if fails {
            return Lookup::Miss;
        }
        if now < denial.probing_until {
            return Lookup::Denied(decisions(denial, &|_| Duration::ZERO));
        }
        denial.probing_until = now + deadline;
        Lookup::Probe
    }

    /// Records Redis's answer to a call of `costs` to the limits `key` names, sent at `sent`, after a
    /// [`Lookup::Probe`] (`probe`) or a [`Lookup::Miss`]: each limit's decision, and whether the call was
    /// `admitted`.
    pub(crate) fn answered<const N: usize>(
        &self,
        key: KeyRef<'_>,
        costs: [u64; N],
        decisions: &[Decision; N],
        admitted: bool,
        sent: Duration,
        probe: bool,
    ) {
        if !admitted {
            self.insert(key, costs, decisions, sent);
        } else if probe {
            // Admitted: the next call re-asks, one at a time, until the room is filled.
            let (mut shard, hash) = self.shards.lock(key);
            if let Some(denial) = shard.get_mut(hash, key) {
                denial.probing_until = Duration::ZERO;
            }
        } else {
            // This node saw the call admitted: its limits' counts changed.
            self.remove(key);
        }
    }

    /// Remembers Redis's denial of a call, sent at `sent`: until the last of its refusing limits would admit
    /// it.
    fn insert<const N: usize>(
        &self,
        key: KeyRef<'_>,
        costs: [u64; N],
        decisions: &[Decision; N],
        sent: Duration,
    ) {
        let retry_after = decisions.iter().map(|d| d.retry_after).max();
        let degraded = decisions.iter().any(|d| d.degraded);
        let Some(retry_after) = retry_after.filter(|r| !r.is_zero() && !degraded) else {
            self.remove(key);
            return;
        };
        let (mut shard, hash) = self.shards.lock(key);
        if shard.len() >= CAPACITY {
            let removed = shard.retain(|denial| denial.until > sent);
            self.held.fetch_sub(removed, Ordering::Relaxed);
            if shard.len() >= CAPACITY {
                return;
            }
        }
        let denial = || Denial {
            until: sent + retry_after,
            limits: costs.into_iter().zip(decisions.iter().copied()).collect(),
            sent,
            probing_until: Duration::ZERO,
        };
        let (known, new) = shard.get_or_insert_with(hash, key, denial);
        if new {
            self.held.fetch_add(1, Ordering::Relaxed);
        } else {
            *known = denial();
        }
    }

    /// Forgets the denial of the call `key` names.
    pub(crate) fn remove(&self, key: KeyRef<'_>) {
        if self.is_empty() {
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

    fn get(cache: &DenyCache, key: &str, cost: u64, now: Duration) -> Lookup<1> {
        cache.get(key.into(), [cost], now, DEADLINE, false)
    }

    fn denied_now(cache: &DenyCache, key: &str, cost: u64, now: Duration) -> Option<Decision> {
        match get(cache, key, cost, now) {
            Lookup::Denied([decision]) => Some(decision),
            _ => None,
        }
    }

    fn answered(
        cache: &DenyCache,
        key: &str,
        cost: u64,
        decision: Decision,
        sent: Duration,
        probe: bool,
    ) {
        cache.answered(
            key.into(),
            [cost],
            &[decision],
            decision.allowed,
            sent,
            probe,
        );
    }

    #[test]
    fn answers_until_retry_after_from_the_send() {
        let cache = DenyCache::default();
        let sent = T0;
        answered(
            &cache,
            "k",
            2,
            denied(Duration::from_millis(500)),
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
    fn while_redis_fails_a_denial_that_ran_out_holds_nothing_back() {
        let cache = DenyCache::default();
        answered(
            &cache,
            "k",
            1,
            denied(Duration::from_millis(500)),
            T0,
            false,
        );
        let fails = |now| cache.get("k".into(), [1], now, DEADLINE, true);
        assert!(
            matches!(fails(T0 + Duration::from_millis(499)), Lookup::Denied(_)),
            "a denial still running is exact"
        );
        let expired = T0 + Duration::from_millis(500);
        assert!(matches!(get(&cache, "k", 1, expired), Lookup::Probe));
        // A probe is out, and Redis fails: no call is held back by it.
        assert!(matches!(fails(expired), Lookup::Miss));
        assert!(matches!(fails(expired + DEADLINE), Lookup::Miss));
    }

    #[test]
    fn once_expired_one_call_at_a_time_re_asks() {
        let cache = DenyCache::default();
        answered(
            &cache,
            "k",
            1,
            denied(Duration::from_millis(500)),
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
        answered(
            &cache,
            "k",
            1,
            Decision {
                allowed: true,
                ..denied(Duration::ZERO)
            },
            expired,
            true,
        );
        assert!(matches!(get(&cache, "k", 1, expired), Lookup::Probe));
        // That one was denied again: a fresh denial.
        answered(
            &cache,
            "k",
            1,
            denied(Duration::from_millis(100)),
            expired,
            true,
        );
        assert!(denied_now(&cache, "k", 1, expired + Duration::from_millis(50)).is_some());
        // An admission seen outside a probe forgets the key.
        answered(
            &cache,
            "k",
            1,
            Decision {
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
        answered(&cache, "a", 1, degraded, T0, false);
        assert!(matches!(get(&cache, "a", 1, T0), Lookup::Miss));
        answered(&cache, "c", 1, denied(Duration::from_secs(1)), T0, false);
        cache.clear();
        assert!(matches!(get(&cache, "c", 1, T0), Lookup::Miss));
    }

    /// A call of several limits is denied until the last of its refusing limits would admit it, and only a
    /// call of the same costs is answered.
    #[test]
    fn a_call_of_several_limits_is_denied_until_the_last_would_admit_it() {
        let cache = DenyCache::default();
        let admitted = Decision {
            allowed: true,
            ..denied(Duration::ZERO)
        };
        let decisions = [
            denied(Duration::from_millis(200)),
            admitted,
            denied(Duration::from_millis(500)),
        ];
        cache.answered("call".into(), [1, 2, 1], &decisions, false, T0, false);
        let later = T0 + Duration::from_millis(300);
        match cache.get("call".into(), [1, 2, 1], later, DEADLINE, false) {
            Lookup::Denied([a, b, c]) => {
                assert_eq!(a.retry_after, Duration::ZERO);
                assert!(b.allowed && b.retry_after.is_zero());
                assert_eq!(c.retry_after, Duration::from_millis(200));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            cache.get("call".into(), [1, 1, 1], later, DEADLINE, false),
            Lookup::Miss
        ));
        let expired = T0 + Duration::from_millis(500);
        assert!(matches!(
            cache.get("call".into(), [1, 2, 1], expired, DEADLINE, false),
            Lookup::Probe
        ));
    }
}
