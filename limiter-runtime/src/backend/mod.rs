//! Where counts live, each backend owning what it needs: this process's memory, or Redis (one global count
//! for every node) with what decides when Redis cannot.
//!
//! Both run the same algorithms on the same integers (see [`crate::algorithm`]); a backend is asked about a
//! key, an algorithm and a charge, and knows nothing of rules, overrides or HTTP.

mod memory;
pub(crate) mod redis;
mod sharded;

use std::sync::Arc;

pub(crate) use self::memory::MemoryStore;
pub(crate) use self::redis::RedisBackend;

/// The backend of one limiter.
#[derive(Debug)]
pub(crate) enum Backend {
    Memory(MemoryStore),
    /// Shared with the background tasks that keep Redis's view current (heartbeats, overrides).
    Redis(Arc<RedisBackend>),
}
