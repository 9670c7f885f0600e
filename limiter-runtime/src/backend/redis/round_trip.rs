//! Asking Redis: one script call for a call (or a batch of calls on one key and limits, or one per slot on
//! a cluster), within a budget; what it answered, read against the call; and how a round trip fails.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use redis::Value;

use super::breaker::Pass;
use super::coalesce::{Batch, Coalescer, Member, Place, Shape, MAX_LIMITS};
use super::script::{nonce, BatchCall, CallOutcome, GiveBack, Sent};
use super::RedisBackend;
use super::{script, Connection};
use crate::algorithm::Outcome;
use crate::call::{Answer, Call, CallLimit, Decided, OneOrMany};
use crate::error::BackendError;
use crate::key::{KeyRef, StoreKey};
use crate::sharded::KeyHash;

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

/// Each call of a batch as the script is told it: `members` (their costs on `limits`' places).
pub(super) fn batch_calls(members: &[Member], limits: usize) -> Vec<BatchCall<'_>> {
    members
        .iter()
        .map(|member| BatchCall {
            nonce: member.nonce,
            costs: &member.costs[..limits],
        })
        .collect()
}

/// `call`'s costs on the limits Redis is asked about, in their places.
pub(super) fn costs_of(asked: &[&CallLimit<'_>]) -> [u64; MAX_LIMITS] {
    let mut costs = [0; MAX_LIMITS];
    for (cost, limit) in costs.iter_mut().zip(asked) {
        *cost = limit.charge.cost;
    }
    costs
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

/// `call`, weighing `costs` on the limits Redis is asked about.
pub(super) fn weighing<'r>(call: &Call<'r>, costs: &[u64]) -> Call<'r> {
    let mut call = call.clone();
    let mut costs = costs.iter();
    call.each_limit(|limit| {
        if limit.preset.is_none() {
            limit.charge.cost = costs.next().copied().unwrap_or(0);
        }
    });
    call
}

/// Awaits `sent` for at most `budget`: its reply, or, past it, the call still running.
pub(super) async fn within(mut sent: Sent, budget: Duration) -> Result<Value, Failed> {
    let timer = tokio::time::sleep(budget);
    tokio::pin!(timer);
    let answered = std::future::poll_fn(|cx| {
        if let Poll::Ready(reply) = sent.as_mut().poll(cx) {
            return Poll::Ready(Some(reply));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await;
    match answered {
        Some(reply) => Ok(reply.map_err(BackendError::from)?),
        None => Err(Failed {
            cause: BackendError::Timeout(budget),
            late: Some(Late::Script(sent, 0)),
        }),
    }
}

/// A round trip of a line in flight: handed on, to the first batch gathering behind it, when it ends,
/// however it ends (answered, past its deadline, or dropped with its caller).
pub(super) struct Turn<'a> {
    redis: &'a Arc<RedisBackend>,
    coalescer: &'a Coalescer,
    key: KeyRef<'a>,
    hash: crate::sharded::KeyHash,
    /// The call went without a line ([`Coalescer::go_sole`]).
    sole: bool,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if self.sole {
            self.coalescer.leave(self.hash);
        } else if let Some(next) = self.coalescer.pass_on(self.key, self.hash) {
            tokio::spawn(Arc::clone(self.redis).drive(next, self.key.to_store_key()));
        }
    }
}

impl RedisBackend {
    /// Decides `call` in Redis: one script call (with the calls on the same key and limits waiting for the
    /// same round trip, when coalescing is on), or, on a cluster whose slots split the call's keys, one per
    /// slot.
    pub(super) async fn ask(
        self: &Arc<Self>,
        call: &Call<'_>,
        (key, hash): (KeyRef<'_>, Option<KeyHash>),
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
        let costs = costs_of(&asked);
        // A probe must reach Redis, to close the breaker or keep it open: it goes alone.
        let coalescer = self.coalescer.as_ref().filter(|_| permit == Pass::Call);
        // The turn is this call's to hand on however its round trip ends: answered, past its deadline, or
        // dropped with its caller.
        let mut turn = None;
        if let Some(coalescer) = coalescer {
            let hash = hash.unwrap_or_else(|| coalescer.hash(key));
            let taken = |sole| {
                Some(Turn {
                    redis: self,
                    coalescer,
                    key,
                    hash,
                    sole,
                })
            };
            if coalescer.go_sole(hash) {
                turn = taken(true);
            } else if let Some(shape) = Shape::of(call) {
                let member = Member { nonce, costs };
                let until = self.clock.now() + budget;
                match coalescer.join((key, hash), shape, call, member, until) {
                    Place::Wait(batch, index) => return Ok(batch.wait(index).await),
                    Place::Lead => turn = taken(false),
                    Place::Alone => {}
                }
            }
        }
        // Past the coalescer's bound on limits: costs of every limit.
        let all: Vec<u64>;
        let costs = match asked.len() > MAX_LIMITS {
            true => {
                all = asked.iter().map(|limit| limit.charge.cost).collect();
                &all[..]
            }
            false => &costs[..asked.len()],
        };
        let calls = [BatchCall { nonce, costs }];
        let (each, now) = self
            .round_trip(&asked, &calls, budget, connection)
            .await
            .map_err(|failed| failed.named(nonce))?;
        drop(turn);
        Ok(decided_of(call, costs, &each[0], now))
    }

    /// One script call deciding `calls` on `limits`, answered within `budget`: each call's outcome, and when.
    pub(super) async fn round_trip(
        &self,
        limits: &[&CallLimit<'_>],
        calls: &[BatchCall<'_>],
        budget: Duration,
        connection: Connection,
    ) -> Result<(OneOrMany<CallOutcome>, u64), Failed> {
        crate::observe::batch(calls.len());
        let (script, command) = script::decide_command(limits, calls, self.test_now());
        let sent = script::send(script, connection, command);
        let reply = within(sent, budget).await?;
        Ok(script::read_decided(&reply, limits, calls)?)
    }

    /// Sends `batch` (on the line of `key`), once a round trip of its line has ended: decides each of its
    /// calls within the batch's deadline (degraded when Redis cannot, reconciled with Redis's late answer),
    /// then hands the line on.
    pub(super) fn drive(
        self: Arc<Self>,
        batch: Arc<Batch>,
        key: StoreKey,
    ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move { self.send_batch(batch, key).await })
    }

    /// What [`drive`](RedisBackend::drive) does.
    pub(super) async fn send_batch(self: Arc<Self>, batch: Arc<Batch>, key: StoreKey) {
        let members = batch.members();
        let asked = asked(&batch.call);
        let calls = batch_calls(&members, asked.len());
        let budget = batch.until.saturating_sub(self.clock.now());
        let permit = Pass::Call;
        let decided = match (budget.is_zero(), self.connection()) {
            (true, _) => Err(Failed::from(BackendError::Timeout(self.deadline))),
            (false, Err(cause)) => Err(Failed::from(cause)),
            (false, Ok(connection)) => self.round_trip(&asked, &calls, budget, connection).await,
        };
        let coalescer = self.coalescer.as_ref();
        let next = coalescer.and_then(|c| c.pass_on(key.parts(), c.hash_whole(&key)));
        if let Some(next) = next {
            tokio::spawn(Arc::clone(&self).drive(next, key.clone()));
        }
        match decided {
            Ok((each, now)) => {
                self.answered(permit, key.parts());
                let decided = each.iter().zip(&members).map(|(outcome, member)| {
                    decided_of(&batch.call, &member.costs[..asked.len()], outcome, now)
                });
                batch.decide(decided.collect());
            }
            Err(failed) => {
                let on_error = batch.call.limits().iter().map(|limit| limit.on_error);
                let retry = self.failed(permit, key.parts(), on_error, &failed.cause);
                let degraded: Vec<Decided> = members
                    .iter()
                    .map(|member| {
                        let call = weighing(&batch.call, &member.costs[..asked.len()]);
                        self.fallback.decide(&call, retry)
                    })
                    .collect();
                let refused: Vec<bool> = degraded.iter().map(|d| !d.admitted).collect();
                batch.decide(degraded);
                if let Some(Late::Script(late, _)) = failed.late {
                    self.reconcile_calls(late, &batch.call, &members, &refused)
                        .await;
                }
            }
        }
    }

    /// Decides `call`'s limits one slot's `groups` at a time, giving back what the admitting slots charged
    /// when another's limits deny the call. The whole exchange runs on past the deadline, and is reconciled
    /// as a late answer is.
    pub(super) async fn ask_across_slots(
        self: &Arc<Self>,
        call: &Call<'_>,
        groups: Vec<Vec<usize>>,
    ) -> Result<Decided, Failed> {
        let (redis, owned) = (Arc::clone(self), call.detached());
        let exchange = async move {
            let asked = asked(&owned);
            let mut outcomes: Vec<Outcome> = Vec::with_capacity(asked.len());
            outcomes.resize(asked.len(), Outcome::admit(0));
            let (mut now, mut admitted, mut charged) = (0, true, Vec::new());
            let nonce = nonce();
            for group in &groups {
                let limits: Vec<&CallLimit<'_>> = group.iter().map(|&j| asked[j]).collect();
                let costs: Vec<u64> = limits.iter().map(|l| l.charge.cost).collect();
                let calls = [BatchCall {
                    nonce,
                    costs: &costs,
                }];
                let (script, command) = script::decide_command(&limits, &calls, redis.test_now());
                let reply = script::send(script, redis.connection()?, command).await?;
                let (each, at) = script::read_decided(&reply, &limits, &calls)?;
                now = now.max(at);
                for (&j, outcome) in group.iter().zip(each[0].outcomes.iter()) {
                    outcomes[j] = *outcome;
                }
                admitted &= each[0].admitted;
                if each[0].admitted {
                    charged.push(group.clone());
                }
            }
            if !admitted {
                // The slots that admitted the call give back what it charged them, before it returns.
                let mut connection = redis.connection()?;
                for group in charged {
                    let given: Vec<GiveBack<'_>> = group
                        .iter()
                        .filter(|&&j| outcomes[j].allowed)
                        .map(|&j| {
                            GiveBack::of(asked[j], &outcomes[j].receipt, asked[j].charge.cost)
                        })
                        .collect();
                    script::give_back(&mut connection, &given, redis.test_now()).await?;
                    for &j in &group {
                        if outcomes[j].allowed {
                            outcomes[j].remaining += asked[j].charge.cost;
                        }
                    }
                }
            }
            let outcome = CallOutcome {
                admitted,
                outcomes: OneOrMany::Many(outcomes),
            };
            let costs: Vec<u64> = asked.iter().map(|limit| limit.charge.cost).collect();
            Ok::<_, BackendError>((decided_of(&owned, &costs, &outcome, now), owned))
        };
        let mut exchange: Exchange = Box::pin(exchange);
        let timer = tokio::time::sleep(self.deadline);
        tokio::pin!(timer);
        let answered = std::future::poll_fn(|cx| {
            if let Poll::Ready(done) = exchange.as_mut().poll(cx) {
                return Poll::Ready(Some(done));
            }
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await;
        match answered {
            Some(done) => Ok(done?.0),
            // Past the deadline: the exchange runs on, to be reconciled with the decision made meanwhile.
            None => Err(Failed {
                cause: BackendError::Timeout(self.deadline),
                late: Some(Late::Exchange(exchange)),
            }),
        }
    }
}
