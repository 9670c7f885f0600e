//! Calls to an upstream that wait their turn together ([`Limiter::turn`]; see
//! [`guide::outbound`](crate::guide::outbound)): the wait, the call's [`Turn`], and what its answer teaches
//! the fleet.

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use super::held::{HeldCall, Used};
use super::waiting::{patience, refusal, Waiting};
use super::Limiter;
use crate::call::Call;
use crate::outbound::upstream;
use crate::{Decision, Error, OnError, Penalty, Priority, RateLimited, Reason, Verdict};

impl Limiter {
    /// Waits for the turn of the call `call` builds (each time it asks again), of `priority`: what a
    /// [`turn`](Limiter::turn) request does.
    pub(crate) async fn turn_of(
        &self,
        priority: Priority,
        call: impl Fn() -> Call<'static>,
    ) -> Result<Turn, RateLimited> {
        let started = Instant::now();
        let mut deadline = None;
        loop {
            let mut call = call();
            let margin = outbound(&mut call);
            let deadline = *deadline.get_or_insert_with(|| started + patience(&call));
            let pipeline = &self.pipeline;
            // A pause this node heard of: nothing goes before it ends.
            if let Some(until) = pipeline.overrides.pauses.until(&call.limits()[0].key) {
                if until > deadline {
                    return Err(refusal(
                        &call,
                        None,
                        until - Instant::now(),
                        Verdict::Blocked,
                    ));
                }
                tokio::time::sleep_until(until.into()).await;
                continue;
            }
            let decided = pipeline.ruling(&call).await;
            let wait = match pipeline.slot_or_refusal(&call, &decided) {
                Ok(wait) => wait,
                Err(refused) => {
                    let again =
                        Instant::now() + refused.retry_after().max(Duration::from_millis(1));
                    if refused.reason() == Reason::TooLarge {
                        return Err(refused);
                    }
                    if again > deadline {
                        // Its deadline spent: the refusal says a wait, never none (a denial this node
                        // held may end as it is read).
                        return Err(match refused.retry_after().is_zero() {
                            true => {
                                refusal(&call, None, Duration::from_millis(1), Verdict::Limited)
                            }
                            false => refused,
                        });
                    }
                    // Spread over a slot: the refused callers of every node ask again in no fixed order,
                    // so each node wins slots in proportion to its callers, not by whose timer fires first.
                    let asks_at = (again + spread(&call)).min(deadline);
                    tokio::time::sleep_until(asks_at.into()).await;
                    continue;
                }
            };
            let held = HeldCall {
                limiter: self.clone(),
                call,
                decided,
            };
            let (held, slot) = Waiting::new(held)
                .on_the_dot()
                .turn(wait, priority, deadline)
                .await?;
            // A pause heard of while it waited: the slot goes back, and the call waits for the pause's end.
            if pipeline
                .overrides
                .pauses
                .until(&held.call.limits()[0].key)
                .is_some()
            {
                let costs = held.costs();
                held.give_back(&costs).await;
                continue;
            }
            // Later than its slot absorbs (a stalled task, a timer that fired late): sent now, it would land
            // closer than the spacing to the next slot's call, on any node. Its slot goes back and it asks
            // again, at the line's end.
            if margin.is_some_and(|margin| Instant::now() > slot + margin) {
                pipeline
                    .observers
                    .late_turn(held.call.limits()[0].key.parts().prefix);
                let costs = held.costs();
                held.give_back(&costs).await;
                continue;
            }
            return Ok(Turn {
                held: Some(held),
                waited: started.elapsed(),
            });
        }
    }
}

/// How much of a turn's slot is margin: a leaky bucket's slots for calls to an upstream are spaced by the
/// spacing its limit implies (`window / max`) and 1/32 of it more (3.1 ms at 10 calls a second), and a call
/// leaves within that margin after its slot or not at all. So two sends, from any nodes, are never closer
/// than the spacing, whichever of them left late.
pub(crate) const SLOT_MARGIN: u64 = 32;

/// Makes a call's limits those of a call to an upstream: each reads its key's block (where a pause is kept),
/// spends nothing from a lease (which would not see one), and fails to its node's share rather than open. A
/// leaky bucket spaces its slots by the spacing and its margin ([`SLOT_MARGIN`]). Returns the margin of the
/// first leaky bucket's slot, for the call's cost: how late after its slot the call may still leave.
fn outbound(call: &mut Call<'static>) -> Option<Duration> {
    let mut margin = None;
    call.each_limit(|limit| {
        if limit.algorithm == crate::Algorithm::LeakyBucket {
            let terms = &mut limit.terms;
            let extra = terms.window / SLOT_MARGIN;
            terms.window += extra;
            let slot = extra.saturating_mul(terms.cost.max(1)) / terms.max.max(1);
            margin.get_or_insert(Duration::from_micros(slot));
        }
        limit.penalty.get_or_insert(Penalty::READS_BLOCKS);
        limit.lease = None;
        if limit.on_error == OnError::Open {
            limit.on_error = OnError::Local;
        }
    });
    margin
}

/// Returns a random time within one slot of the call's first limit (its window over its max).
fn spread(call: &Call<'_>) -> Duration {
    use std::hash::BuildHasher;
    let terms = &call.limits()[0].terms;
    let slot = terms.window / terms.max.max(1);
    let random = std::hash::RandomState::new().hash_one(Instant::now());
    Duration::from_micros(random % slot.max(1))
}

/// A call's turn to go to an upstream ([`Limiter::turn`]): send the call, then tell the fleet what the
/// upstream answered ([`answered`](Turn::answered)), and settle what it used ([`settle`](Turn::settle)).
/// Dropped, it settles as charged: the call is taken to have been sent ([`cancel`](Turn::cancel) it if not),
/// and a permit in flight it held goes back.
#[must_use = "a turn is the call's slot: send the call, then tell the fleet what the upstream answered"]
pub struct Turn {
    held: Option<HeldCall>,
    waited: Duration,
}

impl Turn {
    /// Returns the decision of its first limit (the upstream's own).
    pub fn decision(&self) -> Decision {
        self.held().decision()
    }

    /// Returns each limit's decision, in the order given.
    pub fn decisions(&self) -> Vec<Decision> {
        self.held().decisions()
    }

    /// Returns how long the call waited for its turn.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// Tells the fleet what the upstream answered, `status` with `headers` (an [`http::HeaderMap`], or
    /// `(name, value)` pairs): a 429 or a 503 pauses the first limit's key on every node until its
    /// `Retry-After` (else the reset its quota fields give, else a second); quota fields that leave nothing
    /// (`RateLimit`, `RateLimit-Remaining`/`-Reset`, `X-RateLimit-Remaining`/`-Reset`) pause it until their
    /// reset, whatever the limit's own count says. One script call in Redis, and an announcement every node
    /// hears; at most an hour. Returns the pause now in force on the key, if the answer asked for one.
    ///
    /// [`http::HeaderMap`]: https://docs.rs/http/latest/http/header/struct.HeaderMap.html
    pub async fn answered<K, V>(
        &self,
        status: u16,
        headers: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Option<Duration>, Error>
    where
        K: AsRef<str>,
        V: AsRef<[u8]>,
    {
        let held = self.held();
        let pipeline = &held.limiter.pipeline;
        let limit = &held.call.limits()[0];
        if matches!(status, 429 | 503) {
            pipeline
                .observers
                .upstream_refusal(limit.key.parts().prefix, status);
        }
        let Some(learned) = upstream::learn(status, headers, SystemTime::now()) else {
            return Ok(None);
        };
        let micros = u64::try_from(learned.pause.as_micros()).unwrap_or(u64::MAX);
        tracing::info!(
            key = %limit.key.parts(),
            status,
            pause = ?learned.pause,
            "rate limiter: the upstream asked for a pause"
        );
        let left = pipeline
            .backend
            .operations()
            .pause(limit, micros, learned.status)
            .await?;
        let left = Duration::from_micros(left);
        pipeline.overrides.pauses.note(&limit.key, left);
        Ok(Some(left))
    }

    /// Settles to what the call actually used (see [`Used`]: a number for the first limit, a list for each,
    /// say `[1, 250]` for a request and the tokens its answer spent): gives back the rest, say the tokens an
    /// estimate reserved and the answer did not spend.
    pub async fn settle(mut self, used: impl Used) {
        if let Some(held) = self.held.take() {
            held.give_back(&held.unused(&used)).await;
        }
    }

    /// Gives back everything the turn was charged: the call was not sent.
    pub async fn cancel(mut self) {
        if let Some(held) = self.held.take() {
            let costs = held.costs();
            held.give_back(&costs).await;
        }
    }

    fn held(&self) -> &HeldCall {
        self.held.as_ref().expect("a turn is settled once")
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            let permits = held.permits();
            held.give_back_now(permits);
        }
    }
}

impl fmt::Debug for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Turn");
        if let Some(held) = &self.held {
            debug.field("key", &held.call.limits()[0].key);
        }
        debug.field("waited", &self.waited).finish()
    }
}
