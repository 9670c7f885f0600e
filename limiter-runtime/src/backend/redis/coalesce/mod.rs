//! Coalescing: calls on the same key and limits that arrive while a few of them are with Redis wait for one
//! of those answers, then go to Redis together, as one script call carrying them all. The script decides them in
//! arrival order, each exactly as it would have been alone (its own admission, its own sliding-log members,
//! its own receipt), so every guarantee holds unchanged; one hot key then costs Redis one script call per
//! round trip instead of one per call. There is no timer: a call that finds nothing in flight is sent at
//! once.
//!
//! Each call key has a line while a call for it is in flight. The first calls, up to [`IN_FLIGHT`] batches in
//! flight, go at once and lead; calls arriving meanwhile wait in the line. When a leader's answer comes, it
//! hands its place (a [`Baton`]) to the first waiting call, which sends them all, itself first, and leads in
//! turn; with no one waiting and nothing in flight, the line closes.
//! A leader dropped before its answer (its deadline passed) fails its batch, which may have been applied and
//! so is never retried, and hands the line on; so does a baton whose caller was dropped before reading it.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::connection::Connection;
use super::script::{self, Call, CallOutcome, Limit};
use super::RedisBackend;
use crate::error::BackendError;
use crate::key::{KeyRef, StoreKey};
use crate::sharded::{KeyHash, Keys, Sharded};

/// Calls of more limits than this are sent alone.
pub(super) const MAX_LIMITS: usize = 4;
/// The most calls one script call carries: Redis runs a script to its end, blocking every other client
/// meanwhile, so a batch stays short (about a millisecond of Redis's time at most).
const MAX_BATCH: usize = 128;
/// Batches of one line in flight at once: a call that finds fewer is sent at once; the rest wait for a round
/// trip to end. More than one keeps Redis busy while a batch travels: on one hot key at 16 tasks, one batch
/// in flight made 0.61x the uncoalesced baseline's decisions/s, four 0.96-1.05x (64 tasks: 1.8x, then 3.0x);
/// eight did no better than four (load --only hot, in turns).
const IN_FLIGHT: usize = 4;
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
    /// Batches in flight: at most [`IN_FLIGHT`].
    in_flight: usize,
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
    Decided(Result<(CallOutcome, u64), BackendError>),
    /// It leads the next batch.
    Lead(Baton),
}

/// The right to send the next batch of a line, and the calls it carries (its holder goes first). Dropped
/// unused (its holder was dropped after it was sent, before it was read), it puts the calls it carries back
/// in line and passes the line on: a line never stalls.
#[derive(Debug)]
pub(super) struct Baton {
    /// The line it passes on when dropped unused; `None` once taken.
    line: Option<(Arc<Coalescer>, StoreKey)>,
    members: Vec<Member>,
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
    /// Joins the line of `key` (whose hash is `hash`) for a call of `shape` (its `nonce` and `costs` for when
    /// it waits).
    pub(super) fn join(
        &self,
        key: KeyRef<'_>,
        hash: KeyHash,
        shape: Shape,
        nonce: u64,
        costs: [u64; MAX_LIMITS],
    ) -> Place {
        let mut lines = self.lines.lock_shard(hash.shard);
        let (line, new) = lines.get_or_insert_with(hash, key, || Line {
            shape,
            in_flight: 1,
            waiting: Vec::new(),
        });
        if new {
            return Place::Lead;
        }
        if line.shape != shape {
            return Place::Alone;
        }
        if line.in_flight < IN_FLIGHT && line.waiting.is_empty() {
            line.in_flight += 1;
            return Place::Lead;
        }
        let (turn, waits) = oneshot::channel();
        line.waiting.push(Member { nonce, costs, turn });
        Place::Wait(waits)
    }

    /// The hash of `key`'s line, for [`join`](Coalescer::join) and [`pass_on`](Coalescer::pass_on): taken
    /// once for both.
    pub(super) fn hash(&self, key: KeyRef<'_>) -> KeyHash {
        self.lines.hash(key)
    }

    /// After a round trip on `key` (whose hash is `hash`): hands its line to the first call waiting in it
    /// whose caller is still there, with at most [`MAX_BATCH`] - 1 calls waiting behind it (the rest wait for
    /// the next); closes the line when no one waits. `returned` are calls of a batch that was never sent:
    /// first in line again.
    fn pass_on(self: &Arc<Self>, key: KeyRef<'_>, hash: KeyHash, returned: Vec<Member>) {
        let mut lines = self.lines.lock_shard(hash.shard);
        let Some(line) = lines.get_mut(hash, key) else {
            // Only the holder of a line closes it: this cannot be, but no call is left waiting if it were.
            return fail(returned, &BackendError::Dropped);
        };
        line.waiting.splice(0..0, returned);
        while !line.waiting.is_empty() {
            let first = line.waiting.remove(0);
            let carried = line.waiting.len().min(MAX_BATCH - 1);
            let baton = Baton {
                line: Some((Arc::clone(self), key.to_store_key())),
                members: line.waiting.drain(..carried).collect(),
            };
            match first.turn.send(Turn::Lead(baton)) {
                Ok(()) => return,
                // Its caller is gone: the calls go back in line, in order, and the next one leads. (Taken, the
                // baton does not pass the line on: this shard is locked here.)
                Err(turn) => {
                    if let Turn::Lead(baton) = turn {
                        line.waiting.splice(0..0, baton.take());
                    }
                }
            }
        }
        line.in_flight -= 1;
        if line.in_flight == 0 {
            lines.remove(hash, key);
        }
    }
}

impl Baton {
    /// The calls it carries; it no longer passes the line on when dropped.
    fn take(mut self) -> Vec<Member> {
        self.line = None;
        std::mem::take(&mut self.members)
    }
}

impl Drop for Baton {
    fn drop(&mut self) {
        if let Some((coalescer, key)) = self.line.take() {
            // Its calls were never sent: they go back in line.
            let hash = coalescer.hash(key.parts());
            coalescer.pass_on(key.parts(), hash, std::mem::take(&mut self.members));
        }
    }
}

/// Tells each of `members` its batch failed: it may have been applied, and so is never retried.
fn fail(members: Vec<Member>, error: &BackendError) {
    for member in members {
        // A caller gone meanwhile misses its decision: it was decided degraded already.
        let _ = member.turn.send(Turn::Decided(Err(error.clone())));
    }
}

/// A batch in flight, as its leader holds it: when the leader is dropped before the answer (its deadline
/// passed), the calls it carried are told the batch failed, and the line passes on.
struct Leading<'a> {
    coalescer: &'a Arc<Coalescer>,
    key: KeyRef<'a>,
    hash: KeyHash,
    members: Vec<Member>,
    error: BackendError,
}

impl Leading<'_> {
    /// Tells each call carried what Redis decided of it (each its own decision, in the order sent, or the
    /// failure), and passes the line on.
    fn finish(mut self, decided: Result<(&[CallOutcome], u64), &BackendError>) {
        let members = std::mem::take(&mut self.members);
        let (each, now) = match decided {
            Ok(decided) => decided,
            Err(error) => return fail(members, error),
        };
        for (i, member) in members.into_iter().enumerate() {
            let result = match each.get(i) {
                Some(one) => Ok((one.clone(), now)),
                None => Err(BackendError::Reply("fewer decisions than calls".into())),
            };
            let _ = member.turn.send(Turn::Decided(result));
        }
    }
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        fail(std::mem::take(&mut self.members), &self.error);
        self.coalescer.pass_on(self.key, self.hash, Vec::new());
    }
}

impl RedisBackend {
    /// Decides `call` on `limits` (a whole call, on one slot) with the calls on the same key and limits that
    /// wait for the same round trip, or alone.
    pub(super) async fn decide_coalesced(
        &self,
        coalescer: &Arc<Coalescer>,
        connection: &mut Connection,
        key: KeyRef<'_>,
        limits: &[Limit<'_>],
        call: Call<'_>,
    ) -> Result<(CallOutcome, u64), BackendError> {
        let Some(shape) = Shape::of(limits.iter().map(Limit::shape)) else {
            return self.decide_alone(connection, limits, call).await;
        };
        let mut costs = [0; MAX_LIMITS];
        costs[..call.costs.len()].copy_from_slice(call.costs);
        let hash = coalescer.hash(key);
        let members = match coalescer.join(key, hash, shape, call.nonce, costs) {
            Place::Alone => return self.decide_alone(connection, limits, call).await,
            Place::Lead => Vec::new(),
            Place::Wait(turn) => match turn.await {
                Ok(Turn::Decided(decided)) => return decided,
                Ok(Turn::Lead(baton)) => baton.take(),
                // Whoever holds a call's turn tells it something before it goes.
                Err(_) => return Err(BackendError::Dropped),
            },
        };
        // From here the line is this call's to pass on, however it ends.
        let leading = Leading {
            coalescer,
            key,
            hash,
            members,
            error: BackendError::Timeout(self.deadline),
        };
        crate::observe::batch(1 + leading.members.len());
        // A call alone (the uncontended case) goes as it is; a batch, its leader first.
        let batch: Vec<Call<'_>> = match leading.members.is_empty() {
            true => Vec::new(),
            false => std::iter::once(call)
                .chain(leading.members.iter().map(|member| Call {
                    nonce: member.nonce,
                    costs: &member.costs[..limits.len()],
                }))
                .collect(),
        };
        let calls = if batch.is_empty() {
            &[call][..]
        } else {
            &batch
        };
        let decided = script::decide(connection, limits, calls, self.test_now()).await;
        match decided {
            Ok((mut decided, now)) if !decided.is_empty() => {
                leading.finish(Ok((&decided[1..], now)));
                Ok((decided.swap_remove(0), now))
            }
            Ok(_) => {
                let error = BackendError::Reply("no decision".into());
                leading.finish(Err(&error));
                Err(error)
            }
            Err(error) => {
                leading.finish(Err(&error));
                Err(error)
            }
        }
    }

    /// Decides `call` alone, in one script call.
    pub(super) async fn decide_alone(
        &self,
        connection: &mut Connection,
        limits: &[Limit<'_>],
        call: Call<'_>,
    ) -> Result<(CallOutcome, u64), BackendError> {
        let (decided, now) = script::decide(connection, limits, &[call], self.test_now()).await?;
        let one = decided.into_iter().next();
        one.map(|one| (one, now))
            .ok_or_else(|| BackendError::Reply("no decision".into()))
    }
}

#[cfg(test)]
mod tests;
