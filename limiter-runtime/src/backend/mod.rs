//! Where counts live, each backend owning what it needs: this process's memory, or Redis (one global count for
//! every node) with what decides when Redis cannot.
//!
//! Both run the same algorithms on the same integers (see [`crate::algorithm`]) and answer the pipeline the
//! same few questions about a [`Call`]: decide it now if this process can ([`Backend::decide_now`]: always
//! in memory), else later ([`Backend::decide_later`]: a Redis round trip), and give back what an admitted
//! call charged ([`Backend::give_back`]). A backend knows the call, not the rules' defaults, the overrides or
//! HTTP.

pub(crate) mod memory;
pub(crate) mod redis;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::algorithm::Peek;
use crate::call::{Answer, Call, CallLimit, Decided};
use crate::error::Error;
use crate::overrides::{Change, Overrides};
use crate::penalty::Block;
use crate::watch::{NodeReport, Watch};
use crate::Penalty;

pub(crate) use self::memory::{MemoryStore, DEFAULT_MAX_KEYS};
pub(crate) use self::redis::{Batched, Later, RedisBackend};

/// The backend of one limiter.
#[derive(Debug)]
pub(crate) enum Backend {
    Memory(MemoryStore),
    /// Shared with the background tasks that keep Redis's view current (heartbeats, overrides).
    Redis(Arc<RedisBackend>),
}

impl Backend {
    /// Decides `call` now if this process can: in memory, always; with Redis, from a lease, a denial Redis
    /// already gave, or the breaker open. Else what Redis is to decide ([`decide_later`](Backend::decide_later)).
    #[inline(always)]
    pub(crate) fn decide_now(&self, call: &Call<'_>) -> Result<Decided, Later> {
        match self {
            Backend::Memory(memory) => {
                let (outcomes, at) = memory.decide(call, |limit| limit.charge);
                let admitted = call.admits(|i| outcomes[i].allowed);
                let answers = call
                    .limits()
                    .iter()
                    .zip(outcomes.iter())
                    .map(|(limit, outcome)| Answer::of(limit, *outcome, at, admitted))
                    .collect();
                Ok(Decided { answers, admitted })
            }
            Backend::Redis(redis) => redis.decide_now(call),
        }
    }

    /// Decides what [`decide_now`](Backend::decide_now) left to Redis: within the deadline, else by each
    /// limit's failure policy.
    #[inline(always)]
    pub(crate) fn decide_later<'a>(
        call: &'a Call<'_>,
        later: Later,
    ) -> impl Future<Output = Decided> + Send + 'a {
        RedisBackend::decide_later(call, later)
    }

    /// Gives back `units[i]` of what each limit `i` of an admitted `call` charged (as `decided` says): exactly,
    /// in any order, unless a charge has left its limit already (then nothing), never more. In memory at once;
    /// with Redis, one script call to await.
    pub(crate) fn give_back<'a>(
        &'a self,
        call: &'a Call<'a>,
        decided: &'a Decided,
        units: &'a [u64],
    ) -> GivingBack<'a> {
        match self {
            Backend::Memory(memory) => {
                let given = call.limits().iter().zip(decided.answers.iter()).zip(units);
                for ((limit, answer), &units) in given {
                    // Nothing to give back (a permit in flight given back is one of any units).
                    if answer.charged != crate::call::Charged::Nothing && units > 0 {
                        let units = units.min(limit.charge.cost);
                        memory.give_back(limit, &limit.charge, units, &answer.receipt);
                    }
                }
                GivingBack(None)
            }
            Backend::Redis(redis) => {
                GivingBack(Some(Box::pin(redis.give_back(call, decided, units))))
            }
        }
    }
}

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
    /// What this backend tells of itself.
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

    /// Whether this backend can be used as set up: always in memory; Redis connected, authenticated, its
    /// database selected and every decision script loaded, else what failed.
    pub(crate) async fn ready(&self) -> Result<(), Error> {
        match self {
            Backend::Memory(_) => Ok(()),
            Backend::Redis(redis) => redis.ready().await,
        }
    }

    /// Whether the counts are shared by every node (Redis), not this process's alone.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Backend::Redis(_))
    }

    /// Where the counts live, in a few words: "in memory", "Redis at redis://10.0.0.5:6379".
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

    /// Every block the store holds (the store key it blocks, and the block), and when (µs, on its clock).
    pub(crate) async fn blocks(&self) -> Result<(Vec<(String, Block)>, u64), Error> {
        match self {
            Backend::Memory(memory) => Ok(memory.blocks()),
            Backend::Redis(redis) => redis.blocks().await,
        }
    }

    /// `limit`'s key's block, if the store remembers one, read at `now` (µs, on the store's clock).
    pub(crate) async fn block(&self, limit: &CallLimit<'_>) -> Result<Option<Block>, Error> {
        match self {
            Backend::Memory(memory) => Ok(memory.block(limit).0),
            Backend::Redis(redis) => redis.block(limit).await,
        }
    }

    /// This node's id among the nodes that report: its process id in memory (where it is alone).
    pub(crate) fn node(&self) -> String {
        match self {
            Backend::Memory(_) => std::process::id().to_string(),
            Backend::Redis(redis) => redis.fallback.instances.id().to_owned(),
        }
    }

    /// Every node's latest report through Redis (this one's too), and how long ago each was written; none in
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

    /// The newest `kept` entries of the admin door's record of changes, newest first.
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

/// What [`Backend::give_back`] has left to await: nothing in memory, the script call with Redis.
#[must_use = "a charge is given back in Redis only when this is awaited"]
pub(crate) struct GivingBack<'a>(Option<Pin<Box<dyn Future<Output = ()> + Send + 'a>>>);

impl Future for GivingBack<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.0 {
            None => Poll::Ready(()),
            Some(giving) => giving.as_mut().poll(cx),
        }
    }
}
