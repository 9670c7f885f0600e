//! Where counts live, each backend owning what it needs: this process's memory, or Redis (one global count for
//! every node) with what decides when Redis cannot.
//!
//! Both run the same algorithms on the same integers (see [`crate::algorithm`]). What the pipeline asks of a
//! store is small, as governor's `StateStore` is: [`decide`](Backend::decide) a [`Call`] (a [`Ruling`] now,
//! or a [`Pending`] one to await), and [`give_back`](Backend::give_back) what an admitted call charged. The
//! rest ([`operations`]) serves operators, off the decisions' path. A backend knows the call, not the rules'
//! defaults, the overrides or HTTP; nothing above it names a type of one store.

pub(crate) mod memory;
pub(crate) mod operations;
pub(crate) mod redis;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;

use crate::call::{AsCall, Call, Charged, Ruling};

pub(crate) use self::memory::{MemoryStore, DEFAULT_MAX_KEYS};
pub(crate) use self::redis::{one_limit_source, RedisBackend};
use self::redis::{InLine, ToAsk};

/// The backend of one limiter.
#[derive(Debug)]
pub(crate) enum Backend {
    Memory(MemoryStore),
    /// Shared with the background tasks that keep Redis's view current (heartbeats, overrides).
    Redis(Arc<RedisBackend>),
}

impl Backend {
    /// Creates a backend counting in this process's memory, which keeps at most `max_keys` keys.
    pub(crate) fn memory(clock: Arc<dyn crate::Clock>, max_keys: usize) -> Backend {
        Backend::Memory(MemoryStore::new(clock, max_keys))
    }

    /// Decides `call` now if this process can: in memory, always; with Redis, from a lease, a denial Redis
    /// already gave, or the breaker open. Else returns what is left to await ([`Pending`]).
    #[inline(always)]
    pub(crate) fn decide(&self, call: &Call<'_>) -> Result<Ruling, Pending> {
        match self {
            Backend::Memory(memory) => Ok(memory.rule(call)),
            Backend::Redis(redis) => redis.decide_now(call).map_err(Pending),
        }
    }

    /// Gives back `units[i]` of what each limit `i` of an admitted `call` charged (as `ruling` says): exactly,
    /// in any order, unless a charge has left its limit already (then nothing), never more. In memory at once;
    /// with Redis, one script call to await.
    pub(crate) fn give_back<'a>(
        &'a self,
        call: &'a Call<'a>,
        ruling: &'a Ruling,
        units: &'a [u64],
    ) -> GivingBack<'a> {
        match self {
            Backend::Memory(memory) => {
                let given = call.limits().iter().zip(ruling.limits.iter()).zip(units);
                for ((limit, part), &units) in given {
                    // Nothing to give back (a permit in flight given back is one of any units).
                    if part.charged != Charged::Nothing && units > 0 {
                        let units = units.min(limit.terms.cost);
                        memory.give_back(limit, &limit.terms, units, &part.receipt);
                    }
                }
                GivingBack(None)
            }
            Backend::Redis(redis) => {
                GivingBack(Some(Box::pin(redis.give_back(call, ruling, units))))
            }
        }
    }
}

/// A call a store could not decide at once: with Redis, the batch it waits in, or its own round trip. Either
/// way within the deadline, else decided by each limit's failure policy.
pub(crate) struct Pending(ToAsk);

impl Pending {
    /// Returns the future of what `then` makes of `call` and its ruling, `call` held (owned or borrowed)
    /// until then: polled in place while the call waits in a batch (no box, no timer, no channel); its own
    /// round trip boxed with `then` inside (that future is large and should not weigh on every call's, and
    /// what comes out of the box is what the caller keeps, not the call and its ruling).
    #[inline(always)]
    pub(crate) fn settle<'a, C, F>(self, call: C, then: F) -> Settling<'a, C, F>
    where
        C: AsCall + Send + 'a,
        F: Then<C> + Send + 'a,
        F::Output: Send + 'a,
    {
        match self.0.in_line() {
            Ok(in_line) => Settling::InLine(in_line, Some((call, then))),
            Err(to_ask) => Settling::Trip(Box::pin(async move {
                let ruling = RedisBackend::decide_later(call.as_call(), to_ask).await;
                then.then(call, ruling)
            })),
        }
    }

    /// Returns `call`'s ruling, unboxed: for a caller whose own future is boxed already.
    pub(crate) async fn ruling(self, call: &Call<'_>) -> Ruling {
        match self.0.in_line() {
            Ok(mut in_line) => std::future::poll_fn(|cx| in_line.poll_ruling(call, cx)).await,
            Err(to_ask) => RedisBackend::decide_later(call, to_ask).await,
        }
    }
}

/// What a caller makes of a call and its ruling once a [`Pending`] one is settled ([`Pending::settle`]).
pub(crate) trait Then<C> {
    /// What the caller keeps.
    type Output;

    /// Makes what the caller keeps of `call` and its `ruling`.
    fn then(self, call: C, ruling: Ruling) -> Self::Output;
}

/// The future of a [`Pending`] call ([`Pending::settle`]): what `F` makes of the call and its ruling.
pub(crate) enum Settling<'a, C, F: Then<C>> {
    /// Waiting in a batch, with the call and what follows, taken once its ruling is in.
    InLine(InLine, Option<(C, F)>),
    /// Its own round trip, boxed, and what follows.
    Trip(BoxFuture<'a, F::Output>),
}

impl<C: AsCall, F: Then<C> + Unpin> Future for Settling<'_, C, F> {
    type Output = F::Output;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        match self.get_mut() {
            Settling::InLine(in_line, held) => {
                let (call, _) = held.as_ref().expect("a ruling polled after it completed");
                let ruling = std::task::ready!(in_line.poll_ruling(call.as_call(), cx));
                let (call, then) = held.take().expect("a ruling polled after it completed");
                Poll::Ready(then.then(call, ruling))
            }
            Settling::Trip(trip) => trip.as_mut().poll(cx),
        }
    }
}

/// What [`Backend::give_back`] has left to await: nothing in memory, the script call with Redis.
#[must_use = "a charge is given back in Redis only when this is awaited"]
pub(crate) struct GivingBack<'a>(Option<Pin<Box<dyn Future<Output = ()> + Send + 'a>>>);

impl Future for GivingBack<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &mut self.0 {
            None => Poll::Ready(()),
            Some(giving) => giving.as_mut().poll(cx),
        }
    }
}
