//! Coalescing: calls on the same key and limits that arrive while a few of them are with Redis wait for one
//! of those round trips to end, then go to Redis together, as one script call carrying them all. The script
//! decides them in arrival order, each exactly as it would have been alone (its own admission, its own
//! sliding-log members, its own receipt), so every guarantee holds unchanged; one hot key then costs Redis one
//! script call per round trip instead of one per call. There is no timer: a call that finds fewer than
//! [`IN_FLIGHT`] round trips of its line in flight is sent at once; a call whose key no other call is asking
//! about needs no line at all ([`Coalescer::go_sole`]).
//!
//! Each call key has a line while a call for it is in flight. A call that goes at once sends its own script
//! call. A call that finds the line full joins the [`Batch`] gathering at its end (a new one when there is
//! none, or the last is full) and waits for it: no channel, no timer and nothing boxed of its own. When a
//! round trip of the line ends, the first batch gathering takes its place, sent by a task of its own, and
//! every call of it reads its own decision from the batch once that is in. A batch's deadline runs from when
//! its first call joined: it is decided degraded (and reconciled with Redis's late answer) if it is not
//! decided by then, so no call waits longer than its deadline.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::call::{Call, Decided};
use crate::key::KeyRef;
use crate::sharded::{KeyHash, Keys, Sharded};

/// Calls of more limits than this are sent alone.
pub(super) const MAX_LIMITS: usize = 4;
/// The most calls one script call carries: Redis runs a script to its end, blocking every other client
/// meanwhile, so a batch stays short (about a millisecond of Redis's time at most).
const MAX_BATCH: usize = 128;
/// Round trips of one line in flight at once: a call that finds fewer is sent at once; the rest wait for a
/// round trip to end. More than one keeps Redis busy while a batch travels: on one hot key at 16 tasks, one
/// batch in flight made 0.61x the uncoalesced baseline's decisions/s, four 0.96-1.05x (64 tasks: 1.8x, then
/// 3.0x); eight did no better than four (load --only hot, in turns).
const IN_FLIGHT: usize = 4;
/// Shards of the lines: enough that calls on different keys rarely meet.
const SHARDS: usize = 16;
/// Buckets of keys (by hash) for the calls that go without a line.
const SOLE: usize = 4096;

/// The lines of the call keys in flight.
#[derive(Debug)]
pub(crate) struct Coalescer {
    /// Hashed with foldhash, not SipHash: only the keys of calls under way have a line, so colliding keys
    /// would cost no more than the calls that make them, and every call to Redis hashes its key here.
    lines: Sharded<Keys<Line>, foldhash::fast::RandomState>,
    /// For each bucket of keys, whether a call of it is in flight without a line. The common call, on a key
    /// no other call is asking about, goes so: a flag to raise and lower, no line to open and close. A call
    /// that finds its bucket's flag raised goes by its key's line, so a line has at most one round trip in
    /// flight beyond [`IN_FLIGHT`].
    sole: Box<[AtomicBool]>,
}

/// What the script is told of a call's limits, but their costs, and how each fails: calls go together only
/// when it is the same, so that a batch is decided, and degraded, under one set of limits.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    len: usize,
    limits: [[u64; 8]; MAX_LIMITS],
}

/// The limits a shape has, not the rows it leaves zero: a call of one limit compares one row.
impl PartialEq for Shape {
    #[inline]
    fn eq(&self, other: &Shape) -> bool {
        self.len == other.len && self.limits[..self.len] == other.limits[..other.len]
    }
}

impl Eq for Shape {}

impl Shape {
    /// The shape of `call`'s limits, each given as the script's shape and its failure policy; `None` past
    /// [`MAX_LIMITS`].
    pub(super) fn of(call: &Call<'_>) -> Option<Shape> {
        let limits = call.limits();
        if limits.len() > MAX_LIMITS {
            return None;
        }
        let mut shape = Shape {
            len: limits.len(),
            limits: [[0; 8]; MAX_LIMITS],
        };
        for (slot, limit) in shape.limits.iter_mut().zip(limits) {
            let [code, window, max, depth, e0, e1, e2] = super::script::shape(limit);
            *slot = [code, window, max, depth, e0, e1, e2, limit.on_error as u64];
        }
        Some(shape)
    }
}

/// One call key's line: the shape of its calls, its round trips in flight, and the batches gathering.
#[derive(Debug)]
struct Line {
    shape: Shape,
    /// Round trips in flight: at most [`IN_FLIGHT`].
    in_flight: usize,
    gathering: VecDeque<Arc<Batch>>,
}

impl Line {
    /// Adds `member` (of `call`, whose deadline is `until`) to the last batch gathering, or to a new one
    /// when there is none or it is full: the batch, and the member's index in it.
    fn gather(&mut self, call: &Call<'_>, member: Member, until: Duration) -> (Arc<Batch>, usize) {
        if let Some(batch) = self.gathering.back() {
            let mut gathered = batch.lock();
            if gathered.members.len() < MAX_BATCH {
                let index = gathered.join(member);
                drop(gathered);
                return (Arc::clone(batch), index);
            }
        }
        let batch = Arc::new(Batch::new(call, until));
        batch.lock().join(member);
        self.gathering.push_back(Arc::clone(&batch));
        (batch, 0)
    }
}

/// One call of a batch: its nonce (naming its sliding-log members) and its cost on each limit.
#[derive(Debug, Clone, Copy)]
pub(super) struct Member {
    pub(super) nonce: u64,
    pub(super) costs: [u64; MAX_LIMITS],
}

/// Calls on one key and limits going to Redis together: gathered while the line is full, sent by a task of
/// its own when a round trip of the line ends, decided as one script call.
#[derive(Debug)]
pub(crate) struct Batch {
    /// The call every member shares but its costs, detached from the call that started the batch.
    pub(super) call: Call<'static>,
    /// Until when its calls wait (this node's clock): the deadline of the call that started it.
    pub(super) until: Duration,
    gathered: Mutex<Gathered>,
    /// Each member's decision, in the order they joined, once it is in.
    decided: OnceLock<Vec<Decided>>,
}

/// A batch's members, and the wakers of those waiting for its decisions.
#[derive(Debug, Default)]
struct Gathered {
    /// Taken when the batch is sent: no call joins it after.
    members: Vec<Member>,
    /// The waker of each member that has waited, at its index.
    wakers: Vec<Option<Waker>>,
}

/// Members a batch has room for before it grows: the batches of one hot key at 64 tasks hold about 8.
const ROOM: usize = 16;

impl Gathered {
    /// Adds `member`, with no waker yet: its index.
    #[inline]
    fn join(&mut self, member: Member) -> usize {
        self.members.push(member);
        self.wakers.push(None);
        self.wakers.len() - 1
    }
}

/// A member of a batch waiting for its decision: no channel, no timer of its own (the batch's sender decides
/// it degraded by its deadline); every member is woken at once when the batch is decided.
#[derive(Debug)]
pub(crate) struct Waiting {
    batch: Arc<Batch>,
    index: usize,
}

/// Where a call stands on joining its line.
#[derive(Debug)]
pub(super) enum Place {
    /// Fewer than [`IN_FLIGHT`] round trips were in flight: it goes at once.
    Lead,
    /// The line was full: it waits in this batch, as its member at this index.
    Wait(Arc<Batch>, usize),
    /// Calls on other limits were in flight for the same key (an override between the two, say): it goes
    /// alone.
    Alone,
}

impl Default for Coalescer {
    fn default() -> Self {
        Coalescer {
            lines: Sharded::new(SHARDS),
            sole: (0..SOLE).map(|_| AtomicBool::new(false)).collect(),
        }
    }
}

impl Batch {
    /// A batch of `call`'s line, waiting until `until` at the latest.
    fn new(call: &Call<'_>, until: Duration) -> Batch {
        Batch {
            call: call.detached(),
            until,
            gathered: Mutex::new(Gathered {
                members: Vec::with_capacity(ROOM),
                wakers: Vec::with_capacity(ROOM),
            }),
            decided: OnceLock::new(),
        }
    }

    /// Its members, in the order they joined: taken once it is sent (none joins it after).
    pub(super) fn members(&self) -> Vec<Member> {
        std::mem::take(&mut self.lock().members)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Gathered> {
        self.gathered.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands each member its decision (in the order they joined) and wakes those waiting: once.
    pub(super) fn decide(&self, decided: Vec<Decided>) {
        if self.decided.set(decided).is_err() {
            return;
        }
        // Set before the wakers are taken: a member that looks after this finds its decision in.
        let wakers = std::mem::take(&mut self.lock().wakers);
        wakers.into_iter().flatten().for_each(Waker::wake);
    }

    /// The member at `index` waiting for its decision.
    pub(super) fn wait(self: Arc<Self>, index: usize) -> Waiting {
        Waiting { batch: self, index }
    }
}

impl Future for Waiting {
    type Output = Decided;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Decided> {
        let (batch, index) = (&self.batch, self.index);
        if let Some(decided) = batch.decided.get() {
            return Poll::Ready(decided[index].clone());
        }
        let mut gathered = batch.lock();
        // Decided meanwhile: its wakers are taken, or about to be.
        if let Some(decided) = batch.decided.get() {
            return Poll::Ready(decided[index].clone());
        }
        // Every member joined with its slot; this only keeps a slot for one that did not.
        if gathered.wakers.len() <= index {
            gathered.wakers.resize(index + 1, None);
        }
        match &mut gathered.wakers[index] {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            slot => *slot = Some(cx.waker().clone()),
        }
        Poll::Pending
    }
}

impl Coalescer {
    /// Joins the line of `key` (whose hash is `hash`) for a call of `shape` (`call`, as `member`: its nonce
    /// and its costs on the limits Redis is asked about), whose deadline is `until` (this node's clock).
    pub(super) fn join(
        &self,
        (key, hash): (KeyRef<'_>, KeyHash),
        shape: Shape,
        call: &Call<'_>,
        member: Member,
        until: Duration,
    ) -> Place {
        let mut lines = self.lines.lock_shard(hash.shard);
        let (line, new) = lines.get_or_insert_with(hash, key, || Line {
            shape,
            in_flight: 1,
            gathering: VecDeque::new(),
        });
        if new {
            return Place::Lead;
        }
        if line.shape != shape {
            return Place::Alone;
        }
        if line.in_flight < IN_FLIGHT && line.gathering.is_empty() {
            line.in_flight += 1;
            return Place::Lead;
        }
        let (batch, index) = line.gather(call, member, until);
        Place::Wait(batch, index)
    }

    /// Joins the line of `key` only to wait in a batch: when it is full, and its calls are of `shape` (see
    /// [`join`](Coalescer::join)); else the line is left as it was, for the call to join it later.
    pub(super) fn join_waiting(
        &self,
        (key, hash): (KeyRef<'_>, KeyHash),
        shape: Shape,
        call: &Call<'_>,
        member: Member,
        until: Duration,
    ) -> Option<Waiting> {
        let mut lines = self.lines.lock_shard(hash.shard);
        let line = lines.get_mut(hash, key)?;
        let full = line.in_flight >= IN_FLIGHT || !line.gathering.is_empty();
        if !full || line.shape != shape {
            return None;
        }
        let (batch, index) = line.gather(call, member, until);
        Some(batch.wait(index))
    }

    /// Whether a call of `hash`'s bucket is in flight without a line: a call on its key may find its line
    /// full.
    #[inline]
    pub(super) fn busy(&self, hash: KeyHash) -> bool {
        self.sole[hash.bucket(SOLE)].load(Ordering::Relaxed)
    }

    /// Whether a call on the key of `hash` goes without a line (no call of its bucket is in flight without
    /// one): then it is sent at once, and [`leave`](Coalescer::leave)s once its round trip ends.
    #[inline]
    pub(super) fn go_sole(&self, hash: KeyHash) -> bool {
        let flag = &self.sole[hash.bucket(SOLE)];
        !flag.load(Ordering::Relaxed) && !flag.swap(true, Ordering::Acquire)
    }

    /// After the round trip of a call that went without a line ([`go_sole`](Coalescer::go_sole)).
    #[inline]
    pub(super) fn leave(&self, hash: KeyHash) {
        self.sole[hash.bucket(SOLE)].store(false, Ordering::Release);
    }

    /// The hash of `key`'s line, for [`join`](Coalescer::join) and [`pass_on`](Coalescer::pass_on): taken
    /// once for both.
    pub(super) fn hash(&self, key: KeyRef<'_>) -> KeyHash {
        self.lines.hash(key)
    }

    /// [`hash`](Coalescer::hash) of a key written out whole.
    #[inline]
    pub(super) fn hash_whole(&self, key: &str) -> KeyHash {
        self.lines.hash_whole(key)
    }

    /// After a round trip on `key` (whose hash is `hash`) ended: the first batch gathering takes its place,
    /// to be sent (returned); with none, the line has one round trip fewer in flight, and closes when none is
    /// left.
    pub(super) fn pass_on(&self, key: KeyRef<'_>, hash: KeyHash) -> Option<Arc<Batch>> {
        let mut lines = self.lines.lock_shard(hash.shard);
        let line = lines.get_mut(hash, key)?;
        if let Some(batch) = line.gathering.pop_front() {
            return Some(batch);
        }
        line.in_flight -= 1;
        if line.in_flight == 0 {
            lines.remove(hash, key);
        }
        None
    }
}

#[cfg(test)]
mod tests;
