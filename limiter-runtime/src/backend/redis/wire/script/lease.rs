//! Taking a lease (`scripts/lease.lua`), giving back what is left of the last one.

use redis::{Cmd, Value};

use super::reply::{bucket, int};
use super::{clock, code, depth_arg, ends_text, max_arg, GiveBack, LuaScript, LEASE};
use crate::algorithm::{Algorithm, Reported};
use crate::call::CallLimit;
use crate::error::BackendError;

/// Returns the script and the command that take a lease on `limit` (a token bucket or a fixed window) in one script
/// call: up to `want` units, if the limit has room for at least the call's cost, giving `back` back first
/// (what is left of an earlier lease of the same algorithm).
pub(crate) fn lease_command(
    limit: &CallLimit<'_>,
    want: u64,
    back: Option<&GiveBack<'_>>,
    test_now: Option<u64>,
) -> (&'static LuaScript, Cmd) {
    let charge = &limit.terms;
    let mut cmd = LEASE.command(&[&limit.key], 1);
    cmd.arg(&*clock(test_now))
        .arg(code(limit.algorithm))
        .arg(charge.window);
    max_arg(&mut cmd, charge);
    match limit.algorithm {
        Algorithm::Calendar => {
            cmd.arg(ends_text(charge));
        }
        _ => depth_arg(&mut cmd, limit),
    }
    cmd.arg(charge.cost).arg(want.max(charge.cost));
    if let Some(back) = back {
        back.args(&mut cmd);
    }
    (&LEASE, cmd)
}

/// Reads what the script's `reply` to [`lease_command`] on a limit of `algorithm` says: when (Redis's clock), how
/// many units were taken (none: the call is refused), and the limit's state before they were.
pub(crate) fn read_lease(
    reply: &Value,
    algorithm: Algorithm,
) -> Result<(u64, u64, Reported), BackendError> {
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let Value::Array(reply) = reply else {
        return Err(unexpected());
    };
    let [Some(now), Some(taken), Some(first)] = [0, 1, 2].map(|i| int(reply, i)) else {
        return Err(unexpected());
    };
    let reported = match algorithm {
        Algorithm::FixedWindow => Reported::Count(first),
        _ => bucket(first, reply.get(3)).ok_or_else(unexpected)?,
    };
    Ok((now, taken, reported))
}
