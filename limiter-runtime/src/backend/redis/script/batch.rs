//! A batch's script call: many callers' calls, on any keys, in one `limiter.lua` "batch" (see the script's
//! header): its command, and each group's answer read from its reply.

use redis::{Cmd, Value};

use super::reply::{fault, non_negative};
use super::{
    block_key, calls_args, limit_args, operation, read_group, shape, BatchCall, CallOutcome,
    LIMITER,
};
use crate::call::{CallLimit, OneOrMany};
use crate::error::BackendError;

/// One group of a batch: calls on the same limits (one caller's call, or several on one key), decided in turn.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group<'a, 'r> {
    pub(crate) limits: &'a [&'a CallLimit<'r>],
    pub(crate) calls: &'a [BatchCall<'a>],
}

/// The command that decides `groups` (of one slot) in one script call, each group in turn exactly as
/// [`decide_command`] decides it alone: many callers' calls, on any keys, for one command. Each limit's shape
/// is sent once, and each group names its limits' shapes.
pub(crate) fn batch_command<'a>(groups: &[Group<'a, '_>], test_now: Option<u64>) -> Cmd {
    // Each group's keys: its limits', then the block key of each of its limits under a penalty (made only
    // for those: a plain batch allocates nothing more).
    let blocks: Vec<String> = groups
        .iter()
        .flat_map(|group| group.limits.iter())
        .filter(|limit| limit.penalty.is_some())
        .map(|limit| block_key(&limit.key))
        .collect();
    let mut blocks_left = blocks.iter().map(String::as_str);
    let mut keys: Vec<&str> = Vec::with_capacity(blocks.len() + groups.len());
    for group in groups {
        keys.extend(group.limits.iter().map(|limit| &*limit.key));
        let penalized = group.limits.iter().filter(|limit| limit.penalty.is_some());
        keys.extend(penalized.filter_map(|_| blocks_left.next()));
    }
    let calls = groups.iter().map(|group| group.calls.len()).sum();
    // The shapes, each with a limit of it; and each group's limits' places among them (from 1).
    let mut shapes: Vec<([u64; 9], &'a CallLimit<'_>)> = Vec::new();
    let mut place = |limit: &'a CallLimit<'_>| {
        let shape = shape(limit);
        match shapes.iter().position(|(known, _)| *known == shape) {
            Some(at) => at + 1,
            None => {
                shapes.push((shape, limit));
                shapes.len()
            }
        }
    };
    let places: Vec<OneOrMany<usize>> = groups
        .iter()
        .map(|group| match group.limits {
            [one] => OneOrMany::One(place(one)),
            many => OneOrMany::Many(many.iter().map(|&limit| place(limit)).collect()),
        })
        .collect();
    // Only a batch with limits under a penalty has the script read penalties and blocks.
    let penalized = shapes.iter().any(|(_, limit)| limit.penalty.is_some());
    let op = if penalized { "penalized" } else { "batch" };
    let mut cmd = LIMITER.command(&keys, calls);
    cmd.arg(&*operation(op, test_now)).arg(shapes.len());
    for (_, limit) in &shapes {
        limit_args(&mut cmd, limit);
    }
    for (group, places) in groups.iter().zip(&places) {
        match (&**places, group.calls.len()) {
            ([one], 1) => cmd.arg(*one),
            (places, calls) => {
                let mut head = places
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                if calls > 1 {
                    head = format!("{head}/{calls}");
                }
                cmd.arg(head)
            }
        };
        calls_args(&mut cmd, group.limits, group.calls);
    }
    cmd
}

/// What one group of a batch came to: each of its calls' outcome, or the fault the group met (a key of
/// another type, say), which is its calls' own.
pub(crate) type GroupOutcome = Result<Vec<CallOutcome>, BackendError>;

/// What the script's `reply` says of `groups` (as [`batch_command`] sent them): each group's outcome, and
/// when, on Redis's clock.
pub(crate) fn read_batch(
    reply: &Value,
    groups: &[Group<'_, '_>],
) -> Result<(Vec<GroupOutcome>, u64), BackendError> {
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let Value::Array(reply) = reply else {
        return Err(unexpected());
    };
    let (Some((Value::Int(now), answers)), true) =
        (reply.split_first(), reply.len() == 1 + groups.len())
    else {
        return Err(unexpected());
    };
    let now = non_negative(*now);
    let each = answers
        .iter()
        .zip(groups)
        .map(|(answer, group)| match answer {
            Value::BulkString(text) if text.first() == Some(&b'!') => Err(fault(&text[1..])),
            Value::BulkString(text) => fields(text)
                .and_then(|answers| read_group(&answers, group.limits, group.calls, now))
                .ok_or_else(|| BackendError::Reply(format!("{answer:?}"))),
            other => Err(BackendError::Reply(format!("{other:?}"))),
        })
        .collect();
    Ok((each, now))
}

/// A group's answers as the batch writes them, comma-separated: each an integer, or a bucket's receipt.
fn fields(text: &[u8]) -> Option<Vec<Value>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    let mut fields = Vec::with_capacity(8);
    for field in text.split(|&byte| byte == b',') {
        fields.push(match whole(field) {
            Some(n) => Value::Int(n),
            None => Value::BulkString(field.to_vec()),
        });
    }
    Some(fields)
}

/// `field` read as a whole number written in decimal (as Lua's `%d` writes one), if it is one.
fn whole(field: &[u8]) -> Option<i64> {
    let (negative, digits) = match field {
        [b'-', digits @ ..] => (true, digits),
        digits => (false, digits),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut n: i64 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        n = n * 10 + i64::from(digit - b'0');
    }
    Some(if negative { -n } else { n })
}

/// Whether two calls ask Redis about the same limits (keys and shapes, but costs): adjacent in a batch,
/// they go as one group.
fn same_limits(a: &[&CallLimit<'_>], b: &[&CallLimit<'_>]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(a, b)| a.key == b.key && shape(a) == shape(b) && a.algorithm == b.algorithm)
}

/// The groups of a batch's calls (`asked`, each call's limits Redis is asked about, and `calls`, its nonce
/// and costs): runs of adjacent calls on the same limits.
pub(crate) fn groups_of<'a, 'r>(
    asked: &'a [OneOrMany<&'a CallLimit<'r>>],
    calls: &'a [BatchCall<'a>],
) -> Vec<Group<'a, 'r>> {
    let mut groups: Vec<Group<'a, 'r>> = Vec::new();
    let mut start = 0;
    for i in 1..=asked.len() {
        if i == asked.len() || !same_limits(&asked[start], &asked[i]) {
            groups.push(Group {
                limits: &asked[start],
                calls: &calls[start..i],
            });
            start = i;
        }
    }
    groups
}
