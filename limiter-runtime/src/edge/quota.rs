//! The quotas one response advertises: every decision made while a request is served, as the pipeline reports
//! it (the limiter's one hook, [`observe::Edge`](crate::observe::Edge)), so that the tower layer in front of the
//! handlers writes them all in one set of quota fields (`RateLimit-Policy`, `RateLimit`).
//!
//! The layer opens a [`scope`] over each request. While the request's future runs, each decision made in it is
//! recorded, whichever way it was asked: the layer's own limits, an annotated handler's, the plain API's.
//! Outside a scope nothing is recorded, and looking costs one thread-local read.
//!
//! The scope also remembers whether a call of the request was decided without Redis: while Redis is failing,
//! the request's later calls then decide at once, by their `on_error`, instead of each waiting a deadline of
//! its own. A request waits for a failing Redis at most one deadline.
//!
//! A decision is advertised when its limit applies to the call and it was counted: not a shadow limit's (it
//! never refuses), not one the call skipped (`skip_if`), none while the switch is off, and not one the
//! failure policy made without a count (`on_error = open | closed` while Redis fails: the count is
//! unknown). A decision over this node's share (`on_error = local`) was counted, and is advertised. When a
//! call decides one limit twice, the later decision is the one advertised; units given back (`count =
//! failures`, a settled estimate) count as given back.

use std::cell::{Cell, RefCell};
use std::future::Future;

use crate::call::{Call, Ruling};
use crate::observe::{self, Edge};
use crate::pipeline::advertised;
use crate::policy::{Applied, PolicyName};
use crate::Decision;

tokio::task_local! {
    static REQUEST: Request;
}

/// What the scope of one request records.
#[derive(Default)]
struct Request {
    /// The advertised decisions, one per policy.
    quotas: RefCell<Vec<Quota>>,
    /// Whether a call was decided without Redis (degraded): a later call of the request, while Redis is
    /// failing, waits for it no more (at most one deadline per request).
    degraded: Cell<bool>,
}

/// One limit's decision, as a response advertises it.
#[derive(Debug, Clone)]
pub(crate) struct Quota {
    pub(crate) policy: PolicyName,
    pub(crate) applied: Applied,
    pub(crate) decision: Decision,
}

/// Records `call`'s advertised decisions into the scope's record, if a scope records here.
fn decided(call: &Call<'_>, decided: &Ruling) {
    let _ = REQUEST.try_with(|request| {
        if decided.limits.iter().any(|answer| answer.decision.degraded) {
            request.degraded.set(true);
        }
        let mut quotas = request.quotas.borrow_mut();
        for (limit, decision) in call.limits().iter().zip(decided.decisions()) {
            if !advertised(limit, &decision) {
                continue;
            }
            let quota = Quota {
                policy: limit.rule.policy_name(),
                applied: limit.applied(),
                decision,
            };
            match quotas.iter_mut().find(|seen| seen.policy == quota.policy) {
                Some(seen) => *seen = quota,
                None => quotas.push(quota),
            }
        }
    });
}

/// Counts `units[i]` given back of limit `i` of an admitted `call` back into the scope's record.
fn given_back(call: &Call<'_>, units: &[u64]) {
    let _ = REQUEST.try_with(|request| {
        let mut quotas = request.quotas.borrow_mut();
        for (limit, &units) in call.limits().iter().zip(units) {
            let policy = limit.rule.policy_name();
            if let Some(seen) = quotas.iter_mut().find(|seen| seen.policy == policy) {
                let units = units.min(limit.terms.cost);
                seen.decision.remaining =
                    (seen.decision.remaining + units).min(seen.decision.limit);
            }
        }
    });
}

/// Runs `future`, recording the decisions made meanwhile: its output, and what was recorded. Within another
/// scope, the decisions go to that one (its owner writes the fields), and this one returns none.
pub(crate) async fn scope<F: Future>(future: F) -> (F::Output, Option<Vec<Quota>>) {
    observe::install_edge(Edge {
        decided,
        given_back,
        degraded_here,
    });
    if REQUEST.try_with(|_| ()).is_ok() {
        return (future.await, None);
    }
    REQUEST
        .scope(Request::default(), async {
            let output = future.await;
            let recorded = REQUEST.with(|request| request.quotas.take());
            (output, Some(recorded))
        })
        .await
}

/// Returns whether a call of the request this task serves was decided without Redis.
fn degraded_here() -> bool {
    REQUEST
        .try_with(|request| request.degraded.get())
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Limiter, Rule};

    /// Checks that decisions are recorded in the scope they are made in, and nowhere else: not before it opens, not
    /// after it closes; a scope inside another records into the outer one.
    #[tokio::test]
    async fn only_a_scope_records_and_the_outermost_keeps_the_record() {
        let limiter = Limiter::in_memory();
        let rule = Rule::new().prefix("scoped:").policy("scoped").max(10);
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
        assert!(REQUEST.try_with(|_| ()).is_err(), "no scope outside");
    }

    /// Checks that an estimate settled for less than its estimate advertises what it kept.
    #[tokio::test]
    async fn units_given_back_count_as_given_back() {
        let limiter = Limiter::in_memory();
        let rule = Rule::new().prefix("given:").policy("given").max(10);
        let ((), recorded) = scope(async {
            let estimate = limiter.estimate(&rule, "k").cost(4).await.unwrap();
            estimate.settle(1).await;
        })
        .await;
        assert_eq!(recorded.unwrap()[0].decision.remaining, 9);
    }
}
