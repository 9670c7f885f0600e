//! The quotas one response advertises: every decision made while a request is served, recorded where the
//! pipeline reports its decisions, so that the tower layer in front of the handlers writes them all in one
//! set of quota headers (`RateLimit-Policy`, `RateLimit`).
//!
//! The layer opens a `scope` (with the `tower` feature) over each request. While the request's future runs,
//! the pipeline adds each decision it makes, whichever way it was asked: the layer's own limits, an annotated
//! handler's, the plain API's. Outside a scope nothing is recorded, and looking costs one thread-local read;
//! without the `tower` feature, nothing at all.
//!
//! A decision is advertised when its limit applies to the call and it was counted: not a shadow limit's (it
//! never refuses), not one the call skipped (`skip_if`), none while the switch is off, and not one the
//! failure policy made without a count (`on_error = open | closed` while Redis fails: the count is
//! unknown). A decision over this node's share (`on_error = local`) was counted, and is advertised. When a
//! call decides one limit twice, the later decision is the one advertised.

mod policy;

#[cfg(feature = "tower")]
use std::cell::RefCell;
#[cfg(feature = "tower")]
use std::future::Future;

pub(crate) use self::policy::PolicyName;
use crate::backend::Answer;
use crate::decide::Request;
use crate::{Decision, OnError, Rule};

#[cfg(feature = "tower")]
tokio::task_local! {
    static QUOTAS: RefCell<Vec<Quota>>;
}

/// One limit's decision, as a response advertises it.
#[cfg(feature = "tower")]
#[derive(Debug, Clone)]
pub(crate) struct Quota {
    pub(crate) policy: PolicyName,
    pub(crate) decision: Decision,
}

/// Whether a limit applies to a call: not a shadow limit (it never refuses), not one the call skips.
#[inline]
pub(crate) fn applies(rule: &Rule, skipped: bool) -> bool {
    !skipped && !rule.shadow_value()
}

/// Whether a decision of a limit that applies to the call is advertised: unless the failure policy made it
/// without a count (`on_error` other than `local` while Redis fails).
#[inline]
pub(crate) fn counted(on_error: OnError, decision: &Decision) -> bool {
    !decision.degraded || on_error == OnError::Local
}

/// What a call's limits advertise, named when the call was asked (a Redis round trip answers later, away from
/// the rules): each limit that applies, with its failure policy; nothing when no scope records here.
pub(crate) struct Recorder<const N: usize>(Option<Box<[Option<Applies>; N]>>);

/// A limit that applies to a call: its policy, and its failure policy.
type Applies = (PolicyName, OnError);

impl<const N: usize> Recorder<N> {
    /// The policies of `batch`'s limits that apply (not shadow, not skipped), if a scope records here.
    #[inline]
    pub(crate) fn of(batch: &[Request<'_, '_>; N]) -> Self {
        #[cfg(feature = "tower")]
        if QUOTAS.try_with(|_| ()).is_ok() {
            return Recorder(Some(Box::new(batch.each_ref().map(|request| {
                let rule = request.rule;
                applies(rule, request.skip).then(|| (PolicyName::of(rule), rule.on_error_value()))
            }))));
        }
        let _ = batch;
        Recorder(None)
    }

    /// Adds the call's decisions (`answers`, in the order of its limits) to the scope's record.
    #[inline]
    pub(crate) fn record(&self, answers: &[Answer; N]) {
        let Some(policies) = &self.0 else { return };
        #[cfg(not(feature = "tower"))]
        let _ = (policies, answers);
        #[cfg(feature = "tower")]
        let _ = QUOTAS.try_with(|quotas| {
            let mut quotas = quotas.borrow_mut();
            for (limit, answer) in policies.iter().zip(answers) {
                let Some((policy, on_error)) = limit else {
                    continue;
                };
                if !counted(*on_error, &answer.decision) {
                    continue;
                }
                let quota = Quota {
                    policy: policy.clone(),
                    decision: answer.decision,
                };
                match quotas.iter_mut().find(|seen| seen.policy == quota.policy) {
                    Some(seen) => *seen = quota,
                    None => quotas.push(quota),
                }
            }
        });
    }
}

/// Runs `future`, recording the decisions made meanwhile: its output, and what was recorded. Within another
/// scope, the decisions go to that one (its owner writes the headers), and this one returns none.
#[cfg(feature = "tower")]
pub(crate) async fn scope<F: Future>(future: F) -> (F::Output, Option<Vec<Quota>>) {
    if QUOTAS.try_with(|_| ()).is_ok() {
        return (future.await, None);
    }
    QUOTAS
        .scope(RefCell::new(Vec::new()), async {
            let output = future.await;
            let recorded = QUOTAS.with(RefCell::take);
            (output, Some(recorded))
        })
        .await
}

#[cfg(all(test, feature = "tower"))]
mod tests {
    use super::*;
    use crate::{Limiter, Rule};

    /// Decisions are recorded in the scope they are made in, and nowhere else: not before it opens, not after
    /// it closes; a scope inside another records into the outer one.
    #[tokio::test]
    async fn only_a_scope_records_and_the_outermost_keeps_the_record() {
        let limiter = Limiter::in_memory();
        let rule = Rule::new().prefix("scoped:").name("scoped").max(10);
        limiter.check(&rule, "k").await;
        let ((), recorded) = scope(async {
            limiter.check(&rule, "k").await;
            let ((), inner) = scope(async {
                limiter.check(&rule, "other").await;
            })
            .await;
            assert!(inner.is_none(), "an inner scope hands its record on");
        })
        .await;
        let recorded = recorded.unwrap();
        let remaining: Vec<_> = recorded
            .iter()
            .map(|q| (&*q.policy, q.decision.remaining))
            .collect();
        // One member per policy: the later decision (of key `other`) is the one kept.
        assert_eq!(remaining, [("scoped", 9)]);
        limiter.check(&rule, "k").await;
        assert!(QUOTAS.try_with(|_| ()).is_err(), "no scope outside");
    }
}
