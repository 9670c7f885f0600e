//! What a key's state says without a call: used, remaining, when one more unit fits and when the limit is back
//! to its full quota. The same twin arithmetic as a decision, on a copy of the state, so that an inspected key
//! reads exactly as the next call would find it (and nothing is charged).

use super::{sliding_log, Outcome, State, Terms};

/// A key's state, read without charging it (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Peek {
    /// Units counted now (permits held, for a limit in flight): of `max`, of a token bucket's burst, of the
    /// slots a leaky bucket's wait allows.
    pub(crate) used: u64,
    /// Units a call could take now.
    pub(crate) remaining: u64,
    /// Until a call of one unit fits: zero while one does.
    pub(crate) retry_after: u64,
    /// Until the limit is back to its full quota, if nothing else happens.
    pub(crate) reset_after: u64,
}

/// Reads `state` (a key's, or a fresh one's) at `now` for a limit of `charge`.
pub(crate) fn peek(state: &State, now: u64, charge: &Terms) -> Peek {
    if let State::SlidingLog(log) = state {
        let mut log = log.clone();
        let (count, newest) = log.read(now, charge.window);
        return peek_log(now, charge, count, |need| log.leaving(need), newest);
    }
    let one = Terms { cost: 1, ..*charge };
    let room = |next: Outcome| match next.allowed {
        true => next.remaining + 1,
        false => next.remaining,
    };
    let next = state.clone().decide(now, &one);
    let remaining = room(next);
    // What a fresh key holds: `max`, a token bucket's burst, the slots a leaky bucket's wait allows.
    let capacity = room(State::new(state.algorithm()).decide(now, &one));
    let used = capacity.saturating_sub(remaining);
    // What a call of nothing finds: when the state is full again (nothing to wait for while nothing is used).
    let reset_after = match used {
        0 => 0,
        _ => {
            state
                .clone()
                .decide(now, &Terms { cost: 0, ..*charge })
                .reset_after
        }
    };
    Peek {
        used,
        remaining,
        retry_after: next.retry_after,
        reset_after,
    }
}

/// Reads a sliding log holding `count` units in the window at `now`: `blocking(need)` is when the admission that
/// takes the oldest `need` units out of the window was made, `newest` when its newest was.
pub(crate) fn peek_log(
    now: u64,
    charge: &Terms,
    count: u64,
    blocking: impl FnOnce(u64) -> u64,
    newest: Option<u64>,
) -> Peek {
    let one = Terms { cost: 1, ..*charge };
    let next = sliding_log::outcome(now, &one, count, blocking, newest);
    Peek {
        used: count,
        remaining: charge.max.saturating_sub(count),
        retry_after: next.retry_after,
        reset_after: newest.map_or(0, |at| (at + charge.window).saturating_sub(now)),
    }
}
