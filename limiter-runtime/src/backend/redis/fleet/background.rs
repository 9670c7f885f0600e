//! The Redis backend's background tasks, all of them: what keeps a node's view of Redis current while its
//! limiter lives. Each holds the limiter only weakly between its rounds, and ends once the limiter is gone.
//!
//! - the heartbeat, every [`heartbeat_every`](crate::LimiterBuilder::heartbeat_every): this node counted among
//!   the live instances, its report for the operators' views, and the `local` fallback tidied;
//! - the overrides' sync: subscribed to their channel, each announced change applied, the version read
//!   every few seconds as a backstop;
//! - the lease sweep: what is left of leases that ran out of time given back;
//! - the permits' renewal: permits in flight this node holds renewed every third of their time to live.
//!
//! (A decision's own tasks, a batch sent or a late answer reconciled, belong to the decision.)

use std::sync::{Arc, Weak};

use futures_util::StreamExt;

use super::overrides::{follow, reload, Event, BACKSTOP};
use crate::backend::redis::sparing::lease::SWEEP_EVERY;
use crate::backend::redis::RedisBackend;
use crate::overrides::{Overrides, OVERRIDES};
use crate::watch::Watch;

/// Starts every background task of `redis`.
pub(crate) fn start(redis: &Arc<RedisBackend>, overrides: Weak<Overrides>, watch: Weak<Watch>) {
    let weak = Arc::downgrade(redis);
    tokio::spawn(heartbeat(weak.clone(), overrides.clone(), watch));
    tokio::spawn(overrides_sync(overrides, weak.clone()));
    tokio::spawn(lease_sweep(weak.clone()));
    tokio::spawn(permit_renewal(weak));
}

/// Beats while the limiter lives: then tidies the `local` fallback, and sleeps till the next beat.
async fn heartbeat(redis: Weak<RedisBackend>, overrides: Weak<Overrides>, watch: Weak<Watch>) {
    loop {
        let (Some(redis), Some(overrides), Some(watch)) =
            (redis.upgrade(), overrides.upgrade(), watch.upgrade())
        else {
            return;
        };
        beat(&redis, &overrides, &watch).await;
        redis.tidy_local();
        let every = redis.fallback.instances.every;
        drop((redis, overrides, watch));
        tokio::time::sleep(every).await;
    }
}

/// Renews this runtime's heartbeat, and with it this runtime's report of what it has seen (`watch`), for the
/// operators' views: while Redis is healthy and limiting is on here, within the backend's patience.
async fn beat(redis: &RedisBackend, overrides: &Overrides, watch: &Watch) {
    if redis.breaker_open() || !overrides.is_enabled_here() {
        return;
    }
    let Ok(mut connection) = redis.connection() else {
        return;
    };
    let instances = &redis.fallback.instances;
    let report = watch
        .node_report(
            instances.id().to_owned(),
            redis.breaker_open(),
            redis.degraded_count(),
            overrides.is_enabled(),
        )
        .encode();
    let beat = instances.beat(&mut connection, Some(&report));
    match tokio::time::timeout(redis.patience(), beat).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => tracing::debug!(%error, "rate limiter: heartbeat failed"),
        Err(_) => tracing::debug!("rate limiter: heartbeat timed out"),
    }
}

/// Keeps `overrides` in step with Redis: subscribes to the channel, loads the whole table, then applies each
/// change as it is announced; subscribes again when the subscription's connection is gone.
async fn overrides_sync(overrides: Weak<Overrides>, redis: Weak<RedisBackend>) {
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
        let mut messages = pubsub.on_message();
        loop {
            let event = match tokio::time::timeout(BACKSTOP, messages.next()).await {
                Ok(Some(message)) => Event::Message(message),
                Ok(None) => break,
                Err(_) => Event::Quiet,
            };
            if !follow(&overrides, &redis, event).await {
                return;
            }
        }
    }
}

/// Gives back, every [`SWEEP_EVERY`], what is left of the leases that ran out of time.
async fn lease_sweep(redis: Weak<RedisBackend>) {
    let mut every = tokio::time::interval(SWEEP_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let Some(redis) = redis.upgrade() else { return };
        redis.return_expired_leases().await;
        drop::<Arc<RedisBackend>>(redis);
    }
}

/// Renews the permits in flight every third of their shortest time to live, and waits, holding the limiter
/// only weakly, while none is held.
async fn permit_renewal(redis: Weak<RedisBackend>) {
    let Some(permits) = redis.upgrade().map(|redis| Arc::clone(&redis.permits)) else {
        return;
    };
    let mut wait = None;
    loop {
        let sooner = permits.wait_due(wait).await;
        let Some(redis) = redis.upgrade() else { return };
        wait = match (sooner, redis.reach()) {
            // A permit to renew sooner than planned: the timer starts again, from its time to live.
            (true, _) | (false, None) => permits.every(),
            (false, Some(reach)) => permits.renew(reach).await,
        };
    }
}
