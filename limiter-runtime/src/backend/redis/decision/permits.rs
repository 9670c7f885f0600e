//! The permits in flight this node holds in Redis (see `scripts/algorithms/in_flight.lua`): renewed while they are held,
//! and given back when they are released.
//!
//! A permit expires in Redis `in_flight_ttl` after it was taken unless renewed, so that a node that dies gives
//! its permits back. This node renews all it holds every third of the shortest time to live among them: one
//! script call per key, all at once, whatever the number of permits (`scripts/renew.lua`). A release is sent
//! at once, by a task that takes every release waiting when it starts: releases that arrive while one is on
//! its way go together in the next, one `ZREM` per key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use std::pin::pin;

use futures_util::future::{join_all, select, Either};
use redis::aio::ConnectionLike;
use tokio::sync::{watch, Notify};

use crate::backend::redis::wire::script::{self, RENEW};
use crate::backend::redis::Connection;

/// The permits of this node, by key.
#[derive(Debug)]
pub(crate) struct Permits {
    state: Mutex<Ledger>,
    /// Wakes the renewal when a permit is held that must be renewed sooner than it planned.
    sooner: Notify,
    /// The batches of releases given back so far (numbered from 1), for a caller that waits for its own.
    given: watch::Sender<u64>,
}

impl Default for Permits {
    fn default() -> Self {
        Permits {
            state: Mutex::default(),
            sooner: Notify::new(),
            given: watch::Sender::new(0),
        }
    }
}

#[derive(Debug, Default)]
struct Ledger {
    /// Each key's permits held, and their time to live (µs).
    held: HashMap<String, KeyPermits>,
    /// Permits released, not yet given back in Redis: key and nonce.
    released: Vec<(String, u64)>,
    /// Whether a task is giving releases back.
    sending: bool,
    /// The batches of releases taken to be given back so far.
    taken: u64,
}

#[derive(Debug)]
struct KeyPermits {
    ttl: u64,
    nonces: Vec<u64>,
}

impl Permits {
    /// Waits `wait` (a minute while no permit is held), or until a permit is held that must be renewed
    /// sooner: whether it was that.
    pub(in crate::backend::redis) async fn wait_due(&self, wait: Option<Duration>) -> bool {
        /// How often it looks whether the limiter is gone while no permit is held.
        const IDLE: Duration = Duration::from_secs(60);
        let sooner = self.sooner.notified();
        let timer = tokio::time::sleep(wait.unwrap_or(IDLE));
        matches!(select(pin!(timer), pin!(sooner)).await, Either::Right(_))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds a permit taken on `key`, named `nonce`, living `ttl` µs unless renewed.
    pub(crate) fn hold(&self, key: &str, ttl: u64, nonce: u64) {
        let mut state = self.lock();
        if state.held.values().all(|held| held.ttl > ttl) {
            self.sooner.notify_one();
        }
        match state.held.get_mut(key) {
            Some(held) => {
                held.ttl = held.ttl.min(ttl);
                held.nonces.push(nonce);
            }
            None => {
                let nonces = vec![nonce];
                state
                    .held
                    .insert(key.to_owned(), KeyPermits { ttl, nonces });
            }
        }
    }

    /// Releases the permit `nonce` on `key`: no longer renewed, and given back in Redis by a task of its own,
    /// with every release that arrives meanwhile. Whether that task must be started (none is sending), and the
    /// batch the release goes in.
    #[must_use]
    fn release(&self, key: &str, nonce: u64) -> (bool, u64) {
        let mut state = self.lock();
        if let Some(held) = state.held.get_mut(key) {
            held.nonces.retain(|&n| n != nonce);
            if held.nonces.is_empty() {
                state.held.remove(key);
            }
        }
        state.released.push((key.to_owned(), nonce));
        let batch = state.taken + 1;
        (!std::mem::replace(&mut state.sending, true), batch)
    }

    /// Takes the releases waiting, by key, and their batch; `None` (and no task sending any more) when there are
    /// none.
    fn take_released(&self) -> Option<(u64, HashMap<String, Vec<u64>>)> {
        let mut state = self.lock();
        if state.released.is_empty() {
            state.sending = false;
            return None;
        }
        let mut by_key: HashMap<String, Vec<u64>> = HashMap::new();
        for (key, nonce) in state.released.drain(..) {
            by_key.entry(key).or_default().push(nonce);
        }
        state.taken += 1;
        Some((state.taken, by_key))
    }

    /// Returns what to renew now: each key's permits and their time to live; and how long until the next renewal
    /// ([`every`](Permits::every)).
    fn to_renew(&self) -> (Vec<Renewal>, Option<Duration>) {
        let state = self.lock();
        let each = state
            .held
            .iter()
            .map(|(key, held)| (key.clone(), held.ttl, held.nonces.clone()))
            .collect();
        (each, Self::every_of(&state))
    }

    /// Returns how often to renew: a third of the shortest time to live held (none when nothing is held).
    pub(in crate::backend::redis) fn every(&self) -> Option<Duration> {
        Self::every_of(&self.lock())
    }

    /// Returns [`every`](Permits::every) of `state`.
    fn every_of(state: &Ledger) -> Option<Duration> {
        let shortest = state.held.values().map(|held| held.ttl).min()?;
        Some(Duration::from_micros(shortest / 3).max(Duration::from_millis(1)))
    }

    /// Returns how many permits this node holds.
    pub(crate) fn held(&self) -> usize {
        self.lock()
            .held
            .values()
            .map(|held| held.nonces.len())
            .sum()
    }
}

/// One key's permits to renew: the store key, the time to live (µs) and the permits' marks.
type Renewal = (String, u64, Vec<u64>);

/// What the permits need of Redis: its connection, how long to wait for it, and a test's "now".
pub(crate) struct RedisAccess {
    pub(crate) connection: Connection,
    pub(crate) deadline: Duration,
    pub(crate) test_now: Option<u64>,
}

/// What `Permits` does with Redis: give back its releases and renew what it holds, within the deadline.
impl Permits {
    /// Releases the permit `nonce` on `key`: no longer renewed, and given back in Redis by a task of its own
    /// that `start` starts, unless one is sending already, with every release that arrives meanwhile. The
    /// batch it goes in, to [`wait`](Permits::given) for.
    pub(crate) fn send_release(
        self: &Arc<Self>,
        key: &str,
        nonce: u64,
        reach: impl FnOnce() -> Option<RedisAccess>,
    ) -> u64 {
        let (start, batch) = self.release(key, nonce);
        if !start {
            return batch;
        }
        // Outside a Tokio runtime the release cannot be sent: the permit expires after its time to live.
        let (Ok(runtime), Some(reach)) = (tokio::runtime::Handle::try_current(), reach()) else {
            self.lock().sending = false;
            return batch;
        };
        let permits = Arc::clone(self);
        runtime.spawn(async move {
            while let Some((batch, by_key)) = permits.take_released() {
                Permits::give_back(&reach, by_key).await;
                permits.given.send_replace(batch);
            }
        });
        batch
    }

    /// Waits until the releases of `batch` (and those before) have been given back in Redis (or failed to be), within
    /// `deadline`.
    pub(crate) async fn given(&self, batch: u64, deadline: Duration) {
        let mut given = self.given.subscribe();
        let done = given.wait_for(|&given| given >= batch);
        let _ = tokio::time::timeout(deadline, done).await;
    }

    /// Gives back `by_key`'s permits: one `ZREM` per key, all at once, within the deadline. One that fails is
    /// dropped: the permit expires after its time to live.
    async fn give_back(reach: &RedisAccess, by_key: HashMap<String, Vec<u64>>) {
        let removals = by_key.iter().map(|(key, nonces)| {
            let mut connection = reach.connection.clone();
            let mut cmd = redis::cmd("ZREM");
            cmd.arg(key);
            for &nonce in nonces {
                cmd.arg(script::nonce_text(nonce).as_str());
            }
            async move { connection.req_packed_command(&cmd).await }
        });
        let all = join_all(removals);
        if tokio::time::timeout(reach.deadline, all).await.is_err() {
            tracing::debug!("rate limiter: giving permits back timed out");
        }
    }

    /// Renews every permit held (one script call per key, all at once): how long until the next renewal (none
    /// while nothing is held).
    pub(in crate::backend::redis) async fn renew(&self, reach: RedisAccess) -> Option<Duration> {
        let (each, next) = self.to_renew();
        if each.is_empty() {
            return next;
        }
        let renewals = each.iter().map(|(key, ttl, nonces)| {
            let mut connection = reach.connection.clone();
            let mut cmd = RENEW.command(&[key], 1);
            match reach.test_now {
                Some(now) => cmd.arg(script::test_window(*ttl, now)),
                None => cmd.arg(*ttl),
            };
            for &nonce in nonces {
                cmd.arg(script::nonce_text(nonce).as_str());
            }
            async move { RENEW.run::<redis::Value>(&mut connection, &cmd).await }
        });
        let all = join_all(renewals);
        let bound = next.unwrap_or(reach.deadline);
        if tokio::time::timeout(bound, all).await.is_err() {
            tracing::debug!("rate limiter: renewing permits timed out");
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_is_sent_by_one_task_with_those_that_come_meanwhile() {
        let permits = Permits::default();
        permits.hold("k", 30_000_000, 1);
        permits.hold("k", 30_000_000, 2);
        permits.hold("j", 9_000_000, 3);
        assert_eq!(permits.held(), 3);
        // The first release starts a task; the next, while it runs, does not.
        assert_eq!(permits.release("k", 1), (true, 1));
        assert_eq!(permits.release("j", 3), (false, 1));
        let (batch, by_key) = permits.take_released().expect("two releases");
        assert_eq!(batch, 1);
        assert_eq!(by_key["k"], [1]);
        assert_eq!(by_key["j"], [3]);
        assert!(permits.take_released().is_none());
        // The task has stopped: the next release starts another, in the next batch.
        assert_eq!(permits.release("k", 2), (true, 2));
        assert_eq!(permits.held(), 0);
    }

    #[test]
    fn permits_are_renewed_every_third_of_the_shortest_time_to_live() {
        let permits = Permits::default();
        assert_eq!(permits.to_renew().1, None);
        permits.hold("k", 3_000_000, 1);
        permits.hold("j", 600_000, 2);
        let (each, next) = permits.to_renew();
        assert_eq!(next, Some(Duration::from_millis(200)));
        assert_eq!(each.len(), 2);
    }
}
