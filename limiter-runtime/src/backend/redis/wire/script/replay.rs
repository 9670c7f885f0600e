//! The client's half of every decision script: the scripts answer a limit's state before its calls (and its
//! block's, under a penalty), and the algorithm's twin, as that state, replays the calls for their outcomes,
//! in the order and by the same arithmetic as the script decided them.

use redis::Value;

use super::reply::{reported, score};
use super::terms_at_cost;
use crate::algorithm::{sliding_log, Algorithm, Outcome, State};
use crate::call::CallLimit;
use crate::penalty::Block;

/// One limit's twin, as a script found its key, replaying calls on it one by one.
pub(super) struct Replay<'v, 'l, 'r> {
    limit: &'l CallLimit<'r>,
    now: u64,
    twin: Twin<'v>,
    /// Under a penalty: the key's block as the script read it (none remembered), and those its calls start.
    block: Option<Option<Block>>,
}

/// The twin of a limit's algorithm: the sliding log's, its count, for each call it refuses the two times
/// the script reads (the log itself stays in Redis), and the nonce of the first call it admits, which names
/// the one member the script writes for them all; any other's, its state.
enum Twin<'v> {
    Log {
        count: u64,
        times: std::slice::Chunks<'v, Value>,
        named: Option<u64>,
    },
    State(State),
}

impl<'v, 'l, 'r> Replay<'v, 'l, 'r> {
    /// Creates a replay of `limit` as a script answered it at `now`: the state's first number and the rest (see
    /// `scripts/one_limit.lua`), and, under a penalty, its key's block (`Some(None)` for none); `None` if
    /// they are not a state of its algorithm.
    pub(super) fn new(
        limit: &'l CallLimit<'r>,
        now: u64,
        (first, rest): (u64, &'v [Value]),
        block: Option<Option<Block>>,
    ) -> Option<Self> {
        let twin = match limit.algorithm {
            Algorithm::SlidingLog => Twin::Log {
                count: first,
                times: rest.chunks(2),
                named: None,
            },
            algorithm => {
                let reported = reported(algorithm, first, rest)?;
                Twin::State(State::reported(algorithm, now, &limit.terms, reported)?)
            }
        };
        Some(Replay {
            limit,
            now,
            twin,
            block,
        })
    }

    /// Returns the outcome of the next call, of `cost`, named by `nonce`, charging the twin if it is admitted: as
    /// the script decided it (refused while the key is blocked; and a refusal under a penalty starts a
    /// block, as `src/penalty.rs` computes it). But an upstream's pause in force on a key whose algorithm
    /// waits it out refuses nothing itself: the twin is moved by it first, as the script's `pause` section
    /// moved the state (see `scripts/algorithms/README.md`), and a refusal then starts no block. `None` if the
    /// script's answer ran out.
    pub(super) fn call(&mut self, cost: u64, nonce: u64) -> Option<Outcome> {
        let (limit, now) = (self.limit, self.now);
        let mut paused = false;
        if let Some((block, left)) = self
            .block
            .flatten()
            .and_then(|block| Some((block, block.remaining(now)?)))
        {
            paused = block.upstream.is_some()
                && match &mut self.twin {
                    Twin::State(state) => state.after_pause(now, block.until, limit.terms.max),
                    Twin::Log { .. } => false,
                };
            if !paused {
                return Some(Outcome::denied(0, 0, 0).blocked(left));
            }
        }
        let charge = terms_at_cost(limit, cost);
        let mut outcome = match &mut self.twin {
            Twin::Log {
                count,
                times,
                named,
            } => {
                let asked = cost.saturating_add(charge.kept);
                let (blocking, newest) = match *count + asked <= charge.max {
                    true => (None, None),
                    false => match times.next()? {
                        [blocking, newest] => (score(blocking), score(newest)),
                        _ => return None,
                    },
                };
                let mut outcome =
                    sliding_log::outcome(now, &charge, *count, |_| blocking.unwrap_or(now), newest);
                if outcome.allowed {
                    *count += cost;
                    // The member Redis holds its units in is named by the first call admitted with it.
                    outcome.receipt.mark = match cost {
                        0 => nonce,
                        _ => *named.get_or_insert(nonce),
                    };
                }
                outcome
            }
            Twin::State(state) => state.decide(now, &charge),
        };
        if outcome.allowed && limit.algorithm == Algorithm::InFlight {
            // Its permit in Redis is named by the call's nonce.
            outcome.receipt.mark = nonce;
        }
        let (Some(penalty), Some(kept)) = (limit.penalty, &mut self.block) else {
            return Some(outcome);
        };
        if outcome.allowed
            || paused
            || outcome.reserved
            || !charge.can_fit(limit.algorithm)
            || !penalty.starts_blocks()
        {
            return Some(outcome);
        }
        let block = Block::offence(kept.as_ref(), now, &penalty, outcome.retry_after);
        *kept = Some(block);
        Some(outcome.blocked(block.until - now))
    }
}
