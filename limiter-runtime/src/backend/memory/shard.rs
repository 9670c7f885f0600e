//! One shard of the in-memory store: its keys' states, decided and given back under the shard's lock, and
//! forgotten when idle or, at the bound, closest to their expiry first.

use crate::algorithm::carry::Level;
use crate::algorithm::{Algorithm, Outcome, Receipt, State, Terms};
use crate::key::KeyRef;
use crate::penalty::Block;
use crate::sharded::{KeyHash, Keys};
use crate::Penalty;

#[derive(Debug, Default)]
pub(super) struct Shard {
    pub(super) entries: Keys<Entry>,
    /// The blocks of keys under a penalty or a ban, in force or remembered for their offences (kept apart: a
    /// key that reads no blocks pays nothing for them).
    pub(super) blocks: Keys<Kept>,
    pub(super) decisions: u32,
    /// The time of this shard's latest decision (µs): no decision here is made at an earlier one.
    pub(super) latest: u64,
    /// The other shard this one sweeps next, so that shards with no traffic of their own are swept too.
    pub(super) next_to_sweep: usize,
    /// Keys forgotten before their expiry, to stay within the bound.
    pub(super) evicted: u64,
}

/// The state of one key and when it can be forgotten (µs): when its limit is back to its full quota.
#[derive(Debug)]
pub(super) struct Entry {
    state: State,
    expires_at: u64,
}

/// A key's block, and when it can be forgotten (µs): once its offences are forgiven.
#[derive(Debug)]
pub(super) struct Kept {
    pub(super) block: Block,
    pub(super) forgotten_at: u64,
}

impl Shard {
    /// Decides a call of `charge` on `key` under `algorithm` at `now`, as [`decide`](Shard::decide) does, with
    /// its key's block when it has a `penalty`: refused while the block is in force, counting nothing; and a
    /// call the limit refuses (one it could admit some day) starts one. But an upstream's pause in force on a
    /// key whose algorithm waits it out ([`State::after_pause`]) refuses nothing itself: the call is decided
    /// after it (a leaky bucket's slot lands after the pause), and a refusal then starts no block. The key's
    /// state is carried over to the charge's terms first, a bucket's level by `carry` ([`State::carry`]).
    #[inline(always)]
    pub(super) fn decide_penalized(
        &mut self,
        (hash, key): (KeyHash, KeyRef<'_>),
        algorithm: Algorithm,
        (charge, penalty, carry): (&Terms, Option<Penalty>, Option<Level>),
        now: u64,
        most: usize,
    ) -> Outcome {
        let asked = (charge, carry);
        let Some(penalty) = penalty else {
            return self.decide_after((hash, key), algorithm, asked, now, most, None);
        };
        let kept = self.block((hash, key), now);
        let in_force = kept.and_then(|block| Some((block, block.remaining(now)?)));
        let paused = match in_force {
            None => None,
            Some((block, _)) if block.upstream.is_some() && State::waits_out_pauses(algorithm) => {
                Some(block.until)
            }
            Some((_, left)) => return Outcome::denied(0, 0, 0).blocked(left),
        };
        let outcome = self.decide_after((hash, key), algorithm, asked, now, most, paused);
        if outcome.allowed
            || paused.is_some()
            || outcome.reserved
            || !charge.can_fit(algorithm)
            || !penalty.starts_blocks()
        {
            return outcome;
        }
        let block = Block::offence(kept.as_ref(), now, &penalty, outcome.retry_after);
        self.keep_block((hash, key), block, &penalty, now, most);
        outcome.blocked(block.until - now)
    }

    /// Returns `key`'s block at `now`, if one is remembered.
    pub(super) fn block(&mut self, (hash, key): (KeyHash, KeyRef<'_>), now: u64) -> Option<Block> {
        let kept = self.blocks.get_mut(hash, key)?;
        (kept.forgotten_at > now).then_some(kept.block)
    }

    /// Keeps `block` for `key` until its offences are forgiven; a shard holding `most` blocks forgets those
    /// forgiven, then those closest to it, first.
    pub(super) fn keep_block(
        &mut self,
        (hash, key): (KeyHash, KeyRef<'_>),
        block: Block,
        penalty: &Penalty,
        now: u64,
        most: usize,
    ) {
        if self.blocks.len() >= most {
            self.make_room_for_blocks(now, most);
        }
        let forgotten_at = block.forgotten_at(penalty);
        let (kept, _) = self.blocks.get_or_insert_with(hash, key, || Kept {
            block,
            forgotten_at,
        });
        *kept = Kept {
            block,
            forgotten_at,
        };
    }

    /// Forgets `key`'s block: an operator's unban.
    pub(super) fn lift(&mut self, (hash, key): (KeyHash, KeyRef<'_>)) -> bool {
        self.blocks.remove(hash, key).is_some()
    }

    /// Decides a call of `charge` on `key` under `algorithm` at `now`, charging it if admitted, its state carried
    /// over to the charge's terms first (a bucket's level by `carry`), and, after an upstream's pause that ends
    /// at `paused` (µs), when one is in force and the algorithm waits it out, moved by it ([`State::after_pause`],
    /// kept moved even if the call is refused); a shard holding `most` keys makes room first.
    #[inline(always)]
    fn decide_after(
        &mut self,
        (hash, key): (KeyHash, KeyRef<'_>),
        algorithm: Algorithm,
        (charge, carry): (&Terms, Option<Level>),
        now: u64,
        most: usize,
        paused: Option<u64>,
    ) -> Outcome {
        if self.entries.len() >= most {
            self.make_room(now, most);
        }
        let (entry, _) = self.entries.get_or_insert_with(hash, key, || Entry {
            state: State::new(algorithm),
            expires_at: 0,
        });
        // An expired entry starts afresh; so does one another algorithm kept under the same key (its limit's
        // algorithm changed), told.
        if entry.expires_at <= now {
            entry.state = State::new(algorithm);
        } else if entry.state.algorithm() != algorithm {
            crate::observe::started_afresh(key.prefix, algorithm);
            entry.state = State::new(algorithm);
        }
        entry.state.carry(now, charge, carry);
        if let Some(until) = paused {
            entry.state.after_pause(now, until, charge.max);
        }
        let outcome = entry.state.decide(now, charge);
        // Once the limit is back to its full quota the state says nothing a fresh one would not: the
        // in-memory twin of the key's TTL (a line a pause moved, refused or not, included). Written only when
        // it moves: a denial changes neither the state nor when it is full again (but by a pause), and a hot
        // key's slot, left unwritten, is not taken from the other cores' caches at every call.
        let expires_at = match algorithm {
            // Permits held in memory are kept until they are given back.
            Algorithm::InFlight if !entry.state.holds_nothing() => {
                crate::algorithm::in_flight::HELD
            }
            _ => now.saturating_add(outcome.reset_after),
        };
        if entry.expires_at != expires_at {
            entry.expires_at = expires_at;
        }
        outcome
    }

    /// Re-spaces `key`'s line (a leaky bucket's, of `max`) at `now` for a rate lowered `(from, to)`, if it
    /// holds one (see [`State::stretch`]); its expiry follows its reach.
    pub(super) fn stretch_line(
        &mut self,
        (hash, key): (KeyHash, KeyRef<'_>),
        now: u64,
        max: u64,
        rates: (u32, u32),
    ) {
        let Some(entry) = self.entries.get_mut(hash, key) else {
            return;
        };
        if entry.expires_at <= now {
            return;
        }
        if let Some(reach) = entry.state.stretch(now, max, rates) {
            entry.expires_at = entry.expires_at.max(now.saturating_add(reach));
        }
    }

    /// Returns the state of `key` under `algorithm` at `now`, if it holds one that has not expired.
    pub(super) fn state(
        &mut self,
        (hash, key): (KeyHash, KeyRef<'_>),
        algorithm: Algorithm,
        now: u64,
    ) -> Option<&State> {
        let entry = self.entries.get_mut(hash, key)?;
        let live = entry.expires_at > now && entry.state.algorithm() == algorithm;
        live.then_some(&entry.state)
    }

    /// Gives back `units` of what an admission of `charge` on `key` under `algorithm` charged (`receipt`),
    /// while its state lives (a state that expired, or was replaced, holds none of it). Its expiry stays: the
    /// limit is full again no later than before.
    pub(super) fn give_back(
        &mut self,
        (hash, key): (KeyHash, KeyRef<'_>),
        algorithm: Algorithm,
        charge: &Terms,
        now: u64,
        (units, receipt): (u64, &Receipt),
    ) {
        if let Some(entry) = self.entries.get_mut(hash, key) {
            if entry.expires_at > now && entry.state.algorithm() == algorithm {
                entry.state.give_back(now, charge, units, receipt);
                // The last permit given back: nothing left to keep.
                if entry.state.holds_nothing() {
                    entry.expires_at = now;
                }
            }
        }
    }

    pub(super) fn sweep(&mut self, now: u64) {
        self.entries.retain(|entry| entry.expires_at > now);
        self.entries.shrink_when_mostly_empty();
        if self.blocks.len() > 0 {
            self.blocks.retain(|kept| kept.forgotten_at > now);
            self.blocks.shrink_when_mostly_empty();
        }
    }

    /// Makes room below `most` blocks: the forgiven ones forgotten, then the eighth of `most` closest to being
    /// forgiven.
    #[cold]
    #[inline(never)]
    fn make_room_for_blocks(&mut self, now: u64, most: usize) {
        self.blocks.retain(|kept| kept.forgotten_at > now);
        let forgotten = forget_closest(&mut self.blocks, |kept| kept.forgotten_at, most);
        self.evicted += forgotten as u64;
        crate::observe::evicted(forgotten as u64);
    }

    /// Makes room below `most` keys: the expired ones forgotten, then, if that is not enough, the eighth of `most`
    /// closest to their expiry (see the module's docs).
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, now: u64, most: usize) {
        self.sweep(now);
        let forgotten = forget_closest(&mut self.entries, |entry| entry.expires_at, most);
        self.evicted += forgotten as u64;
        crate::observe::evicted(forgotten as u64);
    }
}

/// Forgets, from `keys` holding `most` or more, those closest to their end (`end`), down to `most` less an
/// eighth; says how many.
fn forget_closest<V>(keys: &mut Keys<V>, end: impl Fn(&V) -> u64, most: usize) -> usize {
    let len = keys.len();
    if len < most {
        return 0;
    }
    let forget = len - most + 1 + most / 8;
    let mut ends: Vec<u64> = keys.values().map(&end).collect();
    let last = *ends.select_nth_unstable(forget - 1).1;
    // Those before the last end forgotten, then as many at it as the count needs.
    let mut at_last = forget - ends.iter().filter(|&&at| at < last).count();
    keys.retain(|value| {
        let at = end(value);
        if at < last {
            false
        } else if at == last && at_last > 0 {
            at_last -= 1;
            false
        } else {
            true
        }
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sharded::Sharded;

    /// Checks that a shard holds at most its bound of blocks, whatever else it holds; at the bound it forgets those
    /// closest to being forgiven first (an eighth of the bound and one), keeping the ones that matter longest.
    #[test]
    fn at_its_bound_a_shard_forgets_the_blocks_closest_to_forgiven() {
        let penalty = Penalty::fixed(Duration::from_secs(1));
        let hashes: Sharded<()> = Sharded::new(1);
        let mut shard = Shard::default();
        let most = 64_u64;
        let keep = |shard: &mut Shard, name: &str, until: u64| {
            let key = KeyRef::from(name);
            let block = Block {
                until,
                offences: 1,
                banned: false,
                upstream: None,
                learned: None,
            };
            shard.keep_block((hashes.hash(key), key), block, &penalty, 0, most as usize);
        };
        // Up to the bound, in a scrambled order of their ends: all kept.
        for i in 0..most {
            let until = 1 + (i * 37) % most;
            keep(&mut shard, &format!("k{until}"), until * 1_000_000);
        }
        assert_eq!(shard.blocks.len() as u64, most);
        // One more: the nine closest to forgiven go (ends 1 to 9 s), the rest stay.
        keep(&mut shard, "late", 1_000 * 1_000_000);
        let mut kept: Vec<u64> = shard
            .blocks
            .values()
            .map(|kept| kept.block.until / 1_000_000)
            .collect();
        kept.sort_unstable();
        let expected: Vec<u64> = (10..=most).chain([1_000]).collect();
        assert_eq!(kept, expected);
        // A flood of blocks stays within the bound.
        for i in 0..10_000 {
            keep(&mut shard, &format!("flood{i}"), (2_000 + i) * 1_000_000);
            assert!(shard.blocks.len() as u64 <= most);
        }
    }
}
