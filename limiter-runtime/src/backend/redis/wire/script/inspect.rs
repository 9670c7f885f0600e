//! An operator's read of one limit's key (`scripts/inspect.lua`, with each algorithm's `peek`): no charge, no
//! write, Redis's clock; its reply read by the algorithm's twin, as a decision's is.

use std::sync::LazyLock;

use redis::{Cmd, Value};

use super::reply::{reported, score, state};
use super::LuaScript;
use crate::algorithm::{calendar, peek, peek_log, Algorithm, Peek, Reported, State};
use crate::call::CallLimit;
use crate::error::BackendError;

/// The script (`scripts/inspect.lua`, assembled).
pub(super) static INSPECT: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(assembled!("inspect")));

/// Returns the script, and its command reading `limit`'s key.
pub(crate) fn inspect_command(
    limit: &CallLimit<'_>,
    test_now: Option<u64>,
) -> (&'static LuaScript, Cmd) {
    let mut cmd = INSPECT.command(&[&limit.key], 1);
    match test_now {
        Some(now) => cmd.arg(super::test_window(limit.terms.window, now)),
        None => cmd.arg(limit.terms.window),
    };
    cmd.arg(limit.terms.max).arg(super::code(limit.algorithm));
    (&INSPECT, cmd)
}

/// Reads what the script answered of `limit`'s key, and when (µs).
pub(crate) fn read_inspected(
    reply: &Value,
    limit: &CallLimit<'_>,
) -> Result<(Peek, u64), BackendError> {
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let (now, first, rest) = state(reply).ok_or_else(unexpected)?;
    let charge = &limit.terms;
    if limit.algorithm == Algorithm::SlidingLog {
        let (blocking, newest) = match rest {
            [] => (None, None),
            [blocking, newest] => (score(blocking), score(newest)),
            _ => return Err(unexpected()),
        };
        let blocking = blocking.unwrap_or(now);
        return Ok((peek_log(now, charge, first, |_| blocking, newest), now));
    }
    if limit.algorithm == Algorithm::Calendar {
        // The count stored, if it is of the period now is in.
        let count = match rest {
            [] => 0,
            [Value::BulkString(end)] => {
                let end = std::str::from_utf8(end)
                    .ok()
                    .and_then(|end| end.parse().ok());
                match end == Some(calendar::end(now, charge)) {
                    true => first,
                    false => 0,
                }
            }
            _ => return Err(unexpected()),
        };
        let state = State::reported(limit.algorithm, now, charge, Reported::Count(count));
        let state = state.ok_or_else(unexpected)?;
        return Ok((peek(&state, now, charge), now));
    }
    let reported = reported(limit.algorithm, first, rest).ok_or_else(unexpected)?;
    let state = State::reported(limit.algorithm, now, charge, reported).ok_or_else(unexpected)?;
    Ok((peek(&state, now, charge), now))
}
