//! Asking Redis: one script call for a call (or a batch of calls on one key and limits, or one per slot on
//! a cluster), within a budget; what it answered, read against the call; and how a round trip fails.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use redis::Value;

use super::breaker::Pass;
use super::coalesce::{Batch, Coalescer, Joining, Line, Member, Orphans, Place};
use super::script::{groups_of, nonce, BatchCall, CallOutcome, Group, Sent};
use super::RedisBackend;
use super::{script, Connection};
use crate::algorithm::Outcome;
use crate::call::{Answer, Call, CallLimit, Decided, OneOrMany};
use crate::error::BackendError;
use crate::key::{KeyRef, StoreKey};

/// Why a script call gave no answer in time: the cause, and the call still running, whose answer is to be
/// reconciled with the decision made meanwhile.
pub(super) struct Failed {
    pub(super) cause: BackendError,
    pub(super) late: Option<Late>,
}

/// A call to Redis still running past its deadline.
pub(super) enum Late {
    /// One script call, of the call named by this nonce.
    Script(Sent, u64),
    /// A call's exchange across a cluster's slots: what it decided, once done.
    Exchange(Exchange),
}

/// A call's exchange across a cluster's slots, owned: what Redis decided of it.
pub(super) type Exchange =
    std::pin::Pin<Box<dyn Future<Output = Result<(Decided, Call<'static>), BackendError>> + Send>>;

impl Failed {
    /// The failure of the script call that named its call `nonce`.
    pub(super) fn named(mut self, nonce: u64) -> Failed {
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

/// The limits of `call` Redis is asked about (not those decided before it was).
pub(super) fn asked<'a, 'r>(call: &'a Call<'r>) -> OneOrMany<&'a CallLimit<'r>> {
    match call.limits() {
        [one] => OneOrMany::One(one),
        many => OneOrMany::Many(many.iter().filter(|l| l.preset.is_none()).collect()),
    }
}

/// What names `call` in the deny cache and the coalescer's lines: its one limit's store key, or its limits'
/// keys joined, each length first, so that no two calls share one (`-` for a limit decided before any store
/// was asked).
pub(super) fn call_key(call: &Call<'_>) -> Option<StoreKey> {
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

/// The key that names `call`, as [`call_key`] made it (`joined`), or its one limit's.
pub(super) fn named<'a>(call: &'a Call<'_>, joined: &'a Option<StoreKey>) -> KeyRef<'a> {
    match joined {
        Some(joined) => joined.parts(),
        None => call.limits()[0].key.parts(),
    }
}

/// `asked`'s costs (the limits Redis is asked about of a call), in their places.
pub(super) fn costs_of(asked: &[&CallLimit<'_>]) -> OneOrMany<u64> {
    match asked {
        [one] => OneOrMany::One(one.charge.cost),
        many => OneOrMany::Many(many.iter().map(|limit| limit.charge.cost).collect()),
    }
}

/// What one call of a batch came to: its outcome, or the fault its group met.
pub(super) type MemberOutcome = Result<CallOutcome, BackendError>;

/// What Redis's `reply` says of `groups` (as [`batch_command`](script::batch_command) sent them, or
/// [`decide_command`](script::decide_command) when there is one): each call's outcome, and when.
fn read_trip(
    reply: &Value,
    groups: &[Group<'_, '_>],
) -> Result<(Vec<MemberOutcome>, u64), BackendError> {
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
/// [`calls`](Told::calls) and [`groups_of`].
pub(super) struct Told<'m> {
    asked: Vec<OneOrMany<&'m CallLimit<'static>>>,
    costs: Vec<OneOrMany<u64>>,
}

impl<'m> Told<'m> {
    pub(super) fn of(members: &'m [Member]) -> Told<'m> {
        let asked: Vec<_> = members.iter().map(|member| asked(&member.call)).collect();
        let costs = asked.iter().map(|asked| costs_of(asked)).collect();
        Told { asked, costs }
    }

    /// Each member's call as the script is told it: its nonce and costs.
    pub(super) fn calls<'a>(&'a self, members: &[Member]) -> Vec<BatchCall<'a>> {
        members
            .iter()
            .zip(&self.costs)
            .map(|(member, costs)| BatchCall {
                nonce: member.nonce,
                costs,
            })
            .collect()
    }

    /// The groups the script is told `calls` (made by [`calls`](Told::calls)) as.
    pub(super) fn groups<'a>(&'a self, calls: &'a [BatchCall<'a>]) -> Vec<Group<'a, 'static>> {
        groups_of(&self.asked, calls)
    }

    /// What Redis's `reply` says of each of `calls` (made by [`calls`](Told::calls)), and when.
    pub(super) fn read(
        &self,
        reply: &Value,
        calls: &[BatchCall<'_>],
    ) -> Result<(Vec<MemberOutcome>, u64), BackendError> {
        read_trip(reply, &self.groups(calls))
    }
}

/// What `outcome` (of the limits Redis was asked about, in their order) says of `call`, decided at `now`,
/// the call weighing `costs` on those limits: the limits decided before Redis was asked keep their own
/// outcome.
pub(super) fn decided_of(
    call: &Call<'_>,
    costs: &[u64],
    outcome: &CallOutcome,
    now: u64,
) -> Decided {
    if let ([limit], [outcome], [cost]) = (call.limits(), &*outcome.outcomes, costs) {
        // The common call: one limit, asked.
        let admitted = outcome.allowed || !limit.vetoes;
        return Decided {
            answers: OneOrMany::One(Answer::weighing(limit, *cost, *outcome, now, admitted)),
            admitted,
        };
    }
    let (mut from_redis, mut costs) = (outcome.outcomes.iter(), costs.iter());
    let each: Vec<(Outcome, u64)> = call
        .limits()
        .iter()
        .map(|limit| match limit.preset {
            Some(preset) => (preset.outcome(&limit.charge), limit.charge.cost),
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
        .map(|(limit, (outcome, cost))| Answer::weighing(limit, *cost, *outcome, now, admitted))
        .collect();
    Decided { answers, admitted }
}

/// Awaits `sent` for at most `budget`: its reply, or, past it, the call still running.
pub(super) async fn within(sent: Sent, budget: Duration) -> Result<Value, Failed> {
    within_held(&mut Some(sent), budget).await
}

/// [`within`] of a script call `sent` holds (taken once answered, or handed on past the budget): dropped
/// meanwhile, its holder still holds it.
pub(super) async fn within_held(
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
struct Flight<'a, 'r> {
    sent: Option<Sent>,
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
pub(super) fn finish_for_dropped(finish: impl std::future::Future<Output = ()> + Send + 'static) {
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        runtime.spawn(finish);
    }
}

/// A script call of a line in flight: handed on, to the first batch gathering behind it, when it ends,
/// however it ends (answered, past its deadline, or dropped with its caller).
pub(super) struct Turn<'a> {
    redis: &'a Arc<RedisBackend>,
    coalescer: &'a Coalescer,
    line: Line,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Some(next) = self.coalescer.pass_on(&self.line) {
            tokio::spawn(Arc::clone(self.redis).drive(next));
        }
    }
}

impl RedisBackend {
    /// Decides `call` in Redis: one script call, alone or in a batch with the calls that arrived while its
    /// line was full (when coalescing is on), or, on a cluster whose slots split the call's keys, one per
    /// slot.
    pub(super) async fn ask(
        self: &Arc<Self>,
        call: &Call<'_>,
        permit: Pass,
        budget: Duration,
        connection: Connection,
    ) -> Result<Decided, Failed> {
        let asked = asked(call);
        if asked.len() > 1 {
            let keys: Vec<&str> = asked.iter().map(|limit| &*limit.key).collect();
            if let Some(groups) = connection.slots_apart(&keys) {
                return Box::pin(self.ask_across_slots(call, groups)).await;
            }
        }
        let nonce = nonce();
        // A probe must reach Redis, to close the breaker or keep it open: it goes alone.
        let coalescer = self.coalescer.as_ref().filter(|_| permit == Pass::Call);
        // The turn is this call's to hand on however its round trip ends: answered, past its deadline, or
        // dropped with its caller.
        let mut turn = None;
        if let Some(coalescer) = coalescer {
            let keys = asked.iter().map(|limit| &*limit.key);
            let line = coalescer.line_of(connection.is_cluster(), keys);
            let join = Joining {
                member: || Member {
                    call: call.for_store(),
                    nonce,
                },
                limits: asked.len(),
                until: self.clock.now() + budget,
            };
            match coalescer.join(&line, join) {
                Place::Wait(batch, index) => return Ok(batch.wait(index).await),
                Place::Lead => {
                    turn = Some(Turn {
                        redis: self,
                        coalescer,
                        line,
                    });
                }
            }
        }
        let costs = costs_of(&asked);
        let calls = [BatchCall {
            nonce,
            costs: &costs,
        }];
        crate::observe::batch(1);
        let (script, command) = script::decide_command(&asked, &calls, self.test_now());
        let mut flight = Flight {
            sent: Some(script::send(script, connection, command)),
            redis: self,
            call,
            nonce,
        };
        let reply = within_held(&mut flight.sent, budget)
            .await
            .map_err(|failed| failed.named(nonce))?;
        let (each, now) = script::read_decided(&reply, &asked, &calls)?;
        drop(turn);
        Ok(decided_of(call, &costs, &each[0], now))
    }

    /// One script call deciding every call of `members` (a batch), answered within `budget`: each call's
    /// outcome (or its group's fault), and when.
    async fn batch_trip(
        &self,
        members: &[Member],
        budget: Duration,
        connection: Connection,
    ) -> Result<(Vec<MemberOutcome>, u64), Failed> {
        crate::observe::batch(members.len());
        let told = Told::of(members);
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

    /// Sends `batch` once a round trip of its line has ended: decides each of its calls within the batch's
    /// deadline (degraded when Redis cannot, each by its own `on_error`, and reconciled with Redis's late
    /// answer), then hands the line on.
    pub(super) fn drive(
        self: Arc<Self>,
        batch: Arc<Batch>,
    ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move { self.send_batch(batch).await })
    }

    /// What [`drive`](RedisBackend::drive) does.
    pub(super) async fn send_batch(self: Arc<Self>, batch: Arc<Batch>) {
        let (members, until) = batch.members();
        let budget = until.saturating_sub(self.clock.now());
        let trip = match (budget.is_zero(), self.connection()) {
            (true, _) => Err(Failed::from(BackendError::Timeout(self.deadline))),
            (false, Err(cause)) => Err(Failed::from(cause)),
            (false, Ok(connection)) => self.batch_trip(&members, budget, connection).await,
        };
        let coalescer = self.coalescer.as_ref();
        if let Some(next) = coalescer.and_then(|c| c.pass_on(&batch.line)) {
            tokio::spawn(Arc::clone(&self).drive(next));
        }
        let failed = match trip {
            Ok((each, now)) => {
                let decided = self.decided_members(&members, each, now);
                batch.decide(members, decided, self.orphans());
                return;
            }
            Err(failed) => failed,
        };
        let first = &members[0].call;
        let on_error = members
            .iter()
            .flat_map(|m| m.call.limits().iter().map(|l| l.on_error));
        let joined = call_key(first);
        let retry = self.failed(Pass::Call, named(first, &joined), on_error, &failed.cause);
        let degraded: Vec<Decided> = members
            .iter()
            .map(|member| self.fallback.decide(&member.call, retry))
            .collect();
        let refused: Vec<bool> = degraded.iter().map(|d| !d.admitted).collect();
        let late = match failed.late {
            Some(Late::Script(late, _)) => Some((late, members.clone())),
            _ => None,
        };
        batch.decide(members, degraded, self.orphans());
        if let Some((late, members)) = late {
            self.reconcile_batch(late, &members, &refused).await;
        }
    }

    /// What gives back the decision of a batch's member whose caller went away without reading it: what it
    /// charged, all of it (its permits too), by a task of its own.
    fn orphans(self: &Arc<Self>) -> Orphans {
        let redis = Arc::downgrade(self);
        Arc::new(move |member: &Member, decided: &Decided| {
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
                let units: Vec<u64> = call.limits().iter().map(|l| l.charge.cost).collect();
                crate::observe::reconciled();
                redis.give_back(&call, &decided, &units).await;
            });
        })
    }

    /// What Redis's answer (`each`, at `now`) says of each of `members`: a call whose group met a fault of
    /// its own keys is decided by its own `on_error`, the others by Redis.
    fn decided_members(
        &self,
        members: &[Member],
        each: Vec<MemberOutcome>,
        now: u64,
    ) -> Vec<Decided> {
        let mut answered = false;
        let decided = members
            .iter()
            .zip(each)
            .map(|(member, outcome)| {
                let call = &member.call;
                match outcome {
                    Ok(outcome) => {
                        answered = true;
                        decided_of(call, &costs_of(&asked(call)), &outcome, now)
                    }
                    Err(fault) => {
                        let joined = call_key(call);
                        let on_error = call.limits().iter().map(|limit| limit.on_error);
                        let retry = self.failed(Pass::Call, named(call, &joined), on_error, &fault);
                        self.fallback.decide(call, retry)
                    }
                }
            })
            .collect();
        if answered {
            let first = &members[0].call;
            self.answered(Pass::Call, first.limits()[0].key.parts());
        }
        decided
    }
}
