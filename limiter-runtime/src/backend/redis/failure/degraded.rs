//! Degraded mode: what decides a call when Redis cannot (it failed, missed the deadline, or the breaker is
//! open), by each limit's [`OnError`]: `open` admits, `closed` rejects, `local` decides in this process with
//! this node's share of the limit. A call is still one decision: a `closed` limit that vetoes rejects it, and
//! then nothing is charged; `local` limits are charged together or not at all.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::breaker::Transition;
use super::instances::Instances;
use crate::algorithm::{Outcome, Terms};
use crate::backend::MemoryStore;
use crate::call::{Call, CallLimit, Charged, LimitRuling, OneOrMany, Ruling};
use crate::clock::as_micros;
use crate::error::BackendError;
use crate::observe::Notice;
use crate::OnError;

/// How long the `local` fallback's state is kept once Redis decides again: its counts bridge a Redis that
/// flaps (fails again at once), and go once Redis has decided for this long.
const LOCAL_KEPT: Duration = Duration::from_secs(60);

/// What decides while Redis cannot: the failure policies, and the in-process limiter of `on_error = local`.
#[derive(Debug)]
pub(crate) struct Fallback {
    /// The in-process limiter of `on_error = local` (on this process's clock).
    pub(crate) local: MemoryStore,
    pub(crate) instances: Instances,
    /// Calls decided in degraded mode.
    degraded: AtomicU64,
    /// When Redis last decided again after failing (µs on this process's clock; 0: not since the local
    /// state was last forgotten).
    recovered_at: AtomicU64,
    /// When a fault of a call's own keys is next to be logged: at most once a minute.
    key_faults: Notice,
    /// Faults of calls' own keys since the last one logged.
    key_faults_since: AtomicU64,
}

/// Returns a node's share of a limit of `max` shared by `instances` runtimes: `ceil(max / instances)`.
fn share(max: u64, instances: u64) -> u64 {
    max.div_ceil(instances.max(1))
}

impl Fallback {
    pub(crate) fn new(local: MemoryStore, instances: Instances) -> Fallback {
        Fallback {
            local,
            instances,
            degraded: AtomicU64::new(0),
            recovered_at: AtomicU64::new(0),
            key_faults: Notice::default(),
            key_faults_since: AtomicU64::new(0),
        }
    }

    /// Logs a fault of a call's own keys (see [`BackendError::is_the_keys`]), at warn level at most once a
    /// minute, with the key, the cause and how many such faults there were since the last line: a client
    /// that chooses a bad key at will fills no log.
    pub(in crate::backend::redis) fn log_key_fault(&self, key: &str, cause: &BackendError) {
        let since = self.key_faults_since.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.key_faults.due() {
            tracing::debug!(key, %cause, "rate limiter: a key's own fault; decided by its on_error");
            return;
        }
        self.key_faults_since.fetch_sub(since, Ordering::Relaxed);
        tracing::warn!(
            key,
            %cause,
            faults = since,
            "rate limiter: Redis refused this key's decision (a fault of the key, not of Redis); each such call \
             is decided by its on_error, and Redis keeps deciding every other key (told at most once a minute; \
             `faults` counts them since the last time)",
        );
    }

    /// Counts the decisions made in degraded mode so far (calls).
    pub(crate) fn count(&self) -> u64 {
        self.degraded.load(Ordering::Relaxed)
    }

    /// Returns this node's share of `limit`'s charge, among the runtimes last seen sharing it: what the call must
    /// leave free is shared alike, so the share keeps the limit's proportions.
    fn local(&self, limit: &CallLimit<'_>) -> Terms {
        let instances = self.instances.live();
        Terms {
            max: share(limit.terms.max, instances),
            burst: share(limit.terms.burst, instances),
            kept: share(limit.terms.kept, instances),
            ..limit.terms
        }
    }

    /// Decides `call` without Redis, by each limit's [`OnError`] policy (counted); a refusal of `closed`
    /// says to retry after `retry` (when Redis is next asked).
    pub(crate) fn decide(&self, call: &Call<'_>, retry: Duration) -> Ruling {
        self.degraded.fetch_add(1, Ordering::Relaxed);
        let now = self.local.clock().now_micros();
        let limits = call.limits();
        let closes = limits.iter().any(|limit| {
            limit.preset.is_none() && limit.vetoes && limit.on_error == OnError::Closed
        });
        // The local limits decide together (unless a closed one refuses the call anyway): as one call.
        let locally = !closes
            && limits
                .iter()
                .any(|l| l.preset.is_none() && l.on_error == OnError::Local);
        let outcomes = match locally {
            true => Some(self.local.decide(call, |limit| match limit.on_error {
                OnError::Local => self.local(limit),
                // Decided below, not here: nothing is charged to it.
                _ => Terms {
                    cost: 0,
                    ..limit.terms
                },
            })),
            false => None,
        };
        let answers: OneOrMany<LimitRuling> = limits
            .iter()
            .enumerate()
            .map(|(i, limit)| {
                let (charge, outcome, charged) = match (limit.preset, limit.on_error) {
                    (Some(preset), _) => {
                        let outcome = preset.outcome(&limit.terms);
                        return LimitRuling::uncharged(limit.decision(
                            &limit.terms,
                            outcome,
                            now,
                            false,
                        ));
                    }
                    (None, OnError::Open) => (limit.terms, Outcome::admit(limit.terms.max), false),
                    (None, OnError::Closed) => {
                        let outcome = Outcome::denied(0, as_micros(retry), 0);
                        (limit.terms, outcome, false)
                    }
                    (None, OnError::Local) => match &outcomes {
                        Some((outcomes, _)) => (self.local(limit), outcomes[i], true),
                        None => {
                            let charge = self.local(limit);
                            (charge, Outcome::admit(charge.max), false)
                        }
                    },
                };
                LimitRuling {
                    decision: limit.decision(&charge, outcome, now, true),
                    receipt: outcome.receipt,
                    charged: match charged && outcome.allowed {
                        true => Charged::Local,
                        false => Charged::Nothing,
                    },
                }
            })
            .collect();
        let admitted = call.admits(|i| answers[i].decision.allowed);
        let mut answers = answers;
        if !admitted {
            // Another limit denied the call: what it charged here goes back at once.
            for (limit, answer) in limits.iter().zip(answers.iter_mut()) {
                if answer.charged == Charged::Local {
                    let charge = self.local(limit);
                    self.local
                        .give_back(limit, &charge, charge.cost, &answer.receipt);
                    answer.decision.remaining += charge.cost;
                    answer.charged = Charged::Nothing;
                }
            }
        }
        Ruling {
            limits: answers,
            admitted,
        }
    }

    /// Gives back `units` of what a degraded `on_error = local` decision charged this process.
    pub(crate) fn give_back(&self, limit: &CallLimit<'_>, units: u64, answer: &LimitRuling) {
        self.local
            .give_back(limit, &self.local(limit), units, &answer.receipt);
    }

    /// Tells the fallback Redis decided again after failing: the local state is kept a while, then forgotten.
    pub(crate) fn recovered(&self) {
        let now = self.local.clock().now_micros().max(1);
        self.recovered_at.store(now, Ordering::Relaxed);
    }

    /// Gives back the memory of the `local` fallback: keys whose limit is full again at once, and every key
    /// once Redis has decided again for [`LOCAL_KEPT`] (unless it is `failing` again). The heartbeat calls it
    /// on each beat.
    pub(crate) fn tidy(&self, failing: bool) {
        if self.local.keys() == 0 {
            return;
        }
        self.local.sweep();
        let since = self.recovered_at.load(Ordering::Relaxed);
        let now = self.local.clock().now_micros();
        if since != 0 && !failing && now.saturating_sub(since) >= as_micros(LOCAL_KEPT) {
            self.local.clear();
            self.recovered_at.store(0, Ordering::Relaxed);
        }
    }
}

/// Logs a failure: the first after a healthy period at warn level (with the call's key, the cause and the
/// policy deciding meanwhile), the rest at debug.
pub(in crate::backend::redis) fn log_failure(
    key: &str,
    on_error: impl Iterator<Item = OnError>,
    cause: &BackendError,
    transition: Transition,
) {
    if transition != Transition::FirstFailure {
        tracing::debug!(key, %cause, "rate limiter: Redis failed");
        return;
    }
    let mut on_error = on_error.peekable();
    let first = on_error.peek().copied().unwrap_or_default();
    if on_error.all(|other| other == first) {
        tracing::warn!(
            key,
            %cause,
            on_error = %first,
            "rate limiter: Redis failed; deciding in degraded mode until it answers again (fail {first})",
        );
    } else {
        tracing::warn!(
            key,
            %cause,
            "rate limiter: Redis failed; deciding in degraded mode until it answers again (each limit by its \
             own on_error)",
        );
    }
}
