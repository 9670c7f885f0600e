//! Giving back in Redis: a settled charge's units, a lease's remainder (taken, expired or answered late).

use std::sync::Arc;
use std::time::Duration;

use super::round_trip::{call_key, finish_for_dropped, named, within_held, Failed, Late};
use crate::algorithm::Algorithm;
use crate::backend::redis::sparing::coalesce::{Member, Orphans};
use crate::backend::redis::sparing::lease::HeldLease;
use crate::backend::redis::wire::script;
use crate::backend::redis::wire::script::GiveBack;
use crate::backend::redis::wire::script::Sent;
use crate::backend::redis::RedisBackend;
use crate::call::{Call, Charged, LeaseTerms, OneOrMany, Ruling};
use crate::key::KeyRef;

impl RedisBackend {
    /// Returns how long a call may be taking a lease before it is taken to have been dropped: past its deadline.
    pub(in crate::backend::redis) fn taking_stale(&self) -> Duration {
        self.deadline * 2
    }

    /// Takes a lease for the one limit of `call`, sent at `sent` (giving back `back`, what is left of the last
    /// one), within the deadline, and answers the call with the first of its units; refused, with the limit's
    /// answer to the call alone. A lease taken past the deadline goes back whole.
    pub(in crate::backend::redis) async fn take_lease(
        self: &Arc<Self>,
        call: &Call<'_>,
        sent: Duration,
        terms: LeaseTerms,
        back: Option<Box<HeldLease>>,
    ) -> Result<Ruling, Failed> {
        let limit = &call.limits()[0];
        let back_given = back.as_deref().map(HeldLease::remainder);
        let (script, command) =
            script::lease_command(limit, terms.units, back_given.as_ref(), self.test_now());
        let mut taking = Taking {
            sent: Some(script::send(script, self.connection()?, command)),
            redis: self,
            call,
        };
        let reply = match within_held(&mut taking.sent, self.deadline).await {
            Ok(reply) => reply,
            Err(mut failed) => {
                if let Some(Late::Script(late, _)) = failed.late.take() {
                    let (redis, call) = (Arc::clone(self), call.detached());
                    tokio::spawn(async move { redis.return_late_lease(late, &call).await });
                }
                return Err(failed);
            }
        };
        let taken = script::read_lease(&reply, limit.algorithm)?;
        let received = self.clock.now();
        let answer = self.leases.taken(limit, sent, terms, taken, received)?;
        Ok(Ruling {
            admitted: answer.decision.allowed,
            limits: OneOrMany::One(answer),
        })
    }

    /// Gives back `units[i]` of what each limit `i` of an admitted `call` charged (as `decided` says): to a
    /// lease it spent, to this process's `local` fallback, and in Redis, in one script call (per slot on a
    /// cluster) within the deadline. Exactly, unless a charge has left its limit already (then nothing), never
    /// more.
    pub(crate) async fn give_back(
        self: &Arc<Self>,
        call: &Call<'_>,
        decided: &Ruling,
        units: &[u64],
    ) {
        let (mut in_redis, mut released) = (Vec::new(), None);
        for ((limit, answer), &units) in call.limits().iter().zip(decided.limits.iter()).zip(units)
        {
            let units = units.min(limit.terms.cost);
            match answer.charged {
                // Nothing to give back (a permit in flight given back is one of any units).
                _ if units == 0 => {}
                Charged::Nothing => {}
                Charged::Local => self.fallback.give_back(limit, units, answer),
                Charged::Lease => self
                    .leases
                    .give_back(limit.key.parts(), units, &answer.receipt),
                // A permit goes back whole, with the releases of other calls.
                Charged::Store if limit.algorithm == Algorithm::InFlight => {
                    let (key, mark) = (&limit.key, answer.receipt.mark);
                    released = Some(self.permits.send_release(key, mark, || self.reach()));
                }
                Charged::Store => in_redis.push(GiveBack::of(limit, &answer.receipt, units)),
            }
        }
        if !in_redis.is_empty() {
            let joined = call_key(call);
            self.send_give_backs(&in_redis, named(call, &joined)).await;
        }
        if let Some(batch) = released {
            // Given back before this returns: the caller's next call finds its permit free.
            self.permits.given(batch, self.deadline).await;
        }
    }

    /// Gives back `given`, the charges of the call `call` names: one script call (per slot on a cluster),
    /// within the deadline. A give-back that fails is dropped (the limit then keeps the charge: it admits less,
    /// never more), and logged.
    pub(in crate::backend::redis) async fn send_give_backs(
        &self,
        given: &[GiveBack<'_>],
        call: KeyRef<'_>,
    ) {
        let test_now = self.test_now();
        let giving = async {
            let mut connection = self.connection()?;
            let keys: Vec<&str> = given.iter().map(|given| given.key).collect();
            match connection.slots_apart(&keys) {
                None => script::give_back(&mut connection, given, test_now).await,
                Some(groups) => {
                    for group in groups {
                        let part: Vec<_> = group.iter().map(|&i| given[i]).collect();
                        script::give_back(&mut connection, &part, test_now).await?;
                    }
                    Ok(())
                }
            }
        };
        match tokio::time::timeout(self.deadline, giving).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::debug!(%error, key = %call, "rate limiter: a charge could not be given back")
            }
            Err(_) => tracing::debug!(key = %call, "rate limiter: giving a charge back timed out"),
        }
        if let Some(cache) = &self.denied {
            // The call's limits have room again: what Redis said of it before no longer holds.
            cache.remove(call);
        }
    }

    /// Gives back what is left of the leases that ran out of time while no call came for them, as any charge
    /// is given back (each within the deadline; one that fails is dropped, and its units are lost until their
    /// window passes: the limit admits less, never more), and reports the units this node's leases still
    /// hold.
    pub(crate) async fn return_expired_leases(&self) {
        let (expired, outstanding) = self.leases.expired(self.clock.now(), self.taking_stale());
        crate::observe::lease_units(outstanding);
        for held in expired {
            self.send_give_backs(&[held.remainder()], held.remainder().key.into())
                .await;
        }
    }
}

/// A lease's script call on its way: a caller that goes away before it is answered (a client gone, a
/// `timeout` around the call) hands it to a task that gives the lease back whole once Redis answers, since
/// no one will spend it.
struct Taking<'a, 'r> {
    sent: Option<Sent>,
    redis: &'a Arc<RedisBackend>,
    call: &'a Call<'r>,
}

impl Drop for Taking<'_, '_> {
    fn drop(&mut self) {
        let Some(sent) = self.sent.take() else {
            return;
        };
        let (redis, call) = (Arc::clone(self.redis), self.call.detached());
        finish_for_dropped(async move { redis.return_late_lease(sent, &call).await });
    }
}

impl RedisBackend {
    /// Returns what gives back the decision of a batch's member whose caller went away without reading it: what it
    /// charged, all of it (its permits too), by a task of its own.
    pub(in crate::backend::redis) fn orphans(self: &Arc<Self>) -> Orphans {
        let redis = Arc::downgrade(self);
        Arc::new(move |member: &Member, decided: &Ruling| {
            let (Some(redis), Ok(runtime)) =
                (redis.upgrade(), tokio::runtime::Handle::try_current())
            else {
                return;
            };
            if !decided.admitted {
                return;
            }
            let (call, decided) = (member.call.clone(), decided.clone());
            runtime.spawn(async move {
                let units: Vec<u64> = call.limits().iter().map(|l| l.terms.cost).collect();
                crate::observe::reconciled();
                redis.give_back(&call, &decided, &units).await;
            });
        })
    }
}
