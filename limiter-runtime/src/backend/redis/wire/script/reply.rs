//! Reading the scripts' replies: their integers, and a bucket's state.

use redis::Value;

use crate::algorithm::{Algorithm, Reported};
use crate::call::CallLimit;
use crate::error::BackendError;

/// Reads the integer at `i` of a reply's `values`; `None` if there is none there.
pub(super) fn int(values: &[Value], i: usize) -> Option<u64> {
    match values.get(i) {
        Some(Value::Int(n)) => Some(non_negative(*n)),
        _ => None,
    }
}

/// Reads a bucket's state as its script answers it: how far its queue reached past now (µs × max), and the
/// queue's run, `<since>:<given>`, absent or "" when the queue was empty (then read as (0, 0)); `None` if
/// the run is not one.
pub(super) fn bucket(queued: u64, run: Option<&Value>) -> Option<Reported> {
    let (since, given) = match run {
        None => (0, 0),
        Some(Value::BulkString(run)) if run.is_empty() => (0, 0),
        Some(Value::BulkString(run)) => parse_run(run)?,
        Some(_) => return None,
    };
    Some(Reported::Queue {
        queued: u128::from(queued),
        since,
        given,
    })
}

/// Parses a bucket's run as its script answers it: `<since>:<given>`.
fn parse_run(run: &[u8]) -> Option<(u64, u64)> {
    let (since, given) = std::str::from_utf8(run).ok()?.split_once(':')?;
    Some((since.parse().ok()?, given.parse().ok()?))
}

/// Reads an integer Redis answers, which the scripts never answer negative (read as 0 if it were).
pub(super) fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

/// Reads a member's score as Redis answers it (a decimal, possibly in floating-point notation, or read as a whole
/// number from a group's answer), in µs; `None` for none ("").
pub(super) fn score(value: &Value) -> Option<u64> {
    let text = match value {
        Value::BulkString(text) => text,
        Value::Int(n) => return Some(non_negative(*n)),
        _ => return None,
    };
    let text = std::str::from_utf8(text).ok()?;
    text.parse::<u64>()
        .ok()
        .or_else(|| text.parse::<f64>().ok().map(|s| s as u64))
}

/// Reads a key's state as an algorithm's script (or `inspect.lua`) answers it: now alone when the key held
/// nothing; else now, the state's first number, and the rest. `None` if the reply is not one.
pub(super) fn state(reply: &Value) -> Option<(u64, u64, &[Value])> {
    match reply {
        Value::Int(now) => Some((non_negative(*now), 0, &[][..])),
        Value::Array(values) => match values.as_slice() {
            [Value::Int(now), Value::Int(first), rest @ ..] => {
                Some((non_negative(*now), non_negative(*first), rest))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Tells (see [`started_afresh`](crate::observe::started_afresh)) when a limit's state, as its script answered it
/// (`first`, read as 0), says the key held another algorithm's state, which the script dropped: it answers -1.
pub(super) fn tell_afresh(limit: &CallLimit<'_>, first: Option<&Value>) {
    if let Some(Value::Int(first)) = first {
        if *first < 0 {
            crate::observe::started_afresh(limit.key.parts().prefix, limit.algorithm);
        }
    }
}

/// Reads what the state's `first` number and the `rest` of a reply say of a key under `algorithm` (not the sliding
/// log's, which its caller reads); `None` if they are not a state of it.
pub(super) fn reported(algorithm: Algorithm, first: u64, rest: &[Value]) -> Option<Reported> {
    Some(match algorithm {
        Algorithm::FixedWindow | Algorithm::Calendar => Reported::Count(first),
        Algorithm::InFlight => Reported::Held(first),
        Algorithm::SlidingWindow => Reported::Counts {
            current: first,
            previous: match rest {
                [] => 0,
                [Value::Int(previous)] => non_negative(*previous),
                _ => return None,
            },
        },
        Algorithm::TokenBucket | Algorithm::LeakyBucket => match rest {
            [] => bucket(first, None)?,
            [run] => bucket(first, Some(run))?,
            _ => return None,
        },
        _ => return None,
    })
}

/// Reads the fault a group of a batch met, as the script answers it (the error's text, `WRONGTYPE ...` say): the
/// error Redis would have answered the group alone, so that it is told the key's own fault or Redis's.
pub(super) fn fault(text: &[u8]) -> BackendError {
    let text = String::from_utf8_lossy(text).replace(['\r', '\n'], " ");
    match redis::parse_redis_value(format!("-{text}\r\n").as_bytes()).map(Value::extract_error) {
        Ok(Err(error)) => BackendError::Redis(error),
        _ => BackendError::Reply(text),
    }
}
