//! Coalescing: calls on the same key and limits that arrive while one of them is with Redis wait for its
//! answer, then go to Redis together, as one script call carrying them all. The script decides them in
//! arrival order, each exactly as it would have been alone (its own admission, its own sliding-log members,
//! its own receipt), so every guarantee holds unchanged; one hot key then costs Redis one script call per
//! round trip instead of one per call. There is no timer: a call that finds nothing in flight is sent at
//! once.
//!
//! Each call key has a line while a call for it is in flight. The call in flight leads; calls arriving
//! meanwhile wait in the line. When its answer comes, the leader hands the line to the first waiting call,
//! which sends them all, itself first, and leads in turn; with no one waiting, the line closes. A leader
//! dropped before its answer (its deadline passed) fails its batch, which may have been applied and so is
//! never retried, and hands the line on.

use tokio::sync::oneshot;

use super::connection::Connection;
use super::script::{self, Call, Decided, Limit};
use super::RedisBackend;
use crate::error::BackendError;
use crate::key::KeyRef;
use crate::sharded::{Keys, Sharded};

/// Calls of more limits than this are sent alone.
pub(super) const MAX_LIMITS: usize = 4;
/// Shards of the lines: enough that calls on different keys rarely meet.
const SHARDS: usize = 16;

/// The lines of the call keys in flight.
#[derive(Debug)]
pub(super) struct Coalescer {
    lines: Sharded<Keys<Line>>,
}

/// What the script is told of a call's limits, but their costs: calls go together only when it is the
/// same, so that a batch is decided under one set of limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Shape {
    len: usize,
    limits: [[u64; 4]; MAX_LIMITS],
}

impl Shape {
    /// The shape of limits given as (algorithm code with the veto's sign, window, max, depth); `None` past
    /// [`MAX_LIMITS`].
    pub(super) fn of(limits: impl ExactSizeIterator<Item = [u64; 4]>) -> Option<Shape> {
        let len = limits.len();
        if len > MAX_LIMITS {
            return None;
        }
        let mut shape = Shape {
            len,
            limits: [[0; 4]; MAX_LIMITS],
        };
        for (slot, limit) in shape.limits.iter_mut().zip(limits) {
            *slot = limit;
        }
        Some(shape)
    }
}

/// One call key's line: the shape of its calls, and those waiting for the next round trip.
#[derive(Debug)]
struct Line {
    shape: Shape,
    waiting: Vec<Member>,
}

/// A call waiting in a line: what the script needs of it, and where its turn goes.
#[derive(Debug)]
pub(super) struct Member {
    pub(super) nonce: u64,
    pub(super) costs: [u64; MAX_LIMITS],
    turn: oneshot::Sender<Turn>,
}

/// What a waiting call is told when the round trip it waited for is over.
#[derive(Debug)]
pub(super) enum Turn {
    /// It went in the batch: what Redis decided of it, and when.
    Decided(Result<(Decided, u64), BackendError>),
    /// It leads the next batch: these calls, itself first.
    Lead(Vec<Member>),
}

/// Where a call stands on joining its line.
#[derive(Debug)]
pub(super) enum Place {
    /// Nothing was in flight: it goes at once, and leads.
    Lead,
    /// A call was in flight: it waits for its turn.
    Wait(oneshot::Receiver<Turn>),
    /// A call on other limits was in flight for the same key (an override between the two, say): it goes
    /// alone.
    Alone,
}

impl Default for Coalescer {
    fn default() -> Self {
        Coalescer {
            lines: Sharded::new(SHARDS),
        }
    }
}

impl Coalescer {
    /// Joins the line of `key` for a call of `shape` (its `nonce` and `costs` for when it waits).
    pub(super) fn join(
        &self,
        key: KeyRef<'_>,
        shape: Shape,
        nonce: u64,
        costs: [u64; MAX_LIMITS],
    ) -> Place {
        let (mut lines, hash) = self.lines.lock(key);
        let (line, new) = lines.get_or_insert_with(hash, key, || Line {
            shape,
            waiting: Vec::new(),
        });
        if new {
            return Place::Lead;
        }
        if line.shape != shape {
            return Place::Alone;
        }
        let (turn, waits) = oneshot::channel();
        line.waiting.push(Member { nonce, costs, turn });
        Place::Wait(waits)
    }

    /// After a round trip on `key`: hands its line to the first call waiting in it whose caller is still
    /// there, with everyone waiting behind it; closes the line when no one waits.
    pub(super) fn pass_on(&self, key: KeyRef<'_>) {
        let (mut lines, hash) = self.lines.lock(key);
        let Some(line) = lines.get_mut(hash, key) else {
            return;
        };
        let mut waiting = std::mem::take(&mut line.waiting).into_iter();
        while let Some(first) = waiting.next() {
            match first.turn.send(Turn::Lead(waiting.collect())) {
                Ok(()) => return,
                // Its caller is gone: the next one leads.
                Err(turn) => waiting = turn.into_batch().into_iter(),
            }
        }
        lines.remove(hash, key);
    }
}

impl Turn {
    /// The batch a turn to lead hands over (none for a decision).
    fn into_batch(self) -> Vec<Member> {
        match self {
            Turn::Lead(batch) => batch,
            Turn::Decided(_) => Vec::new(),
        }
    }
}

/// A batch in flight, as its leader holds it: when the leader is dropped before the answer (its deadline
/// passed), the calls it carried are told the batch failed, and the line passes on.
pub(super) struct Leading<'a> {
    coalescer: &'a Coalescer,
    key: KeyRef<'a>,
    members: Vec<Member>,
    error: BackendError,
}

impl<'a> Leading<'a> {
    /// `members` sent with the leader on `key`; `error` is what they are told if the leader is dropped.
    pub(super) fn new(
        coalescer: &'a Coalescer,
        key: KeyRef<'a>,
        members: Vec<Member>,
        error: BackendError,
    ) -> Self {
        Leading {
            coalescer,
            key,
            members,
            error,
        }
    }

    pub(super) fn members(&self) -> &[Member] {
        &self.members
    }

    /// Tells each call carried what Redis decided of it (each its own decision, in the order sent, or the
    /// failure), and passes the line on.
    pub(super) fn finish(mut self, decided: Result<(&[Decided], u64), BackendError>) {
        let members = std::mem::take(&mut self.members);
        for (i, member) in members.into_iter().enumerate() {
            let result = match &decided {
                Ok((each, now)) => match each.get(i) {
                    Some(one) => Ok((one.clone(), *now)),
                    None => Err(BackendError::Reply("fewer decisions than calls".into())),
                },
                Err(error) => Err(error.clone()),
            };
            // A caller gone meanwhile misses its decision: it was decided degraded already.
            let _ = member.turn.send(Turn::Decided(result));
        }
    }
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        for member in self.members.drain(..) {
            let _ = member.turn.send(Turn::Decided(Err(self.error.clone())));
        }
        self.coalescer.pass_on(self.key);
    }
}

impl RedisBackend {
    /// Decides `call` on `limits` (a whole call, on one slot) with the calls on the same key and limits that
    /// wait for the same round trip, or alone.
    pub(super) async fn decide_coalesced(
        &self,
        coalescer: &Coalescer,
        connection: &mut Connection,
        key: KeyRef<'_>,
        limits: &[Limit<'_>],
        call: Call<'_>,
    ) -> Result<(Decided, u64), BackendError> {
        let Some(shape) = Shape::of(limits.iter().map(Limit::shape)) else {
            return self.decide_alone(connection, limits, call).await;
        };
        let mut costs = [0; MAX_LIMITS];
        costs[..call.costs.len()].copy_from_slice(call.costs);
        match coalescer.join(key, shape, call.nonce, costs) {
            Place::Alone => self.decide_alone(connection, limits, call).await,
            Place::Lead => {
                self.lead(coalescer, connection, key, limits, call, Vec::new())
                    .await
            }
            Place::Wait(turn) => match turn.await {
                Ok(Turn::Decided(decided)) => decided,
                Ok(Turn::Lead(batch)) => {
                    self.lead(coalescer, connection, key, limits, call, batch)
                        .await
                }
                // A leader always says something before it goes: only a backend dropped meanwhile is silent.
                Err(_) => Err(BackendError::Reply(
                    "no answer: the limiter was dropped".into(),
                )),
            },
        }
    }

    /// Decides `call` alone, in one script call.
    pub(super) async fn decide_alone(
        &self,
        connection: &mut Connection,
        limits: &[Limit<'_>],
        call: Call<'_>,
    ) -> Result<(Decided, u64), BackendError> {
        let (decided, now) = script::decide(connection, limits, &[call], self.test_now()).await?;
        let one = decided.into_iter().next();
        one.map(|one| (one, now))
            .ok_or_else(|| BackendError::Reply("no decision".into()))
    }

    /// Sends `call` first and `batch` after it in one script call, tells each of `batch` its decision, and
    /// passes the line on.
    async fn lead(
        &self,
        coalescer: &Coalescer,
        connection: &mut Connection,
        key: KeyRef<'_>,
        limits: &[Limit<'_>],
        call: Call<'_>,
        batch: Vec<Member>,
    ) -> Result<(Decided, u64), BackendError> {
        let leading = Leading::new(coalescer, key, batch, BackendError::Timeout(self.deadline));
        let decided = {
            let mut calls = Vec::with_capacity(1 + leading.members().len());
            calls.push(call);
            calls.extend(leading.members().iter().map(|member| Call {
                nonce: member.nonce,
                costs: &member.costs[..limits.len()],
            }));
            script::decide(connection, limits, &calls, self.test_now()).await
        };
        match decided {
            Ok((mut decided, now)) => {
                leading.finish(Ok((decided.get(1..).unwrap_or_default(), now)));
                if decided.is_empty() {
                    return Err(BackendError::Reply("no decision".into()));
                }
                Ok((decided.swap_remove(0), now))
            }
            Err(error) => {
                leading.finish(Err(error.clone()));
                Err(error)
            }
        }
    }
}
