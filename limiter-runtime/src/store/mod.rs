//! Where counts live: Redis (one global count for every node) or this process's memory.
//!
//! Both stores run the same algorithms on the same integers; see [`crate::algorithm`].

pub(crate) mod connection;
pub(crate) mod memory;
pub(crate) mod redis;

pub(crate) use self::memory::MemoryStore;
pub(crate) use self::redis::RedisStore;

/// The store of one limiter.
#[derive(Debug)]
pub(crate) enum Store {
    Memory(MemoryStore),
    Redis(RedisStore),
}
