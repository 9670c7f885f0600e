//! Where counts live: Redis (one global count for every node) or this process's memory.
//!
//! Both stores run the same algorithms on the same integers; see [`crate::algorithm`].

pub(crate) mod memory;
pub(crate) mod redis;

use crate::algorithm::{Algorithm, Outcome, Request};
use crate::error::BackendError;

pub(crate) use self::memory::MemoryStore;
pub(crate) use self::redis::RedisStore;

/// The store of one limiter.
#[derive(Debug)]
pub(crate) enum Store {
    Memory(MemoryStore),
    Redis(RedisStore),
}

impl Store {
    /// Decides one call against the count kept under `key`, and says when, on the store's clock (µs).
    pub(crate) async fn decide(
        &self,
        algorithm: Algorithm,
        key: &str,
        request: &Request,
    ) -> Result<(Outcome, u64), BackendError> {
        match self {
            Store::Memory(store) => Ok(store.decide(algorithm, key, request)),
            Store::Redis(store) => store.decide(algorithm, key, request).await,
        }
    }

    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Store::Memory(_) => "in-memory",
            Store::Redis(_) => "Redis",
        }
    }
}
