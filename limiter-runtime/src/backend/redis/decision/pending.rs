//! A call Redis is still to decide: what is left of it once this process has done what it can ([`ToAsk`]),
//! and, when it joined a batch, its place there ([`InLine`]). [`order`](super::order) makes and settles them.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::backend::redis::failure::breaker::Route;
use crate::backend::redis::sparing::coalesce::Waiting;
use crate::backend::redis::sparing::lease::HeldLease;
use crate::backend::redis::RedisBackend;
use crate::call::LeaseTerms;

/// What Redis is to decide of a call this process could not decide at once.
pub(crate) struct ToAsk {
    pub(super) redis: Arc<RedisBackend>,
    pub(super) permit: Route,
    /// When the call was asked (this node's clock).
    pub(super) sent: Duration,
    /// Whether the deny cache is to hear what Redis answers (it may hold this call's denial).
    pub(super) cached: bool,
    /// This call re-asks Redis for a call whose cached denial ran out.
    pub(super) probe: bool,
    /// This call (of one leased limit) takes a lease on it, or waits for the one another call is taking.
    pub(super) lease: Option<LeaseStep>,
    /// The batch the call waits in, joined at once (see [`RedisBackend::wait_in_line`]).
    pub(super) waiting: Option<Waiting>,
}

impl ToAsk {
    /// Returns the call's place in the batch it waits in, if it waits in one; else this, for a round trip.
    #[inline]
    pub(crate) fn in_line(self) -> Result<InLine, ToAsk> {
        match self.waiting {
            Some(waiting) => Ok(InLine {
                waiting,
                redis: self.redis,
                sent: self.sent,
                cached: self.cached,
                probe: self.probe,
            }),
            None => Err(self),
        }
    }
}

/// A call of one limit waiting in a batch ([`ToAsk::in_line`]): its place, and what follows its decision (see
/// [`follow_up`](RedisBackend::follow_up)). Polled in place by its caller: nothing boxed, no timer, no channel.
pub(crate) struct InLine {
    pub(super) waiting: Waiting,
    pub(super) redis: Arc<RedisBackend>,
    pub(super) sent: Duration,
    pub(super) cached: bool,
    pub(super) probe: bool,
}

/// What a call of one leased limit does about its lease before asking Redis.
pub(in crate::backend::redis) enum LeaseStep {
    /// Take one, with its terms, giving back what is left of the lease this node held before.
    Take {
        terms: LeaseTerms,
        back: Option<Box<HeldLease>>,
    },
    /// Wait until the call taking one is done (the receiver says when), then spend it.
    Wait(watch::Receiver<()>),
}
