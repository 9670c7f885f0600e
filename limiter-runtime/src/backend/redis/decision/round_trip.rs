//! Asking Redis: one script call for a call (or a batch of calls on one key and limits, or one per slot on
//! a cluster), within a budget; what it answered, read against the call; and how a round trip fails.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use redis::Value;

use crate::algorithm::Outcome;
use crate::backend::redis::sparing::coalesce::Member;
use crate::backend::redis::wire::script::{groups_of, BatchCall, Group, Outcomes, Sent};
use crate::backend::redis::wire::{script, Connection};
use crate::backend::redis::RedisBackend;
use crate::call::{Call, CallLimit, LimitRuling, OneOrMany, Ruling};
use crate::error::BackendError;
use crate::key::{KeyRef, StoreKey};

/// Why a script call gave no answer in time: the cause, and the call still running, whose answer is to be
/// reconciled with the decision made meanwhile.
pub(in crate::backend::redis) struct Failed {
    pub(in crate::backend::redis) cause: BackendError,
    pub(in crate::backend::redis) late: Option<Late>,
}

/// A call to Redis still running past its deadline.
pub(in crate::backend::redis) enum Late {
    /// One script call, of the call named by this nonce.
    Script(Sent, u64),
    /// A call's exchange across a cluster's slots: what it decided, once done.
    Exchange(Exchange),
}

/// A call's exchange across a cluster's slots, owned: what Redis decided of it.
pub(in crate::backend::redis) type Exchange =
    std::pin::Pin<Box<dyn Future<Output = Result<(Ruling, Call<'static>), BackendError>> + Send>>;

impl Failed {
    /// Returns the failure of the script call that named its call `nonce`.
    pub(in crate::backend::redis) fn named(mut self, nonce: u64) -> Failed {
        if let Some(Late::Script(_, named)) = &mut self.late {
            *named = nonce;
        }
        self
    }
}

impl From<BackendError> for Failed {
    fn from(cause: BackendError) -> Failed {
        Failed { cause, late: None }
    }
}

/// Returns the limits of `call` Redis is asked about (not those decided before it was).
pub(in crate::backend::redis) fn asked<'a, 'r>(call: &'a Call<'r>) -> OneOrMany<&'a CallLimit<'r>> {
    match call.limits() {
        [one] => OneOrMany::One(one),
        many => OneOrMany::Many(many.iter().filter(|l| l.preset.is_none()).collect()),
    }
}

/// Returns what names `call` in the deny cache and the coalescer's lines: its one limit's store key, or its limits'
/// keys joined, each length first, so that no two calls share one (`-` for a limit decided before any store
/// was asked).
pub(in crate::backend::redis) fn call_key(call: &Call<'_>) -> Option<StoreKey> {
    use std::fmt::Write as _;
    if let [_] = call.limits() {
        return None;
    }
    let mut key = StoreKey::joined("", "");
    for limit in call.limits() {
        // Writing into a key cannot fail.
        let _ = match limit.preset {
            Some(_) => key.write_str("-|"),
            None => write!(key, "{}:{}|", limit.key.len(), &*limit.key),
        };
    }
    Some(key)
}

/// Returns the key that names `call`, as [`call_key`] made it (`joined`), or its one limit's.
pub(in crate::backend::redis) fn named<'a>(
    call: &'a Call<'_>,
    joined: &'a Option<StoreKey>,
) -> KeyRef<'a> {
    match joined {
        Some(joined) => joined.parts(),
        None => call.limits()[0].key.parts(),
    }
}

/// Returns `asked`'s costs (the limits Redis is asked about of a call), in their places.
pub(in crate::backend::redis) fn costs_of(asked: &[&CallLimit<'_>]) -> OneOrMany<u64> {
    match asked {
        [one] => OneOrMany::One(one.terms.cost),
        many => OneOrMany::Many(many.iter().map(|limit| limit.terms.cost).collect()),
    }
}

/// What one call of a batch came to: its outcome, or the fault its group met.
pub(in crate::backend::redis) type MemberOutcomes = Result<Outcomes, BackendError>;

/// Reads what Redis's `reply` says of `groups` (as [`batch_command`](script::batch_command) sent them, or
/// [`decide_command`](script::decide_command) when there is one): each call's outcome, and when.
fn read_trip(
    reply: &Value,
    groups: &[Group<'_, '_>],
) -> Result<(Vec<MemberOutcomes>, u64), BackendError> {
    if let [group] = groups {
        let (each, now) = script::read_decided(reply, group.limits, group.calls)?;
        return Ok((each.iter().cloned().map(Ok).collect(), now));
    }
    let (each, now) = script::read_batch(reply, groups)?;
    let mut calls = Vec::with_capacity(groups.iter().map(|g| g.calls.len()).sum());
    for (group, outcome) in groups.iter().zip(each) {
        match outcome {
            Ok(outcomes) => calls.extend(outcomes.into_iter().map(Ok)),
            Err(fault) => calls.extend(group.calls.iter().map(|_| Err(fault.clone()))),
        }
    }
    Ok((calls, now))
}

/// A batch's members as the script is told them: each one's limits asked and costs on them, borrowed by
/// [`calls`](BatchArgs::calls) and [`groups_of`].
pub(in crate::backend::redis) struct BatchArgs<'m> {
    asked: Vec<OneOrMany<&'m CallLimit<'static>>>,
    costs: Vec<OneOrMany<u64>>,
}

impl<'m> BatchArgs<'m> {
    pub(in crate::backend::redis) fn of(members: &'m [Member]) -> BatchArgs<'m> {
        let asked: Vec<_> = members.iter().map(|member| asked(&member.call)).collect();
        let costs = asked.iter().map(|asked| costs_of(asked)).collect();
        BatchArgs { asked, costs }
    }

    /// Returns each member's call as the script is told it: its nonce and costs.
    pub(in crate::backend::redis) fn calls<'a>(&'a self, members: &[Member]) -> Vec<BatchCall<'a>> {
        members
            .iter()
            .zip(&self.costs)
            .map(|(member, costs)| BatchCall {
                nonce: member.nonce,
                costs,
            })
            .collect()
    }

    /// Returns the groups the script is told `calls` (made by [`calls`](BatchArgs::calls)) as.
    pub(in crate::backend::redis) fn groups<'a>(
        &'a self,
        calls: &'a [BatchCall<'a>],
    ) -> Vec<Group<'a, 'static>> {
        groups_of(&self.asked, calls)
    }

    /// Reads what Redis's `reply` says of each of `calls` (made by [`calls`](BatchArgs::calls)), and when.
    pub(in crate::backend::redis) fn read(
        &self,
        reply: &Value,
        calls: &[BatchCall<'_>],
    ) -> Result<(Vec<MemberOutcomes>, u64), BackendError> {
        read_trip(reply, &self.groups(calls))
    }
}

/// Returns what `outcome` (of the limits Redis was asked about, in their order) says of `call`, decided at `now`,
/// the call weighing `costs` on those limits: the limits decided before Redis was asked keep their own
/// outcome.
pub(in crate::backend::redis) fn decided_of(
    call: &Call<'_>,
    costs: &[u64],
    outcome: &Outcomes,
    now: u64,
) -> Ruling {
    if let ([limit], [outcome], [cost]) = (call.limits(), &*outcome.outcomes, costs) {
        // The common call: one limit, asked.
        let admitted = outcome.allowed || !limit.vetoes;
        return Ruling {
            limits: OneOrMany::One(LimitRuling::costing(limit, *cost, *outcome, now, admitted)),
            admitted,
        };
    }
    let (mut from_redis, mut costs) = (outcome.outcomes.iter(), costs.iter());
    let each: Vec<(Outcome, u64)> = call
        .limits()
        .iter()
        .map(|limit| match limit.preset {
            Some(preset) => (preset.outcome(&limit.terms), limit.terms.cost),
            None => (
                from_redis.next().copied().unwrap_or(Outcome::admit(0)),
                costs.next().copied().unwrap_or(0),
            ),
        })
        .collect();
    let admitted = call.admits(|i| each[i].0.allowed);
    let answers = call
        .limits()
        .iter()
        .zip(&each)
        .map(|(limit, (outcome, cost))| LimitRuling::costing(limit, *cost, *outcome, now, admitted))
        .collect();
    Ruling {
        limits: answers,
        admitted,
    }
}

/// Reads what Redis's `reply` says of `call` (its `asked` limits, the call named `nonce` and weighing
/// `costs`), sent alone.
#[inline(always)]
pub(in crate::backend::redis) fn read_one(
    call: &Call<'_>,
    asked: &[&CallLimit<'_>],
    nonce: u64,
    costs: &[u64],
    reply: &Value,
) -> Result<Ruling, BackendError> {
    let calls = [BatchCall { nonce, costs }];
    let (each, now) = script::read_decided(reply, asked, &calls)?;
    Ok(decided_of(call, costs, &each[0], now))
}

/// Awaits `sent` for at most `budget`: its reply, or, past it, the call still running.
pub(in crate::backend::redis) async fn within(
    sent: Sent,
    budget: Duration,
) -> Result<Value, Failed> {
    within_held(&mut Some(sent), budget).await
}

/// Returns [`within`] of a script call `sent` holds (taken once answered, or handed on past the budget): dropped
/// meanwhile, its holder still holds it.
pub(in crate::backend::redis) async fn within_held(
    sent: &mut Option<Sent>,
    budget: Duration,
) -> Result<Value, Failed> {
    let timer = tokio::time::sleep(budget);
    tokio::pin!(timer);
    let answered = std::future::poll_fn(|cx| {
        let Some(call) = sent.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(reply) = call.as_mut().poll(cx) {
            return Poll::Ready(Some(reply));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await;
    match answered {
        Some(reply) => {
            *sent = None;
            Ok(reply.map_err(BackendError::from)?)
        }
        None => Err(Failed {
            cause: BackendError::Timeout(budget),
            late: sent.take().map(|sent| Late::Script(sent, 0)),
        }),
    }
}

/// A call's script call on its way: a caller that goes away before it is answered (a client gone, a
/// `timeout` around the call) hands it to a task that gives back what Redis charged for it once the answer
/// is in, since no one will act on it.
pub(in crate::backend::redis) struct Flight<'a, 'r> {
    pub(in crate::backend::redis) sent: Option<Sent>,
    redis: &'a Arc<RedisBackend>,
    call: &'a Call<'r>,
    nonce: u64,
}

impl Drop for Flight<'_, '_> {
    fn drop(&mut self) {
        let Some(sent) = self.sent.take() else {
            return;
        };
        let member = Member {
            call: self.call.for_store(),
            nonce: self.nonce,
        };
        let redis = Arc::clone(self.redis);
        finish_for_dropped(async move { redis.reconcile_batch(sent, &[member], &[true]).await });
    }
}

/// Hands `finish`, what a caller that went away left undone (a script call on its way, to reconcile once
/// answered), to a task on the Tokio runtime the call ran on. Without one (the runtime is shutting down)
/// there is nothing to run it: what was charged stays until its key expires.
pub(in crate::backend::redis) fn finish_for_dropped(
    finish: impl std::future::Future<Output = ()> + Send + 'static,
) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(finish);
    }
}

impl RedisBackend {
    /// Sends `call`'s script call: its `asked` limits, the call named `nonce` and weighing `costs`. Dropped
    /// before its answer is read (the caller gone), the flight hands the script call on to a task that gives
    /// back what it charged.
    #[inline(always)]
    pub(in crate::backend::redis) fn send_one<'a, 'r>(
        self: &'a Arc<Self>,
        call: &'a Call<'r>,
        asked: &[&CallLimit<'_>],
        nonce: u64,
        costs: &[u64],
        connection: Connection,
    ) -> Flight<'a, 'r> {
        let calls = [BatchCall { nonce, costs }];
        crate::observe::batch(1);
        let (script, command) = script::decide_command(asked, &calls, self.test_now());
        Flight {
            sent: Some(script::send(script, connection, command)),
            redis: self,
            call,
            nonce,
        }
    }

    /// Sends one script call deciding every call of `members` (a batch), answered within `budget`: each call's
    /// outcome (or its group's fault), and when.
    pub(in crate::backend::redis) async fn batch_trip(
        &self,
        members: &[Member],
        budget: Duration,
        connection: Connection,
    ) -> Result<(Vec<MemberOutcomes>, u64), Failed> {
        crate::observe::batch(members.len());
        let told = BatchArgs::of(members);
        let calls = told.calls(members);
        let groups = told.groups(&calls);
        let (script, command) = match &*groups {
            [one] => script::decide_command(one.limits, one.calls, self.test_now()),
            _ => (
                &*script::GROUPS,
                script::batch_command(&groups, self.test_now()),
            ),
        };
        let sent = script::send(script, connection, command);
        let reply = within(sent, budget).await?;
        Ok(read_trip(&reply, &groups)?)
    }
}
