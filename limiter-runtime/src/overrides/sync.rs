//! Overrides shared through Redis: a change is written to the hash and announced on the channel in one
//! script; every runtime reloads the table when a change is announced, and every few seconds anyway (a
//! backstop for a lost message).

use std::sync::{LazyLock, Weak};
use std::time::Duration;

use futures_util::StreamExt;

use super::{Override, Overrides, Table, OVERRIDES};
use crate::backend::redis::LuaScript;
use crate::backend::RedisBackend;
use crate::error::{BackendError, Error};

/// How often a runtime reloads the overrides even without being told: a backstop for a lost message.
const BACKSTOP: Duration = Duration::from_secs(5);
/// The bound on an operator's change (an override) reaching Redis.
const CHANGE_DEADLINE: Duration = Duration::from_secs(5);

static CHANGE: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../scripts/overrides.lua")));

/// Sets (`set`) or clears `change` in Redis and announces it, within [`CHANGE_DEADLINE`].
pub(crate) async fn publish(
    redis: &RedisBackend,
    change: &Override,
    set: bool,
) -> Result<(), Error> {
    let mut connection = redis.connection().map_err(change_failed)?;
    let op = if set { "set" } else { "clear" };
    let args = (op, change.field(), change.value(), OVERRIDES);
    tokio::time::timeout(
        CHANGE_DEADLINE,
        CHANGE.invoke::<i64>(&mut connection, OVERRIDES, args),
    )
    .await
    .map_err(|_| Error::Timeout(CHANGE_DEADLINE))?
    .map_err(Error::Redis)?;
    Ok(())
}

fn change_failed(error: BackendError) -> Error {
    match error {
        BackendError::Redis(error) => Error::Redis(error),
        BackendError::Timeout(deadline) => Error::Timeout(deadline),
        BackendError::Reply(reply) => Error::Redis(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "unexpected reply",
            reply,
        ))),
    }
}

/// Keeps `overrides` in step with Redis while the limiter lives: subscribes to the channel, reloads the table
/// whenever a change is announced, and every few seconds anyway.
pub(crate) fn spawn(overrides: Weak<Overrides>, redis: Weak<RedisBackend>) {
    tokio::spawn(async move {
        for attempt in 0.. {
            let subscribed = match redis.upgrade() {
                None => return,
                Some(redis) => redis.pubsub(attempt).await.ok(),
            };
            let Some(mut pubsub) = subscribed else {
                if !reload(&overrides, &redis).await {
                    return;
                }
                tokio::time::sleep(BACKSTOP).await;
                continue;
            };
            if pubsub.subscribe(OVERRIDES).await.is_err() {
                tokio::time::sleep(BACKSTOP).await;
                continue;
            }
            // Loaded after subscribing, so that no change falls between the two.
            if !reload(&overrides, &redis).await {
                return;
            }
            let mut changes = pubsub.on_message();
            // Until the subscription's connection is gone (then subscribe again): reload when a change is
            // announced, or when it is time to look anyway.
            while let Ok(Some(_)) | Err(_) = tokio::time::timeout(BACKSTOP, changes.next()).await {
                if !reload(&overrides, &redis).await {
                    return;
                }
            }
        }
    });
}

/// Loads every override from Redis; `false` once the limiter is gone.
async fn reload(overrides: &Weak<Overrides>, redis: &Weak<RedisBackend>) -> bool {
    let (Some(overrides), Some(redis)) = (overrides.upgrade(), redis.upgrade()) else {
        return false;
    };
    if redis.breaker_open() || !overrides.is_enabled() {
        return true;
    }
    let Ok(mut connection) = redis.connection() else {
        return true;
    };
    let mut read = redis::cmd("HGETALL");
    read.arg(OVERRIDES);
    let fields = read.query_async::<Vec<(String, String)>>(&mut connection);
    match tokio::time::timeout(CHANGE_DEADLINE, fields).await {
        Ok(Ok(fields)) => {
            let table = Table::from_overrides(fields.iter().filter_map(|(field, value)| {
                let parsed = Override::parse(field, value);
                if parsed.is_none() {
                    tracing::warn!(
                        field,
                        value,
                        "rate limiter: ignoring an override this version cannot read"
                    );
                }
                parsed
            }));
            if overrides.replace(table) {
                redis.forget_denials();
            }
        }
        Ok(Err(error)) => tracing::debug!(%error, "rate limiter: could not load the overrides"),
        Err(_) => tracing::debug!("rate limiter: loading the overrides timed out"),
    }
    true
}
