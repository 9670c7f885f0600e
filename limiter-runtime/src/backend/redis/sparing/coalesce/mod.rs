//! Batching: calls that arrive while [`IN_FLIGHT`] script calls are in flight on their line wait for one of
//! those round trips to end, then go to Redis together, as one script call carrying them all, whatever their
//! keys, algorithms, costs and limits. The script decides them in arrival order, each exactly as it would have
//! been alone (its own key's atomicity, all or nothing for a stacked call, its own units in a sliding log, its
//! own receipt), so every guarantee holds unchanged; Redis then pays one command per batch instead of one per
//! call, and the client one redis-rs command.
//!
//! A line is what one script call may carry ([`Line`]). By default, on a server (standalone, or the master
//! Sentinel names), any calls; with [`batch_across_keys(false)`](crate::LimiterBuilder::batch_across_keys),
//! calls on the same keys: one hot key then still costs Redis one script call per round trip instead of one
//! per call. On a cluster, always calls on the same keys: a slot being migrated answers
//! `TRYAGAIN` to a script call whose keys it holds only some of, and the cluster client waits over a second
//! before it tries again, so a batch of a slot's many keys would miss its deadline for as long as a migration
//! lasts.
//!
//! There is no timer: a call that finds fewer than [`IN_FLIGHT`] script calls of its line in flight is sent
//! at once, alone, so nothing waits when the service is idle. A call that finds the line full joins the
//! [`Batch`] gathering at its end (a new one when there is none, or the last is full) and waits for it: no
//! channel, no timer and nothing boxed of its own. When a round trip of the line ends, the first batch
//! gathering takes its place, sent by a task of its own, and every call of it reads its own decision from the
//! batch once that is in. A batch's deadline is the earliest of its calls': it is decided degraded (each call
//! by its own `on_error`, and reconciled with Redis's late answer) if it is not decided by then, so no call
//! waits longer than its own deadline.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::call::{Call, Ruling};

/// Script calls of one line in flight at once: a call that finds fewer is sent at once; the rest wait for a
/// round trip to end. More than one keeps Redis busy while a batch travels.
const IN_FLIGHT: usize = 4;
/// The most calls one script call carries.
const MAX_CALLS: usize = 64;
/// The most limits one script call decides: Redis runs a script to its end, blocking every other client
/// meanwhile, so a batch stays short. A limit's decision costs Redis 4-8 µs (the sliding log's, on 10,000
/// keys), so this bounds a batch near a millisecond of Redis's time.
const MAX_LIMITS: usize = 128;

/// Buckets of keys on a server: calls on keys of one bucket share its line.
const BUCKETS: usize = 256;

/// What one script call may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// Any calls, on a server: batches across keys.
    Server,
    /// Calls on keys of one bucket (by their hash), on a server: in effect, calls on the same keys, with no
    /// key to copy. Two keys that fall in one bucket may share a script call, which a server runs as well.
    Bucket(usize),
    /// Calls on these very keys (their lengths and keys, written out), on a cluster.
    Keys(Box<str>),
}

/// The lines with script calls in flight, and the batches gathering on each.
#[derive(Debug)]
pub(crate) struct Coalescer {
    /// Whether calls on different keys of a server share its one line.
    across_keys: bool,
    /// A server's one line, always open.
    server: Mutex<Lane>,
    /// A server's lines by buckets of keys, always open.
    buckets: Box<[Mutex<Lane>]>,
    /// A cluster's lines, by keys, each open while a script call of it is in flight.
    keys: Mutex<HashMap<Box<str>, Lane, foldhash::fast::RandomState>>,
    /// Hashes the keys of a call into its bucket.
    hasher: foldhash::fast::RandomState,
}

/// One line's script calls in flight, and the batches gathering behind them.
#[derive(Debug, Default)]
struct Lane {
    /// Script calls in flight: at most [`IN_FLIGHT`].
    in_flight: usize,
    gathering: VecDeque<Arc<Batch>>,
}

impl Lane {
    /// Returns whether a call finding the lane so waits in a batch.
    fn is_full(&self) -> bool {
        self.in_flight >= IN_FLIGHT || !self.gathering.is_empty()
    }

    /// Adds the member `join` makes (deciding `limits` limits, by `until` at the latest) to the last batch
    /// gathering, or to a new one when there is none or it is full: the batch, and the member's index in it.
    fn gather(
        &mut self,
        line: &Line,
        join: Joining<impl FnOnce() -> Member>,
    ) -> (Arc<Batch>, usize) {
        if let Some(batch) = self.gathering.back() {
            let mut gathered = batch.lock();
            if gathered.has_room(join.limits) {
                let index = gathered.join(join);
                drop(gathered);
                return (Arc::clone(batch), index);
            }
        }
        let batch = Arc::new(Batch::new(line.clone(), join.until));
        batch.lock().join(join);
        self.gathering.push_back(Arc::clone(&batch));
        (batch, 0)
    }
}

/// A call joining a line: how it becomes a member of a batch (made only if it waits in one), how many limits
/// Redis decides of it, and its deadline (this node's clock).
pub(in crate::backend::redis) struct Joining<F> {
    pub(in crate::backend::redis) member: F,
    pub(in crate::backend::redis) limits: usize,
    pub(in crate::backend::redis) until: Duration,
}

/// One call of a batch, holding what it needs: the call, and its nonce (naming its sliding-log members and
/// its permits).
#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) call: Call<'static>,
    pub(crate) nonce: u64,
}

/// Calls of one line going to Redis together: gathered while the line is full, sent by a task of its own when
/// a round trip of the line ends, decided as one script call.
#[derive(Debug)]
pub(crate) struct Batch {
    /// Where it goes.
    pub(in crate::backend::redis) line: Line,
    gathered: Mutex<Gathered>,
    /// Each member's decision, in the order they joined, once it is in.
    decided: OnceLock<Vec<Ruling>>,
}

/// What gives back the decision of a member whose caller went away without reading it: what Redis charged
/// for it must not stay (see [`Batch::deliver`]).
pub(crate) type Orphans = Arc<dyn Fn(&Member, &Ruling) + Send + Sync>;

/// A batch's members, the wakers of those waiting for their decisions, and its bounds.
struct Gathered {
    /// Taken when the batch is sent: no call joins it after; put back once it is decided, for a caller that
    /// goes away without reading its decision to give it back.
    members: Vec<Member>,
    /// The members whose callers went away before the batch was decided.
    dropped: Vec<usize>,
    /// What gives back a decision its caller will never read, once the batch is decided.
    orphans: Option<Orphans>,
    /// The waker of each member that has waited, at its index.
    wakers: Vec<Option<Waker>>,
    /// The limits Redis decides of its members.
    limits: usize,
    /// Until when its calls wait: the earliest of their deadlines.
    until: Duration,
}

/// Returns the lane behind `lane`'s lock.
fn lock(lane: &Mutex<Lane>) -> MutexGuard<'_, Lane> {
    lane.lock().unwrap_or_else(PoisonError::into_inner)
}

impl std::fmt::Debug for Gathered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gathered")
            .field("members", &self.members.len())
            .field("dropped", &self.dropped)
            .field("limits", &self.limits)
            .field("until", &self.until)
            .finish_non_exhaustive()
    }
}

/// Members a batch has room for before it grows.
const ROOM: usize = 16;

impl Gathered {
    /// Returns whether a call of `limits` limits may join.
    fn has_room(&self, limits: usize) -> bool {
        self.members.len() < MAX_CALLS && self.limits + limits <= MAX_LIMITS
    }

    /// Adds the member `join` makes, with no waker yet: its index.
    #[inline]
    fn join(&mut self, join: Joining<impl FnOnce() -> Member>) -> usize {
        self.members.push((join.member)());
        self.wakers.push(None);
        self.limits += join.limits;
        self.until = self.until.min(join.until);
        self.wakers.len() - 1
    }
}

/// A member of a batch waiting for its decision: no channel, no timer of its own (the batch's sender decides
/// it degraded by its deadline); every member is woken at once when the batch is decided. Dropped before it
/// has read its decision, it has that decision given back.
#[derive(Debug)]
pub(crate) struct Waiting {
    batch: Arc<Batch>,
    index: usize,
    /// Whether its decision was read.
    read: bool,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.read {
            return;
        }
        let mut gathered = self.batch.lock();
        match (self.batch.decided.get(), &gathered.orphans) {
            (Some(decided), Some(orphans)) => {
                if let (Some(member), Some(decided)) =
                    (gathered.members.get(self.index), decided.get(self.index))
                {
                    orphans(member, decided);
                }
            }
            _ => gathered.dropped.push(self.index),
        }
    }
}

/// Where a call stands on joining its line.
#[derive(Debug)]
pub(in crate::backend::redis) enum Place {
    /// Fewer than [`IN_FLIGHT`] script calls were in flight: it goes at once, alone.
    Lead,
    /// The line was full: it waits in this batch, as its member at this index.
    Wait(Arc<Batch>, usize),
}

impl Batch {
    /// Creates a batch of `line`, waiting until `until` at the latest.
    fn new(line: Line, until: Duration) -> Batch {
        Batch {
            line,
            gathered: Mutex::new(Gathered {
                members: Vec::with_capacity(ROOM),
                dropped: Vec::new(),
                orphans: None,
                wakers: Vec::with_capacity(ROOM),
                limits: 0,
                until,
            }),
            decided: OnceLock::new(),
        }
    }

    /// Returns its members, in the order they joined, and until when they wait: taken once it is sent (none joins it
    /// after).
    pub(in crate::backend::redis) fn members(&self) -> (Vec<Member>, Duration) {
        let mut gathered = self.lock();
        (std::mem::take(&mut gathered.members), gathered.until)
    }

    fn lock(&self) -> MutexGuard<'_, Gathered> {
        self.gathered.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands each of `members` its decision (in the order they joined) and wakes those waiting: once. The
    /// decision of a member whose caller has gone away goes to `orphans`, now, or when its caller goes away
    /// later without reading it.
    pub(in crate::backend::redis) fn deliver(
        &self,
        members: Vec<Member>,
        decided: Vec<Ruling>,
        orphans: Orphans,
    ) {
        let mut gathered = self.lock();
        // Set under the lock that a caller going away takes: each orphan is given back once, here or there.
        if self.decided.set(decided).is_err() {
            return;
        }
        if let Some(decided) = self.decided.get() {
            for &index in &gathered.dropped {
                if let (Some(member), Some(decided)) = (members.get(index), decided.get(index)) {
                    orphans(member, decided);
                }
            }
        }
        gathered.members = members;
        gathered.orphans = Some(orphans);
        let wakers = std::mem::take(&mut gathered.wakers);
        drop(gathered);
        wakers.into_iter().flatten().for_each(Waker::wake);
    }

    /// Returns the member at `index` waiting for its decision.
    pub(in crate::backend::redis) fn wait(self: Arc<Self>, index: usize) -> Waiting {
        Waiting {
            batch: self,
            index,
            read: false,
        }
    }
}

impl Future for Waiting {
    type Output = Ruling;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Ruling> {
        if let Some(decided) = self.batch.decided.get() {
            let decided = decided[self.index].clone();
            self.read = true;
            return Poll::Ready(decided);
        }
        let (batch, index) = (&self.batch, self.index);
        let mut gathered = batch.lock();
        // Decided meanwhile: its wakers are taken, or about to be.
        if let Some(decided) = batch.decided.get() {
            let decided = decided[index].clone();
            drop(gathered);
            self.read = true;
            return Poll::Ready(decided);
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
    /// Creates the lines of a limiter: calls of different keys share a server's when `across_keys`.
    pub(crate) fn new(across_keys: bool) -> Coalescer {
        Coalescer {
            across_keys,
            server: Mutex::default(),
            buckets: (0..BUCKETS).map(|_| Mutex::default()).collect(),
            keys: Mutex::default(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// Returns the line of a call on `keys` (of a cluster, or not).
    pub(in crate::backend::redis) fn line_of<'k>(
        &self,
        cluster: bool,
        keys: impl Iterator<Item = &'k str>,
    ) -> Line {
        use std::fmt::Write as _;
        use std::hash::{BuildHasher, Hasher};
        match (cluster, self.across_keys) {
            (true, _) => {
                let mut line = String::new();
                for key in keys {
                    // Each key's length first: no two lists of keys make one line.
                    let _ = write!(line, "{}:{key}|", key.len());
                }
                Line::Keys(line.into())
            }
            (false, true) => Line::Server,
            (false, false) => {
                let mut hasher = self.hasher.build_hasher();
                for key in keys {
                    hasher.write(key.as_bytes());
                    hasher.write_u8(0xff);
                }
                Line::Bucket(hasher.finish() as usize % BUCKETS)
            }
        }
    }

    /// Runs `f` on `line`'s lane (opened if `open`), under its lock: `None` when it is not open. A cluster's
    /// lane closes once `f` leaves it with nothing in flight.
    fn with_lane<R>(&self, line: &Line, open: bool, f: impl FnOnce(&mut Lane) -> R) -> Option<R> {
        let keys = match line {
            Line::Server => return Some(f(&mut lock(&self.server))),
            Line::Bucket(bucket) => return Some(f(&mut lock(&self.buckets[*bucket]))),
            Line::Keys(keys) => keys,
        };
        let mut lanes = self.keys.lock().unwrap_or_else(PoisonError::into_inner);
        let lane = match lanes.get_mut(keys) {
            Some(lane) => lane,
            None if open => lanes.entry(keys.clone()).or_default(),
            None => return None,
        };
        let result = f(lane);
        if lane.in_flight == 0 && lane.gathering.is_empty() {
            lanes.remove(keys);
        }
        Some(result)
    }

    /// Joins `line` for a call: it goes at once when fewer than [`IN_FLIGHT`] script calls of the line are in
    /// flight (and then hands the line [`on`](Coalescer::pass_on) once its round trip ends); else it waits in
    /// the batch gathering, as the member `join` makes.
    pub(in crate::backend::redis) fn join(
        &self,
        line: &Line,
        join: Joining<impl FnOnce() -> Member>,
    ) -> Place {
        let joined = self.with_lane(line, true, |lane| {
            if !lane.is_full() {
                lane.in_flight += 1;
                return Place::Lead;
            }
            let (batch, index) = lane.gather(line, join);
            Place::Wait(batch, index)
        });
        joined.unwrap_or(Place::Lead)
    }

    /// Joins `line` only to wait in a batch, when it is full (see [`join`](Coalescer::join)); else the line
    /// is left as it was, for the call to join it later.
    pub(in crate::backend::redis) fn join_waiting(
        &self,
        line: &Line,
        join: Joining<impl FnOnce() -> Member>,
    ) -> Option<Waiting> {
        self.with_lane(line, false, |lane| {
            let full = lane.is_full();
            full.then(|| {
                let (batch, index) = lane.gather(line, join);
                batch.wait(index)
            })
        })
        .flatten()
    }

    /// Passes the turn on after a round trip of `line` ended: the first batch gathering takes its place, to be sent
    /// (returned); with none, the line has one script call fewer in flight.
    pub(in crate::backend::redis) fn pass_on(&self, line: &Line) -> Option<Arc<Batch>> {
        self.with_lane(line, false, |lane| {
            let next = lane.gathering.pop_front();
            if next.is_none() {
                lane.in_flight = lane.in_flight.saturating_sub(1);
            }
            next
        })
        .flatten()
    }
}

#[cfg(test)]
mod tests;
