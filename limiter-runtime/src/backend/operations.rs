//! What operators ask of a store, off the decisions' path ([`Operations`]): what it tells of itself, whether
//! it is ready, its background tasks, reading and banning keys, every node's report, the admin door's record,
//! and the changes announced to every node. Each store implements it in its own folder; its futures are boxed,
//! as nothing here is on a decision's path.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::Backend;
use crate::algorithm::Peek;
use crate::call::CallLimit;
use crate::error::Error;
use crate::outbound::rate::{Move, Moved};
use crate::overrides::{Change, Overrides};
use crate::penalty::Block;
use crate::watch::{NodeReport, Watch};
use crate::Penalty;

/// What a backend tells of itself: [`Limiter::stats`](crate::Limiter::stats) adds what the pipeline counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BackendStats {
    /// Decisions made in degraded mode since start (none in memory).
    pub(crate) degraded: u64,
    /// Whether the breaker is open (never in memory).
    pub(crate) breaker_open: bool,
    /// Runtimes last seen sharing this Redis, this one included (1 in memory).
    pub(crate) instances: u64,
    /// Keys held in this process's memory: the store's, or the `local` fallback's.
    pub(crate) keys: u64,
    /// Keys this process's memory forgot before their expiry.
    pub(crate) evicted: u64,
    /// Permits in flight this process holds in Redis (none in memory).
    pub(crate) permits: u64,
}

impl Backend {
    /// Returns what operators ask of this backend's store.
    pub(crate) fn operations(&self) -> &dyn Operations {
        match self {
            Backend::Memory(memory) => memory,
            Backend::Redis(redis) => redis,
        }
    }

    /// Returns whether the counts are shared by every node (Redis), not this process's alone.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Backend::Redis(_))
    }
}

/// Every block a store holds (the store key it blocks, and the block), and when (µs, on its clock).
pub(crate) type Blocks = (Vec<(String, Block)>, u64);

/// What operators ask of a store (see the [module](self)).
pub(crate) trait Operations: Send + Sync {
    /// Returns what this store tells of itself.
    fn stats(&self) -> BackendStats;

    /// Checks whether this store can be used as set up: always in memory; Redis connected, authenticated, its
    /// database selected and every decision script loaded, else what failed.
    fn ready(&self) -> BoxFuture<'_, Result<(), Error>>;

    /// Describes where the counts live, in a few words: "in memory", "Redis at redis://10.0.0.5:6379".
    fn describe(&self) -> String;

    /// Starts what keeps a Redis store's view current while it lives: its heartbeat (and with it this node's
    /// report of what `watch` saw), the sync of `overrides`, and the sweep of idle leases. Nothing in memory.
    fn start(&self, overrides: &Arc<Overrides>, watch: &Arc<Watch>);

    /// Reads `limit`'s key without charging it (what an operator inspects): its state, when (µs, on the
    /// store's clock), and whether this node holds a denial of it (never in memory).
    fn inspect<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
    ) -> BoxFuture<'a, Result<(Peek, u64, bool), Error>>;

    /// Bans `limit`'s key for `length` µs (keeping the offences `penalty` counts): in memory at once; with
    /// Redis, one script call.
    fn ban<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
        length: u64,
        penalty: &'a Penalty,
    ) -> BoxFuture<'a, Result<(), Error>>;

    /// Pauses `limit`'s key for `length` µs (none for 0), as an upstream that answered `status` asked (unless
    /// its block in force ends later), and moves the rate the fleet learned for it by `moved` (in memory, from
    /// `known`, this node's); a rate lowered re-spaces `limit`'s line (a leaky bucket's) from now. Tells every
    /// node: in memory at once; with Redis, one script call and its announcement.
    fn pause<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
        length: u64,
        status: u16,
        moved: Move,
        known: u32,
    ) -> BoxFuture<'a, Result<Moved, Error>>;

    /// Lifts `limit`'s key's block, telling every node; returns whether it had one.
    fn unban<'a>(&'a self, limit: &'a CallLimit<'_>) -> BoxFuture<'a, Result<bool, Error>>;

    /// Returns every block the store holds (the store key it blocks, and the block), and when (µs, on its
    /// clock).
    fn blocks(&self) -> BoxFuture<'_, Result<Blocks, Error>>;

    /// Returns `limit`'s key's block, if the store remembers one.
    fn block<'a>(&'a self, limit: &'a CallLimit<'_>)
        -> BoxFuture<'a, Result<Option<Block>, Error>>;

    /// Returns this node's id among the nodes that report: its process id in memory (where it is alone).
    fn node(&self) -> String;

    /// Returns every node's latest report through Redis (this one's too), and how long ago each was written;
    /// none in memory.
    fn reports(&self) -> BoxFuture<'_, Result<Vec<(NodeReport, Duration)>, Error>>;

    /// Adds `entry` to the admin door's record of changes, keeping the newest `kept`: in Redis, where every
    /// node lists it; in memory, here.
    #[cfg(feature = "admin")]
    fn record<'a>(&'a self, entry: &'a str, kept: usize) -> BoxFuture<'a, Result<(), Error>>;

    /// Returns the newest `kept` entries of the admin door's record of changes, newest first.
    #[cfg(feature = "admin")]
    fn recorded(&self, kept: usize) -> BoxFuture<'_, Result<Vec<String>, Error>>;

    /// Makes an operator's `change` where every runtime sees it: in Redis, announced, with the version Redis
    /// gave it; in memory, nowhere but here (`None`).
    fn publish<'a>(&'a self, change: &'a Change) -> BoxFuture<'a, Result<Option<u64>, Error>>;
}
