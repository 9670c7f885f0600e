//! A call of one limit (or calls on one key, coalesced): its algorithm's script of one limit
//! (`scripts/one_limit.lua`) answers the key's state before the calls, and the algorithm's twin replays them.

use redis::{Cmd, Value};

use super::nonce::nonce_text;
use super::replay::Replay;
use super::reply::{state, tell_afresh};
use super::{depth_arg, ends_text, max_arg, window_arg, BatchCall, LuaScript, Outcomes};
use crate::algorithm::Algorithm;
use crate::call::{CallLimit, OneOrMany};
use crate::error::BackendError;

/// Returns the cost of `call` on its one limit.
fn cost(call: &BatchCall<'_>) -> u64 {
    call.costs.first().copied().unwrap_or(1)
}

/// Builds the command of `script`, `limit`'s algorithm's own, deciding `calls` on it.
pub(super) fn one_limit_command(
    script: &LuaScript,
    limit: &CallLimit<'_>,
    calls: &[BatchCall<'_>],
    test_now: Option<u64>,
) -> Cmd {
    let charge = &limit.terms;
    let mut cmd = script.command(&[&limit.key], calls.len());
    match test_now {
        // The common call's window goes as a number; a test's "now" and minimum TTL ride with it.
        None => cmd.arg(charge.window),
        Some(_) => cmd.arg(window_arg(charge.window, test_now)),
    };
    max_arg(&mut cmd, charge);
    match limit.algorithm {
        Algorithm::Calendar => {
            cmd.arg(ends_text(charge));
        }
        _ => depth_arg(&mut cmd, limit),
    }
    let names = matches!(limit.algorithm, Algorithm::SlidingLog | Algorithm::InFlight);
    match calls {
        // The common call, one of cost 1, goes without its cost: its nonce alone, when it names a member.
        [call] if cost(call) == 1 => {
            if names {
                cmd.arg(nonce_text(call.nonce).digits());
            }
        }
        _ => {
            for call in calls {
                cmd.arg(cost(call));
                match names {
                    true => cmd.arg(nonce_text(call.nonce).digits()),
                    false => cmd.arg(""),
                };
            }
        }
    }
    cmd
}

/// Reads what `limit`'s own script answered of `calls` (the key's state before the first call): the algorithm's
/// twin, as that state, replays the calls for each one's outcome.
pub(super) fn read_one_limit(
    reply: &Value,
    limit: &CallLimit<'_>,
    calls: &[BatchCall<'_>],
) -> Result<(OneOrMany<Outcomes>, u64), BackendError> {
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let (now, first, rest) = state(reply).ok_or_else(unexpected)?;
    if let Value::Array(values) = reply {
        tell_afresh(limit, values.get(1));
    }
    let mut replay = Replay::new(limit, now, (first, rest), None).ok_or_else(unexpected)?;
    let mut decide = |call: &BatchCall<'_>| -> Result<Outcomes, BackendError> {
        let outcome = replay.call(cost(call), call.nonce).ok_or_else(unexpected)?;
        Ok(Outcomes {
            admitted: outcome.allowed || !limit.vetoes,
            outcomes: OneOrMany::One(outcome),
        })
    };
    if let [call] = calls {
        return Ok((OneOrMany::One(decide(call)?), now));
    }
    let mut each = Vec::with_capacity(calls.len());
    for call in calls {
        each.push(decide(call)?);
    }
    Ok((OneOrMany::Many(each), now))
}
