//! Calls to an upstream that wait their turn together ([`Limiter::turn`]; see
//! [`guide::outbound`](crate::guide::outbound)): the wait, the call's [`Turn`], and what its answer teaches
//! the fleet.

use std::fmt;
use std::time::{Duration, Instant, SystemTime};

use super::held::{HeldCall, Used};
use super::waiting::{patience, refusal, until, Waiting};
use super::Limiter;
use crate::call::{Call, CallLimit};
use crate::outbound::{rate, upstream};
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
            // The rate learned spaces a line's slots (a leaky bucket's): nothing else reads it.
            let rate = match call.limits()[0].algorithm == crate::Algorithm::LeakyBucket
                && !call.misconfigured()
            {
                true => self.learned_rate(&call.limits()[0]).await,
                false => rate::WHOLE,
            };
            let window = Duration::from_micros(call.limits()[0].terms.window);
            let margin = outbound(&mut call, rate);
            let deadline = *deadline.get_or_insert_with(|| started + patience(&call));
            let pipeline = &self.pipeline;
            let upstream = &call.limits()[0];
            // A line of slots: a leaky bucket that waits.
            let lined =
                upstream.algorithm == crate::Algorithm::LeakyBucket && upstream.terms.max_wait > 0;
            // A pause this node heard of: nothing goes before it ends. A line asks anyway: Redis gives its
            // call a slot after the pause, in the order calls asked, or tells it at once that none comes in
            // time.
            let paused = pipeline.overrides.pauses.until(&upstream.key);
            if let Some(until) = paused.filter(|_| !lined) {
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
                    // The line reaches past what the call may wait (a pause, a slower rate learned): it is
                    // told at once, with the wait it would have had.
                    let line = &decided.limits[0].decision;
                    if lined && !line.allowed && !line.degraded && line.verdict == Verdict::Limited
                    {
                        return Err(refusal(
                            &call,
                            Some((0, line)),
                            line.reset_after,
                            Verdict::Limited,
                        ));
                    }
                    let again =
                        Instant::now() + refused.retry_after().max(Duration::from_millis(1));
                    // No wait admits it: a cost above the limit, a limit of zero.
                    if matches!(refused.reason(), Reason::TooLarge | Reason::Misconfigured) {
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
            // A rate lowered while it waited stretched the line past the cut, in Redis and on every node: its
            // slot moves with it.
            let (slot, spaced_for) = match respaced(pipeline, &held, slot, deadline).await {
                Ok(respaced) => respaced,
                Err(later) => {
                    // Moved past its deadline: told at once, with the wait it would have had.
                    let decision = held.decided.limits[0].decision;
                    let refused =
                        refusal(&held.call, Some((0, &decision)), later, Verdict::Limited);
                    let costs = held.costs();
                    held.give_back(&costs).await;
                    return Err(refused);
                }
            };
            // A pause heard of while it waited, over its slot: the slot goes back, and the call asks again
            // (a line's next slot comes after the pause). A slot Redis gave after the pause goes: this node
            // heard of the pause's end as late as its message came, within the slot's margin.
            let pause = pipeline.overrides.pauses.until(&held.call.limits()[0].key);
            if pause.is_some_and(|until| slot + margin.unwrap_or_default() < until) {
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
                window,
                rate: spaced_for.unwrap_or(rate),
            });
        }
    }
}

/// Waits for where the cuts of the rate heard of since `held`'s call was decided moved its `slot` (each
/// stretches what of the line lies past it: [`Pauses::respaced`](crate::overrides::Pauses::respaced)), on the
/// dot; returns it, and the rate it is then spaced for if a cut moved it; or, moved past `deadline`, how long
/// from now it would have waited.
async fn respaced(
    pipeline: &crate::pipeline::Pipeline,
    held: &HeldCall,
    slot: Instant,
    deadline: Instant,
) -> Result<(Instant, Option<u32>), Duration> {
    let key = &held.call.limits()[0].key;
    let decided = held.decided.limits[0].decision.decided_at.as_micros() as u64;
    let (mut at, mut rate) = (slot, None);
    loop {
        // From the slot as handed out, by every cut heard so far (one more may come while it waits).
        let (moved, spaced_for) = pipeline.overrides.pauses.respaced(key, decided, slot);
        if moved <= at {
            return Ok((at, rate));
        }
        if moved > deadline {
            return Err(moved.saturating_duration_since(Instant::now()));
        }
        (at, rate) = (moved, spaced_for);
        until(at, true).await;
    }
}

impl Limiter {
    /// Returns the rate the fleet learned for `limit`'s key (thousandths of its `max`): as this node heard it
    /// lately, else as Redis keeps it beside the key's pause (read once, then taken as heard for a while). In
    /// memory, this node is the fleet: what it heard.
    async fn learned_rate(&self, limit: &CallLimit<'_>) -> u32 {
        let pauses = &self.pipeline.overrides.pauses;
        if let Some(rate) = pauses.rate(&limit.key) {
            return rate;
        }
        let rate = match &self.pipeline.backend {
            crate::backend::Backend::Memory(_) => {
                pauses.last_rate(&limit.key).unwrap_or(rate::WHOLE)
            }
            redis => match redis.operations().block(limit).await {
                Ok(block) => block.and_then(|block| block.learned).unwrap_or(rate::WHOLE),
                Err(_) => pauses.last_rate(&limit.key).unwrap_or(rate::WHOLE),
            },
        };
        pauses.note(&limit.key, Duration::ZERO, rate);
        rate
    }
}

/// How much of a turn's slot is margin: a leaky bucket's slots for calls to an upstream are spaced by the
/// spacing its limit implies (`window / max`) and 1/32 of it more (3.1 ms at 10 calls a second), at least
/// [`LEAST_MARGIN`], and a call leaves within that margin after its slot or not at all. So two sends, from
/// any nodes, are never closer than the spacing, whichever of them left late.
pub(crate) const SLOT_MARGIN: u64 = 32;

/// The least margin a slot has, in µs: a Tokio timer's grain (at 200 calls a second, a slot of 6 ms, not 5).
pub(crate) const LEAST_MARGIN: u64 = 1_000;

/// Makes a call's limits those of a call to an upstream: each reads its key's block (where a pause is kept),
/// spends nothing from a lease (which would not see one), and fails to its node's share rather than open. A
/// leaky bucket spaces its slots by the spacing and its margin ([`SLOT_MARGIN`]); the first limit's (the
/// upstream's), by the spacing of the `rate` the fleet learned (thousandths of its `max`). Returns the margin
/// of the first leaky bucket's slot, for the call's cost: how late after its slot the call may still leave.
fn outbound(call: &mut Call<'static>, rate: u32) -> Option<Duration> {
    let mut margin = None;
    let mut first = true;
    call.each_limit(|limit| {
        if limit.algorithm == crate::Algorithm::LeakyBucket {
            let terms = &mut limit.terms;
            if std::mem::take(&mut first) && rate < rate::WHOLE {
                let learned =
                    u128::from(terms.window) * u128::from(rate::WHOLE) / u128::from(rate.max(1));
                terms.window = u64::try_from(learned).unwrap_or(u64::MAX);
            }
            let extra = (terms.window / SLOT_MARGIN).max(LEAST_MARGIN.saturating_mul(terms.max));
            terms.window += extra;
            let slot = extra.saturating_mul(terms.cost.max(1)) / terms.max.max(1);
            margin.get_or_insert(Duration::from_micros(slot));
            // Its terms follow the rate learned: re-spaced by it (`scripts/pause.lua`), never carried.
            limit.carry = None;
        }
        first = false;
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
    /// The first limit's window as configured (its slots are spaced for the rate learned and a margin).
    window: Duration,
    /// The rate learned its slot was spaced for (thousandths of `max`).
    rate: u32,
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
    /// `(name, value)` pairs), on every node and in Redis:
    /// - a 429 or a 503 cuts the rate the fleet learned for the first limit's key to 9/10 (never below a
    ///   twentieth of `max`), and pauses the key until its `Retry-After` (else the reset its quota fields give);
    /// - a success (2xx) while the rate is below `max` brings it back a thousandth of `max`;
    /// - quota fields that leave nothing (`RateLimit`, `RateLimit-Remaining`/`-Reset`,
    ///   `X-RateLimit-Remaining`/`-Reset`) pause the key until their reset, whatever the limit's own count;
    /// - a quota they state below the limit's (`RateLimit-Policy: 5;w=1`, `X-RateLimit-Limit: 5`, over the
    ///   limit's window unless a `w` says otherwise) lowers the rate to it at once.
    ///
    /// Turns space their slots for the rate learned ([`Inspection::learned`](crate::Inspection::learned)
    /// shows it). One script call in Redis when the answer teaches anything, and an announcement every node
    /// hears; a pause lasts an hour at most. Returns the pause now in force on the key, if the answer asked
    /// for one.
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
        let known = pipeline
            .overrides
            .pauses
            .last_rate(&limit.key)
            .unwrap_or(rate::WHOLE);
        let learned = upstream::learn(status, headers, SystemTime::now());
        let mut moved = rate::Move::NONE;
        if (200..300).contains(&status) && known < rate::WHOLE {
            moved.step = rate::STEP;
        }
        if let Some(learned) = learned {
            if learned.refused {
                (moved.keep, moved.spaced_for) = (rate::CUT, self.rate);
            }
            if let Some((calls, over)) = learned.quota {
                moved.ceiling = rate::ceiling(calls, over, limit.terms.max, self.window);
            }
        }
        let pause = learned.map_or(Duration::ZERO, |learned| learned.pause);
        if pause.is_zero() && moved.apply(known) == known {
            return Ok(None);
        }
        let micros = u64::try_from(pause.as_micros()).unwrap_or(u64::MAX);
        let status = learned.map_or(0, |learned| learned.status);
        tracing::info!(
            key = %limit.key.parts(),
            status,
            ?pause,
            "rate limiter: the upstream's answer moves the fleet's pace"
        );
        let taught = pipeline
            .backend
            .operations()
            .pause(limit, micros, status, moved, known)
            .await?;
        let left = Duration::from_micros(taught.left);
        let pauses = &pipeline.overrides.pauses;
        pauses.note(&limit.key, left, taught.rate);
        pauses.note_cut(&limit.key, taught.at, taught.from, taught.rate);
        Ok((!pause.is_zero()).then_some(left))
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
