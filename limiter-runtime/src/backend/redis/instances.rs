//! How many runtimes share this Redis: each keeps a heartbeat in its group's set while Redis is healthy, and
//! remembers the last count, which `on_error = local` divides limits by while Redis is down.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::script::LuaScript;
use super::RedisBackend;
use crate::overrides::Overrides;

static HEARTBEAT: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../../scripts/instances.lua")));

#[derive(Debug)]
pub(crate) struct Instances {
    /// The group's sorted set of live instances.
    key: String,
    /// This runtime's member in it.
    id: String,
    pub(crate) every: Duration,
    /// The number of live instances last seen (this one included).
    live: AtomicU64,
}

impl Instances {
    pub(crate) fn new(group: &str, every: Duration) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let salt = std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), nanos);
        Instances {
            key: format!("limiter:instances:{group}"),
            id: format!("{}-{:x}", std::process::id(), salt),
            every,
            live: AtomicU64::new(1),
        }
    }

    pub(crate) fn live(&self) -> u64 {
        self.live.load(Ordering::Relaxed).max(1)
    }

    /// One heartbeat: renew this runtime's entry, forget expired ones, and learn the count.
    pub(crate) async fn beat<C: redis::aio::ConnectionLike>(
        &self,
        connection: &mut C,
    ) -> redis::RedisResult<u64> {
        // An entry outlives three missed heartbeats.
        let lifetime = u64::try_from((3 * self.every).as_micros()).unwrap_or(u64::MAX);
        let live: u64 = HEARTBEAT
            .invoke(connection, &self.key, (&self.id, lifetime))
            .await?;
        self.live.store(live.max(1), Ordering::Relaxed);
        Ok(live)
    }
}

/// Renews this runtime's heartbeat while Redis is healthy and limiting on, as long as the limiter lives.
pub(crate) fn spawn_heartbeat(redis: Weak<RedisBackend>, overrides: Weak<Overrides>) {
    tokio::spawn(async move {
        loop {
            let (Some(redis), Some(overrides)) = (redis.upgrade(), overrides.upgrade()) else {
                return;
            };
            if !redis.breaker_open() && overrides.is_enabled_here() {
                if let Ok(mut connection) = redis.connection() {
                    let beat = redis.fallback.instances.beat(&mut connection);
                    match tokio::time::timeout(redis.deadline(), beat).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(error)) => tracing::debug!(%error, "rate limiter: heartbeat failed"),
                        Err(_) => tracing::debug!("rate limiter: heartbeat timed out"),
                    }
                }
            }
            redis.tidy_local();
            let every = redis.fallback.instances.every;
            drop((redis, overrides));
            tokio::time::sleep(every).await;
        }
    });
}
