//! What operators ask of the in-memory store ([`Operations`]): everything here, at once.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::{self, BoxFuture};

use super::MemoryStore;
use crate::algorithm::{peek, Peek, State};
use crate::backend::operations::{BackendStats, Blocks, Operations};
use crate::call::CallLimit;
use crate::error::Error;
use crate::outbound::rate::{Move, Moved};
use crate::overrides::{Change, Overrides};
use crate::penalty::Block;
use crate::watch::{NodeReport, Watch};
use crate::Penalty;

impl Operations for MemoryStore {
    fn stats(&self) -> BackendStats {
        BackendStats {
            degraded: 0,
            breaker_open: false,
            instances: 1,
            keys: self.keys(),
            evicted: self.evicted(),
            permits: 0,
        }
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(future::ready(Ok(())))
    }

    fn describe(&self) -> String {
        "in memory".to_owned()
    }

    fn start(&self, _: &Arc<Overrides>, _: &Arc<Watch>) {}

    fn inspect<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
    ) -> BoxFuture<'a, Result<(Peek, u64, bool), Error>> {
        let (peek, at) = self.peek(limit);
        Box::pin(future::ready(Ok((peek, at, false))))
    }

    fn ban<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
        length: u64,
        penalty: &'a Penalty,
    ) -> BoxFuture<'a, Result<(), Error>> {
        MemoryStore::ban(self, limit, length, penalty);
        Box::pin(future::ready(Ok(())))
    }

    fn pause<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
        length: u64,
        status: u16,
        moved: Move,
        known: u32,
    ) -> BoxFuture<'a, Result<Moved, Error>> {
        let rate = moved.apply(known);
        let (left, at) = MemoryStore::pause(self, limit, length, status, (known, rate));
        Box::pin(future::ready(Ok(Moved {
            left,
            rate,
            from: known,
            at,
        })))
    }

    fn unban<'a>(&'a self, limit: &'a CallLimit<'_>) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(future::ready(Ok(MemoryStore::unban(self, limit))))
    }

    fn blocks(&self) -> BoxFuture<'_, Result<Blocks, Error>> {
        Box::pin(future::ready(Ok(MemoryStore::blocks(self))))
    }

    fn block<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
    ) -> BoxFuture<'a, Result<Option<Block>, Error>> {
        Box::pin(future::ready(Ok(MemoryStore::block(self, limit).0)))
    }

    fn node(&self) -> String {
        std::process::id().to_string()
    }

    fn reports(&self) -> BoxFuture<'_, Result<Vec<(NodeReport, Duration)>, Error>> {
        Box::pin(future::ready(Ok(Vec::new())))
    }

    #[cfg(feature = "admin")]
    fn record<'a>(&'a self, entry: &'a str, kept: usize) -> BoxFuture<'a, Result<(), Error>> {
        MemoryStore::record(self, entry, kept);
        Box::pin(future::ready(Ok(())))
    }

    #[cfg(feature = "admin")]
    fn recorded(&self, kept: usize) -> BoxFuture<'_, Result<Vec<String>, Error>> {
        Box::pin(future::ready(Ok(MemoryStore::recorded(self, kept))))
    }

    fn publish<'a>(&'a self, _: &'a Change) -> BoxFuture<'a, Result<Option<u64>, Error>> {
        Box::pin(future::ready(Ok(None)))
    }
}

impl MemoryStore {
    /// Returns what `limit`'s key holds now, read without charging it, and when (µs).
    pub(crate) fn peek(&self, limit: &CallLimit<'_>) -> (Peek, u64) {
        self.at_key(limit, |shard, key, now| {
            let fresh;
            let state = match shard.state(key, limit.algorithm, now) {
                Some(state) => state,
                None => {
                    fresh = State::new(limit.algorithm);
                    &fresh
                }
            };
            peek(state, now, &limit.terms)
        })
    }

    /// Bans `limit`'s key for `length` µs from now (keeping the offences `penalty` counts).
    pub(crate) fn ban(&self, limit: &CallLimit<'_>, length: u64, penalty: &Penalty) {
        self.at_key(limit, |shard, key, now| {
            let before = shard.block(key, now);
            let ban = Block::ban(before.as_ref(), now.saturating_add(length));
            shard.keep_block(key, ban, penalty, now, self.per_shard);
        });
    }

    /// Pauses `limit`'s key for `length` µs (see [`Block::pause`]), noting the rate learned, `(from, to)`
    /// (thousandths): a rate lowered re-spaces `limit`'s line (a leaky bucket's). Returns how long its block
    /// in force lasts, and when (µs). The store is this node's, which remembers the rate it learned beside
    /// its pauses (the overrides' table): a block is kept only for a pause.
    pub(crate) fn pause(
        &self,
        limit: &CallLimit<'_>,
        length: u64,
        status: u16,
        (from, to): (u32, u32),
    ) -> (u64, u64) {
        let learned = (to < crate::outbound::rate::WHOLE).then_some(to);
        self.at_key(limit, |shard, key, now| {
            if to < from && limit.algorithm == crate::Algorithm::LeakyBucket {
                shard.stretch_line(key, now, limit.terms.max, (from, to));
            }
            let before = shard.block(key, now);
            if length == 0 && before.is_none_or(|block| block.remaining(now).is_none()) {
                return 0;
            }
            let pause = Block::pause(before.as_ref(), now.saturating_add(length), status, learned);
            shard.keep_block(key, pause, &Penalty::READS_BLOCKS, now, self.per_shard);
            pause.until.saturating_sub(now)
        })
    }

    /// Lifts `limit`'s key's block; whether it had one in force.
    pub(crate) fn unban(&self, limit: &CallLimit<'_>) -> bool {
        let (in_force, _) = self.at_key(limit, |shard, key, now| {
            let block = shard.block(key, now);
            shard.lift(key);
            block.is_some_and(|block| block.remaining(now).is_some())
        });
        in_force
    }

    /// Returns `limit`'s key's block, if one is remembered, and when (µs).
    pub(crate) fn block(&self, limit: &CallLimit<'_>) -> (Option<Block>, u64) {
        self.at_key(limit, |shard, key, now| shard.block(key, now))
    }

    /// Returns every block remembered (the store key it blocks, and the block), and when (µs).
    pub(crate) fn blocks(&self) -> (Vec<(String, Block)>, u64) {
        let now = self.clock.now_micros();
        let mut blocks = Vec::new();
        for i in 0..self.shards.count() {
            let shard = self.shards.lock_shard(i);
            let kept = shard.blocks.entries();
            let live = kept.filter(|(_, kept)| kept.forgotten_at > now);
            blocks.extend(live.map(|(key, kept)| (key.to_owned(), kept.block)));
        }
        (blocks, now)
    }
}
