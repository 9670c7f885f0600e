//! What operators ask of the Redis store ([`Operations`]): each a read or a write of Redis within the
//! patience, or what this node knows of itself.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::background;
use super::overrides::publish;
use crate::algorithm::Peek;
use crate::backend::operations::{BackendStats, Blocks, Operations};
use crate::backend::redis::RedisBackend;
use crate::call::CallLimit;
use crate::error::Error;
use crate::outbound::rate::{Move, Moved};
use crate::overrides::{Change, Overrides};
use crate::penalty::Block;
use crate::watch::{NodeReport, Watch};
use crate::Penalty;

impl Operations for Arc<RedisBackend> {
    fn stats(&self) -> BackendStats {
        BackendStats {
            degraded: self.degraded_count(),
            breaker_open: self.breaker_open(),
            instances: self.fallback.instances.live(),
            keys: self.fallback.local.keys(),
            evicted: self.fallback.local.evicted(),
            permits: self.permits_held(),
        }
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), Error>> {
        Box::pin(RedisBackend::ready(self))
    }

    fn describe(&self) -> String {
        format!("Redis at {}", RedisBackend::describe(self))
    }

    fn start(&self, overrides: &Arc<Overrides>, watch: &Arc<Watch>) {
        background::start(self, Arc::downgrade(overrides), Arc::downgrade(watch));
    }

    fn inspect<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
    ) -> BoxFuture<'a, Result<(Peek, u64, bool), Error>> {
        Box::pin(RedisBackend::inspect(self, limit))
    }

    fn ban<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
        length: u64,
        penalty: &'a Penalty,
    ) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(RedisBackend::ban(self, limit, length, penalty))
    }

    fn pause<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
        length: u64,
        status: u16,
        moved: Move,
        _known: u32,
    ) -> BoxFuture<'a, Result<Moved, Error>> {
        Box::pin(RedisBackend::pause(self, limit, length, status, moved))
    }

    fn unban<'a>(&'a self, limit: &'a CallLimit<'_>) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(RedisBackend::unban(self, limit))
    }

    fn blocks(&self) -> BoxFuture<'_, Result<Blocks, Error>> {
        Box::pin(RedisBackend::blocks(self))
    }

    fn block<'a>(
        &'a self,
        limit: &'a CallLimit<'_>,
    ) -> BoxFuture<'a, Result<Option<Block>, Error>> {
        Box::pin(RedisBackend::block(self, limit))
    }

    fn node(&self) -> String {
        self.fallback.instances.id().to_owned()
    }

    fn reports(&self) -> BoxFuture<'_, Result<Vec<(NodeReport, Duration)>, Error>> {
        Box::pin(RedisBackend::reports(self))
    }

    #[cfg(feature = "admin")]
    fn record<'a>(&'a self, entry: &'a str, kept: usize) -> BoxFuture<'a, Result<(), Error>> {
        Box::pin(RedisBackend::record(self, entry, kept))
    }

    #[cfg(feature = "admin")]
    fn recorded(&self, kept: usize) -> BoxFuture<'_, Result<Vec<String>, Error>> {
        Box::pin(RedisBackend::recorded(self, kept))
    }

    fn publish<'a>(&'a self, change: &'a Change) -> BoxFuture<'a, Result<Option<u64>, Error>> {
        Box::pin(async move {
            let version = publish(self, change).await?;
            if let Change::Set(o) | Change::Clear(o) = change {
                self.forget_denials_of(o.target_prefix(), o.single_key());
            }
            Ok(Some(version))
        })
    }
}
