//! What was decided of a call ([`Ruling`]): each limit's [`LimitRuling`] (its decision, what it charged and where),
//! in the order of the call's limits, and whether the call goes ahead.

use std::time::Duration;

use super::{Call, CallLimit, OneOrMany, Preset};
use crate::algorithm::{Outcome, Receipt, Terms};
use crate::{Decision, OnError, Verdict};

/// What was decided of one limit of a call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LimitRuling {
    pub(crate) decision: Decision,
    /// What an admission charged, for giving it back.
    pub(crate) receipt: Receipt,
    /// Where it charged it.
    pub(crate) charged: Charged,
}

/// Where an answer charged the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Charged {
    /// Nowhere: a denial, a call another limit denied, or one admitted without counting.
    Nothing,
    /// The backend's store: this process's memory, or Redis.
    Store,
    /// This process's memory, deciding for Redis in degraded mode (`on_error = local`).
    Local,
    /// A lease this node holds (its units were counted in Redis when it was taken).
    Lease,
}

impl LimitRuling {
    /// Returns what `outcome`, decided at `at` (µs), says of `limit` in a call that was (`call_admitted`) or was not
    /// admitted: charged to the store when the call was admitted and this limit counted it.
    #[inline(always)]
    pub(crate) fn of(
        limit: &CallLimit<'_>,
        outcome: Outcome,
        at: u64,
        call_admitted: bool,
    ) -> LimitRuling {
        LimitRuling::costing(limit, limit.terms.cost, outcome, at, call_admitted)
    }

    /// Returns [`of`](LimitRuling::of) for a call that weighs `cost` on `limit` (a call of a batch, sharing another's
    /// limits).
    #[inline(always)]
    pub(crate) fn costing(
        limit: &CallLimit<'_>,
        cost: u64,
        outcome: Outcome,
        at: u64,
        call_admitted: bool,
    ) -> LimitRuling {
        let charged = call_admitted && outcome.allowed && limit.preset.is_none();
        let mut decision = limit.decision(&limit.terms, outcome, at, false);
        let charge = Terms {
            cost,
            ..limit.terms
        };
        if !decision.allowed && !charge.can_fit(limit.algorithm) {
            // No wait admits it: no time to retry after.
            decision.retry_after = Duration::ZERO;
        }
        LimitRuling {
            decision,
            receipt: outcome.receipt,
            charged: if charged {
                Charged::Store
            } else {
                Charged::Nothing
            },
        }
    }

    /// Returns a decision that charged nothing.
    pub(crate) fn uncharged(decision: Decision) -> LimitRuling {
        LimitRuling {
            decision,
            receipt: Receipt::default(),
            charged: Charged::Nothing,
        }
    }
}

/// What was decided of a call: each limit's answer, in the order of its limits, and whether it goes ahead.
#[derive(Debug, Clone)]
pub(crate) struct Ruling {
    pub(crate) limits: OneOrMany<LimitRuling>,
    pub(crate) admitted: bool,
}

impl Ruling {
    /// Returns each limit's decision.
    pub(crate) fn decisions(&self) -> impl ExactSizeIterator<Item = Decision> + '_ {
        self.limits.iter().map(|answer| answer.decision)
    }

    /// Returns the first limit's decision (a call of one limit: its only one).
    pub(crate) fn decision(&self) -> Decision {
        self.limits[0].decision
    }

    /// Names why each limit of `call` was decided as it was ([`Decision::verdict`]); `enabled`: limiting
    /// was on.
    #[inline]
    pub(crate) fn judge(&mut self, call: &Call<'_>, enabled: bool) {
        // A call a misconfigured limit refuses asks none of its others: they are skipped.
        let misconfigured = enabled && !self.admitted && call.misconfigured();
        for (limit, answer) in call.limits().iter().zip(self.limits.iter_mut()) {
            let decision = &mut answer.decision;
            decision.verdict = match () {
                _ if !enabled => Verdict::SwitchedOff,
                _ if limit.preset == Some(Preset::Skipped) => Verdict::Skipped,
                _ if matches!(limit.preset, Some(Preset::Misconfigured(_))) => {
                    Verdict::Misconfigured
                }
                _ if misconfigured => Verdict::Skipped,
                _ if decision.degraded => match (limit.on_error, decision.allowed) {
                    (OnError::Local, _) => Verdict::DegradedLocal,
                    (_, true) => Verdict::DegradedOpen,
                    (_, false) => Verdict::Unavailable,
                },
                _ if decision.allowed => Verdict::Admitted,
                _ if !limit.vetoes => Verdict::Shadow,
                _ if decision.verdict == Verdict::Blocked => Verdict::Blocked,
                _ if decision.verdict == Verdict::Reserved => Verdict::Reserved,
                _ => Verdict::Limited,
            };
        }
    }
}
