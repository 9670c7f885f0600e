//! Degraded mode: what decides a call when Redis cannot (it failed, missed the deadline, or the breaker is
//! open), by each limit's [`OnError`]: `open` admits, `closed` rejects, `local` decides in this process with
//! this node's share of the limit. A call is still one decision: a `closed` limit that vetoes rejects it, and
//! then nothing is charged; `local` limits are charged together or not at all.

use std::sync::atomic::Ordering;

use super::breaker::Transition;
use super::RedisBackend;
use crate::algorithm::{Charge, Outcome};
use crate::backend::{admitted, Answer, Ask, Charged};
use crate::clock::as_micros;
use crate::error::BackendError;
use crate::rule::share;
use crate::{Decision, OnError};

impl RedisBackend {
    /// Decisions made in degraded mode so far (calls).
    pub(crate) fn degraded_count(&self) -> u64 {
        self.degraded.load(Ordering::Relaxed)
    }

    /// A call decided without Redis, by each limit's [`OnError`] policy (counted).
    pub(super) fn degraded<const N: usize>(&self, asks: &[Ask<'_>; N]) -> [Answer; N] {
        self.degraded.fetch_add(1, Ordering::Relaxed);
        let now = self.clock.now_micros();
        let closes = asks
            .iter()
            .any(|ask| ask.preset.is_none() && ask.vetoes && ask.on_error == OnError::Closed);
        // This node's share of each local limit, among the runtimes last seen sharing it.
        let instances = self.instances.live();
        let local = |charge: &Charge| Charge {
            max: share(charge.max, instances),
            burst: share(charge.burst, instances),
            ..*charge
        };
        let mut answers = asks.each_ref().map(|ask| {
            let (charge, outcome) = match (ask.preset, ask.on_error) {
                (Some(preset), _) => {
                    let outcome = preset.outcome(&ask.charge);
                    return Answer::uncharged(Decision::new(&ask.charge, outcome, now, false));
                }
                (None, OnError::Open) => (ask.charge, Outcome::admit(ask.charge.max)),
                (None, OnError::Closed) => {
                    let retry_after = as_micros(self.breaker.probe_every());
                    (ask.charge, Outcome::denied(0, retry_after, 0))
                }
                (None, OnError::Local) if closes => {
                    (local(&ask.charge), Outcome::admit(local(&ask.charge).max))
                }
                (None, OnError::Local) => {
                    let charge = local(&ask.charge);
                    let ([outcome], _) = self.local.decide(&[Ask { charge, ..*ask }]);
                    (charge, outcome)
                }
            };
            Answer {
                decision: Decision::new(&charge, outcome, now, true),
                receipt: outcome.receipt,
                charged: Charged::Local,
            }
        });
        let call_admitted = admitted(asks, |i| answers[i].decision.allowed);
        for (ask, answer) in asks.iter().zip(&mut answers) {
            let charged_here = ask.preset.is_none() && ask.on_error == OnError::Local && !closes;
            if !charged_here || !answer.decision.allowed {
                answer.charged = Charged::Nothing;
            } else if !call_admitted {
                // Another limit denied the call: what it charged here goes back at once.
                let charge = local(&ask.charge);
                self.local
                    .refund(&Ask { charge, ..*ask }, charge.cost, &answer.receipt);
                answer.decision.remaining += charge.cost;
                answer.charged = Charged::Nothing;
            }
        }
        answers
    }
}

/// Logs a failure: the first after a healthy period at warn level (with the call's key, the cause and the
/// policy deciding meanwhile), the rest at debug.
pub(super) fn log_failure<const N: usize>(
    key: &str,
    on_error: [OnError; N],
    cause: &BackendError,
    transition: Transition,
) {
    if transition != Transition::FirstFailure {
        tracing::debug!(key, %cause, "rate limiter: Redis failed");
        return;
    }
    match on_error.as_slice() {
        [first, rest @ ..] if rest.iter().all(|other| other == first) => tracing::warn!(
            key,
            %cause,
            on_error = %first,
            "rate limiter: Redis failed; deciding in degraded mode until it answers again (fail {first})",
        ),
        _ => tracing::warn!(
            key,
            %cause,
            "rate limiter: Redis failed; deciding in degraded mode until it answers again (each limit by its \
             own on_error)",
        ),
    }
}
