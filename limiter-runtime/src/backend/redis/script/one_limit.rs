//! A call of one limit (or calls on one key, coalesced): its algorithm's own script answers the key's state
//! before the calls, and the algorithm's twin replays them.

use redis::{Cmd, Value};

use super::nonce::nonce_text;
use super::reply::{reported, score, state};
use super::{depth, weighing, BatchCall, CallOutcome, LuaScript};
use crate::algorithm::{sliding_log, Algorithm, Outcome, State};
use crate::call::{CallLimit, OneOrMany};
use crate::error::BackendError;

/// The cost of `call` on its one limit.
fn cost(call: &BatchCall<'_>) -> u64 {
    call.costs.first().copied().unwrap_or(1)
}

/// The command of `script`, `limit`'s algorithm's own, deciding `calls` on it.
pub(super) fn one_limit_command(
    script: &LuaScript,
    limit: &CallLimit<'_>,
    calls: &[BatchCall<'_>],
    test_now: Option<u64>,
) -> Cmd {
    let charge = &limit.charge;
    let mut cmd = script.command(&[&limit.key], calls.len());
    match (test_now, limit.algorithm) {
        // The common call's window goes as a number; a test's "now" and minimum TTL ride with it, and a
        // calendar's ends take its place.
        (None, algorithm) if algorithm != Algorithm::Calendar => cmd.arg(charge.window),
        _ => cmd.arg(super::window_arg(limit, test_now)),
    };
    cmd.arg(charge.max);
    if matches!(
        limit.algorithm,
        Algorithm::TokenBucket | Algorithm::LeakyBucket
    ) {
        cmd.arg(depth(limit));
    }
    if limit.algorithm == Algorithm::InFlight {
        // Each call's nonce names its permit.
        for call in calls {
            cmd.arg(nonce_text(call.nonce).digits());
        }
        return cmd;
    }
    let logs = limit.algorithm == Algorithm::SlidingLog;
    match calls {
        // The common call, one of cost 1, goes without its cost (and the log's, as its one member).
        [call] if cost(call) == 1 => {
            if logs {
                cmd.arg(nonce_text(call.nonce).only_member());
            }
        }
        _ => {
            for call in calls {
                cmd.arg(cost(call));
                if logs {
                    cmd.arg(nonce_text(call.nonce).digits());
                }
            }
        }
    }
    cmd
}

/// What `limit`'s own script answered of `calls` (the key's state before the first call): the algorithm's
/// twin, as that state, replays the calls for each one's outcome (the sliding log's, from its count and the
/// times the script reports of each call refused).
pub(super) fn read_one_limit(
    reply: &Value,
    limit: &CallLimit<'_>,
    calls: &[BatchCall<'_>],
) -> Result<(OneOrMany<CallOutcome>, u64), BackendError> {
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let (now, first, rest) = state(reply).ok_or_else(unexpected)?;
    let decided = |outcome: Outcome| CallOutcome {
        admitted: outcome.allowed || !limit.vetoes,
        outcomes: OneOrMany::One(outcome),
    };
    if limit.algorithm == Algorithm::SlidingLog {
        // The count (units) goes up by each admitted call's cost; each call refused reads two times.
        let (mut count, mut times) = (first, rest.chunks(2));
        let each = each_of(calls, |call| {
            let charge = weighing(limit, cost(call));
            let fits = count + charge.cost <= charge.max;
            let (blocking, newest) = match fits {
                true => (None, None),
                false => {
                    let [blocking, newest] = times.next().ok_or_else(unexpected)? else {
                        return Err(unexpected());
                    };
                    (score(blocking), score(newest))
                }
            };
            let mut outcome =
                sliding_log::outcome(now, &charge, count, |_| blocking.unwrap_or(now), newest);
            if outcome.allowed {
                count += charge.cost;
                outcome.receipt.mark = call.nonce;
            }
            Ok(decided(outcome))
        })?;
        return Ok((each, now));
    }
    let reported = reported(limit.algorithm, first, rest).ok_or_else(unexpected)?;
    let mut state =
        State::reported(limit.algorithm, now, &limit.charge, reported).ok_or_else(unexpected)?;
    let each = each_of(calls, |call| {
        let mut outcome = state.decide(now, &weighing(limit, cost(call)));
        if limit.algorithm == Algorithm::InFlight && outcome.allowed {
            // The permit Redis holds is named by the call's nonce.
            outcome.receipt.mark = call.nonce;
        }
        Ok(decided(outcome))
    })?;
    Ok((each, now))
}

/// `decide` of each of `calls`, in turn: one call's outcome held as it is, a batch's in a list sized for it.
#[inline]
fn each_of(
    calls: &[BatchCall<'_>],
    mut decide: impl FnMut(&BatchCall<'_>) -> Result<CallOutcome, BackendError>,
) -> Result<OneOrMany<CallOutcome>, BackendError> {
    if let [call] = calls {
        return Ok(OneOrMany::One(decide(call)?));
    }
    let mut each = Vec::with_capacity(calls.len());
    for call in calls {
        each.push(decide(call)?);
    }
    Ok(OneOrMany::Many(each))
}
