//! Calls to an upstream that wait their turn together ([`Limiter::turn`]; see [`outbound`](crate::outbound)):
//! the wait, the call's [`Turn`], and what its answer teaches the fleet.

use std::fmt;
use std::pin::pin;
use std::time::{Duration, Instant, SystemTime};

use futures_util::future::select;

use super::{HeldCall, LimitList, Limiter};
use crate::algorithm::Outcome;
use crate::call::{Call, LimitRuling};
use crate::outbound::line::AtSlot;
use crate::outbound::upstream;
use crate::{Decision, Error, OnError, Penalty, Priority, RateLimited, Reason, Rule, Verdict};

impl Limiter {
    /// Waits for the turn of a call to an upstream under `rule` (a
    /// [`LeakyBucket`](crate::Algorithm::LeakyBucket) with a [`max_wait`](Rule::max_wait) spaces the calls)
    /// for `key`, shared by every node: see [`turn_all`](Limiter::turn_all).
    pub async fn turn(&self, rule: &Rule, key: impl fmt::Display) -> Result<Turn, RateLimited> {
        self.turn_all([(rule, key, 1, Priority::Normal)]).await
    }

    /// Does what [`turn`](Limiter::turn) does, for a call of `priority`: on this node, a slot that comes goes
    /// to the most important call waiting for one.
    pub async fn turn_with(
        &self,
        rule: &Rule,
        key: impl fmt::Display,
        priority: Priority,
    ) -> Result<Turn, RateLimited> {
        self.turn_all([(rule, key, 1, priority)]).await
    }

    /// Waits for the turn of a call to an upstream under several limits at once, decided as one: the first is
    /// the upstream's own (what [`Turn::answered`] pauses), say requests a minute, and the others beside it,
    /// say tokens a minute reserved with an estimate ([`Turn::settle`] gives back what was not used).
    ///
    /// The call waits for its slot, fleet-wide, up to the longest `max_wait` of its limits (its deadline; the
    /// longest window when none has one); refused by a limit (no slot within it, tokens short, a pause), it
    /// waits as long as it is told and asks again, while that is within its deadline; past it, it fails with [`RateLimited`], whose
    /// [`retry_after`](RateLimited::retry_after) says how long it would have waited. Dropped while it
    /// waits, it gives back what it was charged. A limit that would fail open while Redis cannot answer fails
    /// to its node's share instead ([`OnError::Local`]): a fleet never releases its waiting calls all at once.
    ///
    /// ```
    /// use limiter_runtime::{Algorithm, Limiter, Rule};
    /// use std::time::Duration;
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// // The partner allows 10 calls a second; a call waits up to 2 s for its turn.
    /// let partner = Rule::new()
    ///     .prefix("partner:")
    ///     .algorithm(Algorithm::LeakyBucket)
    ///     .max(10)
    ///     .window(Duration::from_secs(1))
    ///     .max_wait(Duration::from_secs(2));
    /// let first = limiter.turn(&partner, "acme").await.unwrap();
    /// let second = limiter.turn(&partner, "acme").await.unwrap();
    /// assert!(second.waited() >= Duration::from_millis(90)); // its slot, 100 ms after the first's
    /// // ... send it; then tell the fleet what the partner answered:
    /// let paused = second.answered(429, [("retry-after", "1")]).await.unwrap();
    /// assert_eq!(paused, Some(Duration::from_secs(1)));
    /// # let _ = first;
    /// # }
    /// ```
    pub async fn turn_all<L: LimitList>(&self, limits: L) -> Result<Turn, RateLimited> {
        let started = Instant::now();
        let mut priority = Priority::Low;
        limits.each(&mut |_, _, _, asked| priority = priority.max(asked));
        let mut deadline = None;
        loop {
            let mut rules = Vec::new();
            let mut call = self.list(&limits, &mut rules).detached();
            drop(rules);
            outbound(&mut call);
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
            let held = Waiting::new(held).turn(wait, priority, deadline).await?;
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
            return Ok(Turn {
                held: Some(held),
                waited: started.elapsed(),
            });
        }
    }
}

/// How much later than its slot a call may leave without landing in the same window of the upstream as the
/// call `max` slots after it: a leaky bucket's slots for calls to an upstream are spaced over its window and
/// this much more (1% of a one-second window; nothing worth counting of a minute's).
pub(crate) const SEND_TOLERANCE: Duration = Duration::from_millis(10);

/// Makes a call's limits those of a call to an upstream: each reads its key's block (where a pause is kept),
/// spends nothing from a lease (which would not see one), and fails to its node's share rather than open. A
/// leaky bucket spaces its slots over its window and [`SEND_TOLERANCE`]: `max` calls that each leave up to
/// that late never land in one window of the upstream's.
fn outbound(call: &mut Call<'static>) {
    call.each_limit(|limit| {
        if limit.algorithm == crate::Algorithm::LeakyBucket {
            limit.terms.window += SEND_TOLERANCE.as_micros() as u64;
        }
        limit.penalty.get_or_insert(Penalty::READS_BLOCKS);
        limit.lease = None;
        if limit.on_error == OnError::Open {
            limit.on_error = OnError::Local;
        }
    });
}

/// Returns a random time within one slot of the call's first limit (its window over its max).
fn spread(call: &Call<'_>) -> Duration {
    use std::hash::BuildHasher;
    let terms = &call.limits()[0].terms;
    let slot = terms.window / terms.max.max(1);
    let random = std::hash::RandomState::new().hash_one(Instant::now());
    Duration::from_micros(random % slot.max(1))
}

/// Returns how long a call may wait for its turn: the longest `max_wait` of its limits, or, when none waits,
/// the longest window (a call refused asks again as told until then).
fn patience(call: &Call<'_>) -> Duration {
    let limits = call.limits().iter();
    let longest = limits
        .clone()
        .map(|limit| limit.terms.max_wait)
        .max()
        .unwrap_or(0);
    let window = limits.map(|limit| limit.terms.window).max().unwrap_or(0);
    match longest {
        0 => Duration::from_micros(window) + SEND_TOLERANCE,
        longest => Duration::from_micros(longest),
    }
}

/// Returns the refusal of a call that would wait `wait` for its turn (past its deadline), by its limit `i`
/// (its first when none decided), as `verdict`.
fn refusal(
    call: &Call<'_>,
    decided: Option<(usize, &Decision)>,
    wait: Duration,
    verdict: Verdict,
) -> RateLimited {
    let (i, decision) = match decided {
        Some((i, decision)) => (i, *decision),
        None => {
            let limit = &call.limits()[0];
            let micros = u64::try_from(wait.as_micros()).unwrap_or(u64::MAX);
            let outcome = Outcome::denied(0, micros, micros);
            (0, limit.decision(&limit.terms, outcome, 0, false))
        }
    };
    let limit = &call.limits()[i];
    let decision = Decision {
        allowed: false,
        remaining: 0,
        retry_after: wait,
        delay: Duration::ZERO,
        verdict,
        ..decision
    };
    RateLimited::new(
        limit.rule.message_value().clone(),
        limit.rule.policy_name(),
        limit.key.clone(),
        decision,
        crate::pipeline::advertised(limit, &decision),
        Vec::new(),
        Reason::Limited,
    )
}

/// An admitted call waiting for its slot: dropped before its turn, it leaves its line and gives back what it
/// was charged (in memory at once, with Redis on a task of its own).
struct Waiting {
    held: Option<HeldCall>,
    /// Its seat: the line's key, its number, and which limit's slot it holds there.
    seat: Option<(String, u64, usize)>,
}

impl Waiting {
    fn new(held: HeldCall) -> Waiting {
        Waiting {
            held: Some(held),
            seat: None,
        }
    }

    /// Waits for the call's turn: `wait` from now, or, in its node's line, the slot a call of `priority` gets
    /// there; refused if that is past `deadline` (what it was charged given back).
    async fn turn(
        mut self,
        wait: Duration,
        priority: Priority,
        deadline: Instant,
    ) -> Result<HeldCall, RateLimited> {
        let held = self.held.as_mut().expect("a call waits once");
        let lines = &held.limiter.pipeline.lines;
        // The limit that gives the slot: the one that makes it wait longest. A call whose slot is now goes at
        // once, unless calls of this node wait in a line of its limits (slots Redis gave them before it failed,
        // this one's the node's share's): it then joins that line, and its slot goes to the first of them.
        let i = match wait.is_zero() {
            false => (0..held.decided.limits.len())
                .max_by_key(|&i| held.decided.limits[i].decision.delay)
                .unwrap_or(0),
            true => {
                let limits = held.call.limits();
                let waiting = (0..limits.len())
                    .find(|&i| lines.waiting(&limits[i].key.to_string(), limits[i].terms.cost));
                match waiting {
                    Some(i) => i,
                    None => return Ok(self.held.take().expect("a call waits once")),
                }
            }
        };
        let limit = &held.call.limits()[i];
        let key = limit.key.to_string();
        let decision = held.decided.limits[i].decision;
        let charged = std::mem::replace(
            &mut held.decided.limits[i],
            LimitRuling::uncharged(decision),
        );
        let place = lines.join(
            &key,
            priority,
            limit.terms.cost,
            Instant::now() + wait,
            charged,
        );
        self.seat = Some((key.clone(), place.id, i));
        loop {
            let mut woken = pin!(place.wake.notified());
            woken.as_mut().enable();
            let held = self.held.as_ref().expect("a call waits once");
            match held
                .limiter
                .pipeline
                .lines
                .at_slot(&key, place.id, Instant::now())
            {
                Some(AtSlot::Go(charged)) => {
                    self.seat = None;
                    let mut held = self.held.take().expect("a call waits once");
                    held.decided.limits[i] = charged;
                    return Ok(held);
                }
                Some(AtSlot::Wait(slot)) if slot > deadline => {
                    let refused = refusal(
                        &held.call,
                        Some((i, &decision)),
                        slot - Instant::now(),
                        Verdict::Limited,
                    );
                    drop(self);
                    return Err(refused);
                }
                Some(AtSlot::Wait(slot)) => {
                    let sleep = pin!(tokio::time::sleep_until(slot.into()));
                    // Its slot, or a swap that moved it: look again either way.
                    let _ = select(sleep, woken).await;
                }
                // Not in the line (it cannot happen): the call goes without its slot's charge.
                None => {
                    self.seat = None;
                    return Ok(self.held.take().expect("a call waits once"));
                }
            }
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let Some(mut held) = self.held.take() else {
            return;
        };
        if let Some((key, id, i)) = self.seat.take() {
            match held.limiter.pipeline.lines.leave(&key, id) {
                Some(charged) => held.decided.limits[i] = charged,
                None => return,
            }
        }
        let costs = held.costs();
        held.give_back_now(costs);
    }
}

/// A call's turn to go to an upstream ([`Limiter::turn`]): send the call, then tell the fleet what the upstream
/// answered ([`answered`](Turn::answered)), and settle what it used ([`settle`](Turn::settle)). Dropped,
/// it keeps what it was charged: the call is taken to have been sent ([`cancel`](Turn::cancel) it if not).
#[must_use = "a turn is the call's slot: send the call, then tell the fleet what the upstream answered"]
pub struct Turn {
    held: Option<HeldCall>,
    waited: Duration,
}

impl Turn {
    /// Returns each limit's decision, in the order given.
    pub fn decisions(&self) -> Vec<Decision> {
        self.held().decided.decisions().collect()
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

    /// Settles to what the call actually used, `used[i]` units of limit `i` (a limit not listed used what it
    /// was charged): gives back the rest, say the tokens an estimate reserved and the answer did not spend.
    pub async fn settle(mut self, used: &[u64]) {
        if let Some(held) = self.held.take() {
            let back: Vec<u64> = held
                .costs()
                .iter()
                .enumerate()
                .map(|(i, &cost)| used.get(i).map_or(0, |&used| cost.saturating_sub(used)))
                .collect();
            held.give_back(&back).await;
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

impl fmt::Debug for Turn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Turn");
        if let Some(held) = &self.held {
            debug.field("key", &held.call.limits()[0].key);
        }
        debug.field("waited", &self.waited).finish()
    }
}
