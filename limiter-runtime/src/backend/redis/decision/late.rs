//! Late limits: a call past its deadline that Redis answered after all, reconciled with what was decided
//! meanwhile (what a refused caller was charged goes back).

use std::sync::Arc;

use super::round_trip::{asked, costs_of, decided_of, BatchArgs, Exchange, Late};
use crate::backend::redis::sparing::coalesce::Member;
use crate::backend::redis::wire::script;
use crate::backend::redis::wire::script::{GiveBack, Sent};
use crate::backend::redis::{RedisBackend, LATE};
use crate::call::Call;

impl RedisBackend {
    /// Reconciles a call to Redis past its deadline, answered late: what Redis admitted of `call` though its caller was
    /// refused meanwhile (`refused`) goes back, through the one give-back path. (What a caller let through,
    /// Redis's count keeps.) Counted in the metric `limiter_reconciled_total`.
    pub(in crate::backend::redis) async fn reconcile(
        self: &Arc<Self>,
        late: Late,
        call: &Call<'_>,
        refused: bool,
    ) {
        match late {
            Late::Script(sent, nonce) => {
                let member = Member {
                    call: call.detached(),
                    nonce,
                };
                self.reconcile_batch(sent, &[member], &[refused]).await;
            }
            Late::Exchange(exchange) => self.reconcile_exchange(exchange, refused).await,
        }
    }

    /// Reconciles, as [`reconcile`](RedisBackend::reconcile) does, a call's exchange across a cluster's slots: once it
    /// is done, what it charged goes back if its caller was refused meanwhile (or went away).
    pub(in crate::backend::redis) async fn reconcile_exchange(
        self: &Arc<Self>,
        exchange: Exchange,
        refused: bool,
    ) {
        let Ok(Ok((decided, owned))) = tokio::time::timeout(LATE, exchange).await else {
            return;
        };
        if decided.admitted && refused {
            crate::observe::reconciled();
            let units: Vec<u64> = owned.limits().iter().map(|l| l.terms.cost).collect();
            self.give_back(&owned, &decided, &units).await;
        }
    }

    /// Reconciles, as [`reconcile`](RedisBackend::reconcile) does, a script call that carried `members` (a batch, or
    /// one call), each refused meanwhile or not (`refused`).
    pub(in crate::backend::redis) async fn reconcile_batch(
        self: &Arc<Self>,
        late: Sent,
        members: &[Member],
        refused: &[bool],
    ) {
        let Ok(Ok(reply)) = tokio::time::timeout(LATE, late).await else {
            return;
        };
        let told = BatchArgs::of(members);
        let calls = told.calls(members);
        let Ok((each, now)) = told.read(&reply, &calls) else {
            return;
        };
        for ((outcome, member), refused) in each.into_iter().zip(members).zip(refused) {
            let call = &member.call;
            // Redis admitted a call refused meanwhile: all it charged goes back. One admitted meanwhile (open,
            // local) keeps what Redis charged of its rates, but not the permits Redis holds for it, which no
            // one would give back.
            let Ok(outcome) = outcome else { continue };
            if !outcome.admitted || (!*refused && !call.holds_permits()) {
                continue;
            }
            let decided = decided_of(call, &costs_of(&asked(call)), &outcome, now);
            let units: Vec<u64> = match *refused {
                true => call.limits().iter().map(|l| l.terms.cost).collect(),
                false => call.permits(),
            };
            crate::observe::reconciled();
            self.give_back(call, &decided, &units).await;
        }
    }

    /// Gives back a lease taken past its deadline: its units go back whole, once Redis's answer comes.
    pub(in crate::backend::redis) async fn return_late_lease(&self, late: Sent, call: &Call<'_>) {
        let limit = &call.limits()[0];
        let Ok(Ok(reply)) = tokio::time::timeout(LATE, late).await else {
            return;
        };
        let Ok((now, taken, reported)) = script::read_lease(&reply, limit.algorithm) else {
            return;
        };
        if taken == 0 {
            return;
        }
        let Some(mut state) =
            crate::algorithm::State::reported(limit.algorithm, now, &limit.terms, reported)
        else {
            return;
        };
        let charge = crate::algorithm::Terms {
            cost: taken,
            ..limit.terms
        };
        let outcome = state.decide(now, &charge);
        let given = GiveBack {
            key: &limit.key,
            algorithm: limit.algorithm,
            terms: &charge,
            receipt: &outcome.receipt,
            units: taken,
        };
        crate::observe::reconciled();
        self.send_give_backs(&[given], limit.key.parts()).await;
    }
}
