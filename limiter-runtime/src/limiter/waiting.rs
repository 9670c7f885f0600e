//! One way to wait for a slot: an admitted call whose slot is later (a leaky bucket's that waits) waits in its
//! node's line ([`Lines`](crate::outbound::Lines): the slot that comes goes to the most important call
//! waiting, the upstream's pauses apply), whichever door it came in by (the attribute's `mode = wait`, the
//! plain API's `enforce`, `acquire` and `estimate`, the tower layer, a turn); dropped before its turn (the
//! caller gave up), it leaves the line and gives back what it was charged, so the next call takes the slot.

use std::pin::pin;
use std::time::{Duration, Instant};

use futures_util::future::{select, BoxFuture};

use super::held::HeldCall;
use super::Limiter;
use crate::algorithm::Outcome;
use crate::call::{Call, LimitRuling, Ruling};
use crate::outbound::line::AtSlot;
use crate::pipeline::{Enforced, Owner, Pipeline};
use crate::{Decision, Priority, RateLimited, Reason, Verdict};

impl Limiter {
    /// Enforces `call`, of `priority`: a refusal, or, admitted, the call and its ruling once its slot has come
    /// (see [`after_slot`](Limiter::after_slot)).
    pub(crate) async fn admit<'r>(
        &self,
        call: Call<'r>,
        priority: Priority,
    ) -> Result<(Call<'r>, Ruling), RateLimited> {
        let enforced = self.pipeline.enforce(call).await?;
        self.after_slot(enforced, priority).await
    }

    /// Waits for the slot of an admitted call of `priority` in its node's line, until its deadline (the longest
    /// `max_wait` of its limits from now): the call and its ruling once its turn comes. A call with no slot to
    /// wait for, none of its node's waiting before it, comes back at once, as it was.
    pub(crate) async fn after_slot<'r>(
        &self,
        enforced: Enforced<'r>,
        priority: Priority,
    ) -> Result<(Call<'r>, Ruling), RateLimited> {
        let Enforced {
            call,
            decided,
            slot,
        } = enforced;
        // No slot to wait for, and no call of this node waiting before it: it goes as it is (nothing copied).
        let lines = &self.pipeline.lines;
        if !call.may_wait_for_slot() || (slot.is_zero() && waiting_line(lines, &call).is_none()) {
            return Ok((call, decided));
        }
        let deadline = Instant::now() + patience(&call);
        let held = HeldCall {
            limiter: self.clone(),
            call: call.detached(),
            decided,
        };
        let (held, _) = Waiting::new(held).turn(slot, priority, deadline).await?;
        let HeldCall { call, decided, .. } = held;
        Ok((call, decided))
    }
}

/// Returns the first limit of `call` in whose line calls of its cost wait on this node: a call whose slot is
/// now joins that line (its slot goes to the first of them) rather than pass them.
fn waiting_line(lines: &crate::outbound::Lines, call: &Call<'_>) -> Option<usize> {
    let limits = call.limits();
    (0..limits.len()).find(|&i| lines.waiting(limits[i].key.as_str(), limits[i].terms.cost))
}

/// The attribute's future, which outlives the borrow it finds its limiter by, holds the limiter.
impl Owner for Limiter {
    #[inline]
    fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    fn after_slot(
        &self,
        enforced: Enforced<'static>,
        priority: Priority,
    ) -> BoxFuture<'static, Result<(Call<'static>, Ruling), RateLimited>> {
        let limiter = self.clone();
        Box::pin(async move { limiter.after_slot(enforced, priority).await })
    }
}

/// How long past its longest window a call that waits for no slot asks again: enough for a refusal's time
/// to come on a timer that fires late.
const PAST_THE_WINDOW: Duration = Duration::from_millis(10);

/// Returns how long a call may wait for its turn: the longest `max_wait` of its limits, or, when none waits,
/// the longest window (a call refused asks again as told until then).
pub(super) fn patience(call: &Call<'_>) -> Duration {
    let limits = call.limits().iter();
    let longest = limits
        .clone()
        .map(|limit| limit.terms.max_wait)
        .max()
        .unwrap_or(0);
    let window = limits.map(|limit| limit.terms.window).max().unwrap_or(0);
    match longest {
        0 => Duration::from_micros(window) + PAST_THE_WINDOW,
        longest => Duration::from_micros(longest),
    }
}

/// Returns the refusal of a call that would wait `wait` for its turn (past its deadline), by its limit `i`
/// (its first when none decided), as `verdict`.
pub(super) fn refusal(
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
        (limit.rule.policy_name(), limit.applied()),
        limit.key.clone(),
        decision,
        crate::pipeline::advertised(limit, &decision),
        Vec::new(),
        Reason::Limited,
    )
}

/// An admitted call waiting for its slot: dropped before its turn, it leaves its line and gives back what it
/// was charged (in memory at once, with Redis on a task of its own).
pub(super) struct Waiting {
    held: Option<HeldCall>,
    /// Its seat: the line's key, its number, and which limit's slot it holds there.
    seat: Option<(String, u64, usize)>,
    /// Whether it leaves on the dot: a turn's call, whose slot absorbs only its margin.
    on_the_dot: bool,
}

/// How early before its slot a call that leaves on the dot stops sleeping and yields until the slot: a Tokio
/// timer fires up to a millisecond after its deadline.
const TIMER_GRAIN: Duration = Duration::from_millis(1);

/// Waits until `slot`: as a timer fires, or, `on_the_dot`, sleeping until a timer's grain before it, then
/// yielding to the runtime until it.
pub(super) async fn until(slot: Instant, on_the_dot: bool) {
    let wake = match on_the_dot {
        true => slot.checked_sub(TIMER_GRAIN).unwrap_or(slot),
        false => slot,
    };
    tokio::time::sleep_until(wake.into()).await;
    while on_the_dot && Instant::now() < slot {
        tokio::task::yield_now().await;
    }
}

impl Waiting {
    pub(super) fn new(held: HeldCall) -> Waiting {
        Waiting {
            held: Some(held),
            seat: None,
            on_the_dot: false,
        }
    }

    /// Makes the call leave on the dot: it sleeps until a timer's grain before its slot, then yields to the
    /// runtime until the slot (a turn's call: its slot absorbs only its margin).
    pub(super) fn on_the_dot(mut self) -> Waiting {
        self.on_the_dot = true;
        self
    }

    /// Waits for the call's turn: `wait` from when the store decided, or, in its node's line, the slot a call
    /// of `priority` gets there; refused if that is past `deadline` (what it was charged given back). Returns
    /// the call and the slot it went in.
    pub(super) async fn turn(
        mut self,
        wait: Duration,
        priority: Priority,
        deadline: Instant,
    ) -> Result<(HeldCall, Instant), RateLimited> {
        let held = self.held.as_mut().expect("a call waits once");
        let lines = &held.limiter.pipeline.lines;
        // The limit that gives the slot: the one that makes it wait longest. A call whose slot is now goes at
        // once, unless calls of this node wait in a line of its limits (slots Redis gave them before it failed,
        // this one's the node's share's): it then joins that line, and its slot goes to the first of them.
        let i = match wait.is_zero() {
            false => (0..held.decided.limits.len())
                .max_by_key(|&i| held.decided.limits[i].decision.delay)
                .unwrap_or(0),
            true => match waiting_line(lines, &held.call) {
                Some(i) => i,
                None => {
                    let held = self.held.take().expect("a call waits once");
                    return Ok((held, Instant::now()));
                }
            },
        };
        let limit = &held.call.limits()[i];
        let key = limit.key.to_string();
        let decision = held.decided.limits[i].decision;
        let charged = std::mem::replace(
            &mut held.decided.limits[i],
            LimitRuling::uncharged(decision),
        );
        // The slot is the store's time: the wait counts from when it decided, not from the answer's arrival.
        let late = lines.lag.arrived(decision.decided_at);
        let slot = Instant::now() + wait.saturating_sub(late);
        let place = lines.join(&key, priority, limit.terms.cost, slot, charged);
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
                Some(AtSlot::Go(charged, slot)) => {
                    self.seat = None;
                    let mut held = self.held.take().expect("a call waits once");
                    held.decided.limits[i] = charged;
                    return Ok((held, slot));
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
                    let come = pin!(until(slot, self.on_the_dot));
                    // Its slot, or a swap that moved it: look again either way.
                    let _ = select(come, woken).await;
                }
                // Not in the line (it cannot happen): the call goes without its slot's charge.
                None => {
                    self.seat = None;
                    let held = self.held.take().expect("a call waits once");
                    return Ok((held, Instant::now()));
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
