//! The deny cache: once Redis says a call is limited for `retry_after`, this node answers further calls of
//! the same limits and keys (of the same costs) itself until then, with no round trip.
//!
//! Exact for every algorithm: `retry_after` is when a call of that cost would first be admitted if nothing else
//! happened, and nothing another node admits can make it earlier (admissions only add); an override, which
//! can, clears the cache, and so does a charge this node gives back. A call with several limits is denied
//! until the last of its refusing limits would admit it. The deadline runs from when the request was *sent*,
//! never later than Redis decided, so the cache can only under-deny (send a call Redis will deny), never deny
//! one Redis would admit. (A charge another node gives back can end a denial early: this node then denies
//! until the `retry_after` it was told, but never longer than [`HOLD`], so that a month's quota, whose
//! `retry_after` is weeks, sees another node's give-backs within a second.) A key's block (a penalty's or a
//! ban) is held a second at a time too, so that what Redis holds is what every node enforces within a second:
//! a ban that replaces a shorter block, an unban, a block that Redis lost (restarted empty, flushed). Every
//! node also forgets its denials of a key when it hears of a ban or an unban of it, at once.
//!
//! When a denial runs out, one call per node at a time re-asks Redis (the key's room is filled call by call,
//! so no more than the limit is ever admitted); calls that come meanwhile are denied with a `retry_after` of
//! zero, "ask again now" (a blocked key's, what is left of its block), instead of all rushing to Redis at once.
//! Under an abusive key, this node sends Redis a call a second at most. Not while Redis fails: then a denial
//! that ran out answers nothing, and the failure policy decides (`open` lets the call through), except a
//! block's, which holds to the block's end.
//!
//! Times are read from the limiter's clock (monotonic; a test's fake clock in test mode). A cached answer's
//! `remaining` and `reset_after` are as Redis last reported them; whether the call is denied, and its
//! `retry_after`, are exact (on one node; with several, another node's admissions can only make the true
//! `retry_after` later, never the answer wrong).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::call::OneOrMany;
use crate::key::KeyRef;
use crate::sharded::{Keys, Sharded};
use crate::{Decision, Verdict};

const SHARDS: usize = 16;
/// Calls held at most, per shard: an abusive key is what this is for, not every key ever denied.
const CAPACITY: usize = 4_096;
/// The longest a denial is held before one call re-asks Redis: give-backs made on other nodes are seen by
/// then.
const HOLD: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(crate) struct DenyCache {
    /// Denials by the call's key: the store key of its one limit, or its limits' keys joined.
    shards: Sharded<Keys<Denial>>,
    /// Denials held, in every shard: while there are none (the usual case) nothing is locked or hashed.
    held: AtomicUsize,
}

#[derive(Debug)]
struct Denial {
    /// Until when it is answered without asking Redis: at most [`HOLD`] after it was sent.
    until: Duration,
    /// When the latest of its blocks ends, as Redis said (zero: it has none): while Redis fails, it holds
    /// until then.
    block_until: Duration,
    /// Each limit's weighing (its cost and terms, as the backend marks them), and what Redis said of it: a
    /// call of other costs has another `retry_after` (a smaller one may even fit), and one under other terms
    /// another limit.
    limits: Box<[(u64, Decision)]>,
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
    /// Redis said no, and it still holds: each limit's decision.
    Denied(OneOrMany<Decision>),
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
    /// Returns whether the cache holds no denial: then nothing is worth looking up.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.load(Ordering::Relaxed) == 0
    }

    /// Returns what is known of a call of `costs` to the limits that `key` names, at `now`; a probe it starts may take
    /// up to `deadline`. While Redis `fails`, a denial that ran out is no longer known: no probe holds other
    /// calls back, and the failure policy decides them (a denial still running holds: it is exact).
    pub(crate) fn get(
        &self,
        key: KeyRef<'_>,
        costs: impl ExactSizeIterator<Item = u64>,
        now: Duration,
        deadline: Duration,
        fails: bool,
    ) -> Lookup {
        if self.is_empty() {
            return Lookup::Miss;
        }
        let (mut shard, hash) = self.shards.lock(key);
        let len = costs.len();
        let Some(denial) = shard.get_mut(hash, key).filter(|denial| {
            denial.limits.len() == len && denial.limits.iter().zip(costs).all(|(l, c)| l.0 == c)
        }) else {
            // Other costs have another `retry_after` (smaller ones may even fit).
            return Lookup::Miss;
        };
        let decisions = |denial: &Denial, retry_after: &dyn Fn(&Decision) -> Duration| {
            // Another call may have stored this denial after `now` was read: never below zero.
            let elapsed = now.saturating_sub(denial.sent);
            denial
                .limits
                .iter()
                .map(|(_, decision)| {
                    let mut decision = *decision;
                    decision.retry_after = retry_after(&decision);
                    decision.reset_after = decision.reset_after.saturating_sub(elapsed);
                    decision.decided_at += elapsed;
                    decision
                })
                .collect()
        };
        let sent = denial.sent;
        let told = |decision: &Decision| (sent + decision.retry_after).saturating_sub(now);
        if now < denial.until || (fails && now < denial.block_until) {
            return Lookup::Denied(decisions(denial, &told));
        }
        if fails {
            return Lookup::Miss;
        }
        if now < denial.probing_until {
            // Ask again now; a block still is what is left of it.
            return Lookup::Denied(decisions(denial, &|decision| match decision.verdict {
                Verdict::Blocked => told(decision),
                _ => Duration::ZERO,
            }));
        }
        denial.probing_until = now + deadline;
        Lookup::Probe
    }

    /// Records Redis's answer to a call of `costs` to the limits `key` names, sent at `sent`, after a
    /// [`Lookup::Probe`] (`probe`) or a [`Lookup::Miss`]: each limit's decision, and whether the call was
    /// `admitted`.
    pub(crate) fn answered(
        &self,
        key: KeyRef<'_>,
        costs: impl Iterator<Item = u64>,
        decisions: &[Decision],
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
    fn insert(
        &self,
        key: KeyRef<'_>,
        costs: impl Iterator<Item = u64>,
        decisions: &[Decision],
        sent: Duration,
    ) {
        // Held at most `HOLD`; a block, while Redis fails, to its end.
        let retry_after = decisions.iter().map(|d| d.retry_after.min(HOLD)).max();
        let block = decisions
            .iter()
            .filter(|d| d.verdict == Verdict::Blocked)
            .map(|d| d.retry_after)
            .max();
        let degraded = decisions.iter().any(|d| d.degraded);
        let Some(retry_after) = retry_after.filter(|r| !r.is_zero() && !degraded) else {
            self.remove(key);
            return;
        };
        let (mut shard, hash) = self.shards.lock(key);
        if shard.len() >= CAPACITY {
            let removed = shard.retain(|denial| denial.until.max(denial.block_until) > sent);
            self.held.fetch_sub(removed, Ordering::Relaxed);
            if shard.len() >= CAPACITY {
                return;
            }
        }
        let denial = Denial {
            until: sent + retry_after,
            block_until: block.map_or(Duration::ZERO, |block| sent + block),
            limits: costs.zip(decisions.iter().copied()).collect(),
            sent,
            probing_until: Duration::ZERO,
        };
        let mut denial = Some(denial);
        let (known, new) = shard.get_or_insert_with(hash, key, || denial.take().expect("once"));
        if new {
            self.held.fetch_add(1, Ordering::Relaxed);
        } else if let Some(denial) = denial {
            *known = denial;
        }
    }

    /// Returns whether a denial of the call `key` names holds at `now`: a call of its costs is refused without asking
    /// Redis.
    pub(crate) fn holds(&self, key: KeyRef<'_>, now: Duration) -> bool {
        if self.is_empty() {
            return false;
        }
        let (mut shard, hash) = self.shards.lock(key);
        shard
            .get_mut(hash, key)
            .is_some_and(|denial| now < denial.until)
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
mod tests;
