//! Leases ([`Rule::lease`](crate::Rule::lease)): for a hot key, this node takes up to a rule's `lease` units
//! from Redis in one script call and spends them in memory, with no round trip, until the lease runs out or
//! its `lease_ttl` passes (a fixed window's, at the latest, when its window ends); what is left then goes
//! back to Redis, with the next lease taken or by the sweep that returns idle ones.
//!
//! Units are counted in Redis when a lease is taken, so Redis never admits more than the limit; they are spent
//! up to `lease_ttl` later, which is the whole cost of a lease in exactness: a token bucket admits at most
//! `burst + max · (t + lease_ttl) / window` over any interval `t`, a fixed window never more than `max` per
//! window. One call at a time takes a key's lease; calls that find it empty meanwhile wait for it (within
//! their deadline) and spend it, or, when it brings them nothing, go to Redis as any call does (coalesced).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

use crate::algorithm::{Algorithm, Outcome, Receipt, Reported, State, Terms};
use crate::backend::redis::wire::script::GiveBack;
use crate::call::{CallLimit, Charged, LeaseTerms, LimitRuling};
use crate::clock::as_micros;
use crate::error::BackendError;
use crate::key::{KeyRef, StoreKey};
use crate::sharded::{Keys, Sharded};

/// Shards of the leases: enough that hot keys rarely share one.
const SHARDS: usize = 16;

/// How often idle leases that ran out of time are given back.
pub(crate) const SWEEP_EVERY: Duration = Duration::from_millis(100);

/// Returns how soon the units other nodes hold in leases of `terms` come back at the latest: a lease's time to live,
/// then the sweep.
pub(in crate::backend::redis) fn back_within(terms: LeaseTerms) -> Duration {
    terms.ttl + SWEEP_EVERY
}

/// This node's leases, by store key.
#[derive(Debug)]
pub(crate) struct Leases {
    slots: Sharded<Keys<Slot>>,
    /// Names each lease taken, so that a charge given back goes to the lease it came from, not a later one.
    generation: AtomicU64,
}

/// A key's lease, or a call taking one.
#[derive(Debug)]
enum Slot {
    /// A call is taking a lease from Redis, since then (this node's clock). Calls meanwhile wait for it: the
    /// sender is dropped, which wakes them, when the slot changes.
    Taking(Duration, watch::Sender<()>),
    /// Boxed: a key's slot stays small while a lease is being taken.
    Held(Box<HeldLease>),
}

/// A lease this node holds.
#[derive(Debug)]
pub(in crate::backend::redis) struct HeldLease {
    generation: u64,
    key: StoreKey,
    algorithm: Algorithm,
    /// The limit's terms when it was taken, its cost the units taken.
    terms: Terms,
    /// What taking it charged in Redis, for giving back what is left.
    receipt: Receipt,
    left: u64,
    /// When it runs out of time (this node's clock).
    expires: Duration,
    /// Redis's clock when it was taken, and this node's when the answer came: a decision it makes is dated on
    /// Redis's clock, as this node reckons it.
    taken_at: u64,
    received: Duration,
    /// What the limit had left past the lease, and when it would have been whole again, when it was taken.
    remaining: u64,
    reset_after: u64,
}

/// What a call that found no lease to spend is to do.
#[derive(Debug)]
pub(in crate::backend::redis) enum Take {
    /// Take a lease, giving back what is left of the one this node held (if any).
    Lease(Option<Box<HeldLease>>),
    /// Another call is taking one: wait for it (the receiver says when the slot changed), then spend it.
    Wait(watch::Receiver<()>),
    /// A lease was held by the time the call came to take one (its taker finished in between): spent, this
    /// call's answer.
    Spent(LimitRuling),
}

impl Default for Leases {
    fn default() -> Self {
        Leases {
            slots: Sharded::new(SHARDS),
            generation: AtomicU64::new(1),
        }
    }
}

impl HeldLease {
    /// Returns whether a call of `limit` can spend it at `now` (same limit, time and units left; taken leaving free at
    /// least what the call must: a lease taken for `Normal` calls serves `Critical` ones, never `Low` ones).
    fn serves(&self, limit: &CallLimit<'_>, now: Duration) -> bool {
        let terms = |c: &Terms| (c.window, c.max, c.burst);
        now < self.expires
            && self.left >= limit.terms.cost
            && self.algorithm == limit.algorithm
            && terms(&self.terms) == terms(&limit.terms)
            && self.terms.kept >= limit.terms.kept
    }

    /// Returns the answer to a call of `limit` spending its cost of it at `now`.
    fn spend(&mut self, limit: &CallLimit<'_>, now: Duration) -> LimitRuling {
        self.left -= limit.terms.cost;
        let elapsed = as_micros(now.saturating_sub(self.received));
        let outcome = Outcome {
            allowed: true,
            remaining: self.remaining + self.left,
            retry_after: 0,
            reset_after: self.reset_after.saturating_sub(elapsed),
            delay: 0,
            receipt: self.mark(),
            blocked: false,
            reserved: false,
        };
        LimitRuling {
            decision: limit.decision(&limit.terms, outcome, self.taken_at + elapsed, false),
            receipt: outcome.receipt,
            charged: Charged::Lease,
        }
    }

    /// Returns the receipt of a call spending it: which lease it spent.
    fn mark(&self) -> Receipt {
        Receipt {
            mark: self.generation,
            ..Receipt::default()
        }
    }

    /// Returns what is left of it, to give back: its units left, of what taking it charged.
    pub(in crate::backend::redis) fn remainder(&self) -> GiveBack<'_> {
        GiveBack {
            key: &self.key,
            algorithm: self.algorithm,
            terms: &self.terms,
            receipt: &self.receipt,
            units: self.left,
        }
    }
}

/// Returns a slot taken since `now`.
fn taking(now: Duration) -> Slot {
    Slot::Taking(now, watch::Sender::new(()))
}

impl Leases {
    /// Spends the cost of a call of `limit` from the lease this node holds for its key, if it can, at `now`.
    pub(in crate::backend::redis) fn spend(
        &self,
        limit: &CallLimit<'_>,
        now: Duration,
    ) -> Option<LimitRuling> {
        let key = limit.key.parts();
        let (mut slots, hash) = self.slots.lock(key);
        match slots.get_mut(hash, key)? {
            Slot::Held(held) if held.serves(limit, now) => Some(held.spend(limit, now)),
            _ => None,
        }
    }

    /// Returns what a call of `limit` that could not spend a lease does: take one, or wait for the call taking one
    /// (one call at a time per key; a call taking one for longer than `stale` is taken to have been dropped), or
    /// spend the lease that came in the meantime.
    pub(in crate::backend::redis) fn take(
        &self,
        limit: &CallLimit<'_>,
        now: Duration,
        stale: Duration,
    ) -> Take {
        let key = limit.key.parts();
        let (mut slots, hash) = self.slots.lock(key);
        let (slot, new) = slots.get_or_insert_with(hash, key, || taking(now));
        if new {
            return Take::Lease(None);
        }
        match slot {
            Slot::Taking(since, wake) if now.saturating_sub(*since) < stale => {
                return Take::Wait(wake.subscribe());
            }
            // Spending and taking are two locks: the lease this call could not spend may have come since.
            Slot::Held(held) if held.serves(limit, now) => {
                return Take::Spent(held.spend(limit, now))
            }
            _ => {}
        }
        match std::mem::replace(slot, taking(now)) {
            // What is left goes back with the next lease: on the same limit only (a key whose algorithm
            // changed holds another kind of state).
            Slot::Held(held) if held.left > 0 && held.algorithm == limit.algorithm => {
                Take::Lease(Some(held))
            }
            _ => Take::Lease(None),
        }
    }

    /// Holds the lease `held` for its key (the call that took it is done).
    fn hold(&self, held: HeldLease) {
        let key = held.key.parts();
        let (mut slots, hash) = self.slots.lock(key);
        let (slot, _) = slots.get_or_insert_with(hash, key, || taking(Duration::ZERO));
        *slot = Slot::Held(Box::new(held));
    }

    /// Records that no lease was taken for `key` (refused, or Redis failed): the next call may take one.
    pub(in crate::backend::redis) fn abandon(&self, key: KeyRef<'_>) {
        let (mut slots, hash) = self.slots.lock(key);
        if let Some(Slot::Taking(..)) = slots.get_mut(hash, key) {
            slots.remove(hash, key);
        }
    }

    /// Gives `units` spent from the lease `receipt` names back to it, while it is held.
    pub(crate) fn give_back(&self, key: KeyRef<'_>, units: u64, receipt: &Receipt) {
        let (mut slots, hash) = self.slots.lock(key);
        if let Some(Slot::Held(held)) = slots.get_mut(hash, key) {
            if held.generation == receipt.mark {
                held.left += units;
            }
        }
    }

    /// Takes out the leases that ran out of time by `now`, with units left to give back, and forgets the
    /// takings older than `stale` (their callers were dropped); counts the units every lease still holds.
    pub(in crate::backend::redis) fn expired(
        &self,
        now: Duration,
        stale: Duration,
    ) -> (Vec<HeldLease>, u64) {
        let (mut expired, mut outstanding) = (Vec::new(), 0);
        for shard in 0..self.slots.count() {
            self.slots.lock_shard(shard).retain(|slot| {
                let held = match slot {
                    Slot::Taking(since, _) => return now.saturating_sub(*since) < stale,
                    Slot::Held(held) => held,
                };
                if now < held.expires {
                    outstanding += held.left;
                    return true;
                }
                if let Slot::Held(held) = std::mem::replace(slot, taking(now)) {
                    if held.left > 0 {
                        expired.push(*held);
                    }
                }
                false
            });
        }
        (expired, outstanding)
    }
}

impl Leases {
    /// Reads the lease taken by a call of `limit` sent at `sent`, for `terms`, from what the script answered: taken
    /// at `now` (Redis's clock), `taken` units, the limit's state before them `reported`; received at
    /// `received` (this node's clock). Holds it, and answers the call with the first of its units; none taken,
    /// the call's answer alone (refused, or admitted without a lease).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::backend::redis) fn taken(
        &self,
        limit: &CallLimit<'_>,
        sent: Duration,
        terms: LeaseTerms,
        (now, taken, reported): (u64, u64, Reported),
        received: Duration,
    ) -> Result<LimitRuling, BackendError> {
        let unexpected = || BackendError::Reply("a lease of another algorithm".into());
        let mut state =
            State::reported(limit.algorithm, now, &limit.terms, reported).ok_or_else(unexpected)?;
        if taken == 0 {
            self.abandon(limit.key.parts());
            let outcome = state.decide(now, &limit.terms);
            return Ok(LimitRuling::of(limit, outcome, now, outcome.allowed));
        }
        let charge = Terms {
            cost: taken,
            ..limit.terms
        };
        let outcome = state.decide(now, &charge);
        // A fixed window's lease ends with its window, at the latest: counted from when the call was sent,
        // which is before Redis's `now`.
        let mut ttl = terms.ttl;
        if limit.algorithm == Algorithm::FixedWindow {
            ttl = ttl.min(Duration::from_micros(outcome.reset_after));
        }
        let mut held = HeldLease {
            generation: self.generation.fetch_add(1, Ordering::Relaxed),
            key: limit.key.clone(),
            algorithm: limit.algorithm,
            terms: charge,
            receipt: outcome.receipt,
            left: taken,
            expires: sent + ttl,
            taken_at: now,
            received,
            remaining: outcome.remaining,
            reset_after: outcome.reset_after,
        };
        crate::observe::lease_taken(taken);
        // This call spends the first units of it.
        let answer = held.spend(limit, received);
        self.hold(held);
        Ok(answer)
    }
}

#[cfg(test)]
mod tests;
