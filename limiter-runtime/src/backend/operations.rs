//! What operators ask of a backend, off the decisions' path: what it tells of itself, whether it is ready,
//! its background tasks, reading and banning keys, every node's report, the admin door's record, and the
//! changes announced to every node.

use std::sync::Arc;
use std::time::Duration;

use super::{redis, Backend};
use crate::algorithm::Peek;
use crate::call::CallLimit;
use crate::error::Error;
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
    /// Returns what this backend tells of itself.
    pub(crate) fn stats(&self) -> BackendStats {
        match self {
            Backend::Memory(memory) => BackendStats {
                degraded: 0,
                breaker_open: false,
                instances: 1,
                keys: memory.keys(),
                evicted: memory.evicted(),
                permits: 0,
            },
            Backend::Redis(redis) => BackendStats {
                degraded: redis.degraded_count(),
                breaker_open: redis.breaker_open(),
                instances: redis.fallback.instances.live(),
                keys: redis.fallback.local.keys(),
                evicted: redis.fallback.local.evicted(),
                permits: redis.permits_held(),
            },
        }
    }

    /// Checks whether this backend can be used as set up: always in memory; Redis connected, authenticated, its
    /// database selected and every decision script loaded, else what failed.
    pub(crate) async fn ready(&self) -> Result<(), Error> {
        match self {
            Backend::Memory(_) => Ok(()),
            Backend::Redis(redis) => redis.ready().await,
        }
    }

    /// Returns whether the counts are shared by every node (Redis), not this process's alone.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Backend::Redis(_))
    }

    /// Describes where the counts live, in a few words: "in memory", "Redis at redis://10.0.0.5:6379".
    pub(crate) fn describe(&self) -> String {
        match self {
            Backend::Memory(_) => "in memory".to_owned(),
            Backend::Redis(redis) => format!("Redis at {}", redis.describe()),
        }
    }
}

impl Backend {
    /// Starts what keeps a Redis backend's view current while it lives: its heartbeat (and with it this
    /// node's report of what `watch` saw), the sync of `overrides`, and the sweep of idle leases. Nothing in
    /// memory.
    pub(crate) fn start(&self, overrides: &Arc<Overrides>, watch: &Arc<Watch>) {
        if let Backend::Redis(redis) = self {
            redis::start_background(redis, Arc::downgrade(overrides), Arc::downgrade(watch));
        }
    }

    /// Reads `limit`'s key without charging it (what an operator inspects): its state, when (µs, on the
    /// store's clock), and whether this node holds a denial of it (never in memory).
    pub(crate) async fn inspect(&self, limit: &CallLimit<'_>) -> Result<(Peek, u64, bool), Error> {
        match self {
            Backend::Memory(memory) => {
                let (peek, at) = memory.peek(limit);
                Ok((peek, at, false))
            }
            Backend::Redis(redis) => redis.inspect(limit).await,
        }
    }

    /// Bans `limit`'s key for `length` µs (keeping the offences `penalty` counts): in memory at once; with
    /// Redis, one script call.
    pub(crate) async fn ban(
        &self,
        limit: &CallLimit<'_>,
        length: u64,
        penalty: &Penalty,
    ) -> Result<(), Error> {
        match self {
            Backend::Memory(memory) => {
                memory.ban(limit, length, penalty);
                Ok(())
            }
            Backend::Redis(redis) => redis.ban(limit, length, penalty).await,
        }
    }

    /// Lifts `limit`'s key's block, telling every node; whether it had one.
    pub(crate) async fn unban(&self, limit: &CallLimit<'_>) -> Result<bool, Error> {
        match self {
            Backend::Memory(memory) => Ok(memory.unban(limit)),
            Backend::Redis(redis) => redis.unban(limit).await,
        }
    }

    /// Returns every block the store holds (the store key it blocks, and the block), and when (µs, on its clock).
    pub(crate) async fn blocks(&self) -> Result<(Vec<(String, Block)>, u64), Error> {
        match self {
            Backend::Memory(memory) => Ok(memory.blocks()),
            Backend::Redis(redis) => redis.blocks().await,
        }
    }

    /// Returns `limit`'s key's block, if the store remembers one, read at `now` (µs, on the store's clock).
    pub(crate) async fn block(&self, limit: &CallLimit<'_>) -> Result<Option<Block>, Error> {
        match self {
            Backend::Memory(memory) => Ok(memory.block(limit).0),
            Backend::Redis(redis) => redis.block(limit).await,
        }
    }

    /// Returns this node's id among the nodes that report: its process id in memory (where it is alone).
    pub(crate) fn node(&self) -> String {
        match self {
            Backend::Memory(_) => std::process::id().to_string(),
            Backend::Redis(redis) => redis.fallback.instances.id().to_owned(),
        }
    }

    /// Returns every node's latest report through Redis (this one's too), and how long ago each was written; none in
    /// memory.
    pub(crate) async fn reports(&self) -> Result<Vec<(NodeReport, Duration)>, Error> {
        match self {
            Backend::Memory(_) => Ok(Vec::new()),
            Backend::Redis(redis) => redis.reports().await,
        }
    }

    /// Adds `entry` to the admin door's record of changes, keeping the newest `kept`: in Redis, where every
    /// node lists it; in memory, here.
    #[cfg(feature = "admin")]
    pub(crate) async fn record(&self, entry: &str, kept: usize) -> Result<(), Error> {
        match self {
            Backend::Memory(memory) => {
                memory.record(entry, kept);
                Ok(())
            }
            Backend::Redis(redis) => redis.record(entry, kept).await,
        }
    }

    /// Returns the newest `kept` entries of the admin door's record of changes, newest first.
    #[cfg(feature = "admin")]
    pub(crate) async fn recorded(&self, kept: usize) -> Result<Vec<String>, Error> {
        match self {
            Backend::Memory(memory) => Ok(memory.recorded(kept)),
            Backend::Redis(redis) => redis.recorded(kept).await,
        }
    }

    /// Makes an operator's `change` where every runtime sees it: in Redis, announced, with the version Redis
    /// gave it; in memory, nowhere but here (`None`).
    pub(crate) async fn publish(&self, change: &Change) -> Result<Option<u64>, Error> {
        match self {
            Backend::Memory(_) => Ok(None),
            Backend::Redis(redis) => {
                let version = redis::publish(redis, change).await?;
                if let Change::Set(o) | Change::Clear(o) = change {
                    redis.forget_denials_of(o.target_prefix(), o.target_key());
                }
                Ok(Some(version))
            }
        }
    }
}
