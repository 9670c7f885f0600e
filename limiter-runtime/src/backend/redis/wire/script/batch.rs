//! A batch's script call: many callers' calls, on any keys, in one call of `scripts/groups.lua` (see the
//! script's header): its command, and each group's calls replayed from the states its reply answers.

use redis::{Cmd, Value};

use super::replay::Replay;
use super::reply::{fault, non_negative, tell_afresh};
use super::{block_key, calls_args, clock, limit_args, shape, BatchCall, Outcomes, GROUPS};
use crate::algorithm::Algorithm;
use crate::call::{CallLimit, OneOrMany};
use crate::error::BackendError;
use crate::penalty::Block;

/// One group of a batch: calls on the same limits (one caller's call, or several on one key), decided in turn.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Group<'a, 'r> {
    pub(crate) limits: &'a [&'a CallLimit<'r>],
    pub(crate) calls: &'a [BatchCall<'a>],
}

/// Builds the command that decides `groups` (of one slot) in one script call, each group in turn exactly as
/// [`decide_command`](super::decide_command) decides it alone: many callers' calls, on any keys, for one
/// command. Each limit's shape is sent once, and each group names its limits' shapes.
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
    let mut shapes: Vec<([u64; 11], &'a CallLimit<'_>)> = Vec::new();
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
    let mut cmd = GROUPS.command(&keys, calls);
    cmd.arg(&*clock(test_now)).arg(shapes.len());
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
pub(crate) type GroupOutcomes = Result<Vec<Outcomes>, BackendError>;

/// Reads what the script's `reply` says of `groups` (as [`batch_command`] sent them): each group's outcome, and
/// when, on Redis's clock.
pub(crate) fn read_batch(
    reply: &Value,
    groups: &[Group<'_, '_>],
) -> Result<(Vec<GroupOutcomes>, u64), BackendError> {
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
            Value::BulkString(text) => read_group(text, group, now)
                .ok_or_else(|| BackendError::Reply(format!("{answer:?}"))),
            other => Err(BackendError::Reply(format!("{other:?}"))),
        })
        .collect();
    Ok((each, now))
}

/// Reads each of `group`'s calls' outcome, replayed from the states `text` answers (as `scripts/groups.lua` writes
/// them); `None` if they are not.
fn read_group(text: &[u8], group: &Group<'_, '_>, now: u64) -> Option<Vec<Outcomes>> {
    let text = std::str::from_utf8(text).ok()?;
    let mut answers = text.split(';');
    if let [limit] = group.limits {
        // One limit: its state before the first call, and the calls replayed on it in turn.
        let (block, state) = answered(limit, answers.next()?)?;
        tell_afresh(limit, state.first());
        let mut replay = Replay::new(limit, now, first_and_rest(&state)?, block)?;
        let mut decided = Vec::with_capacity(group.calls.len());
        for call in group.calls {
            let outcome = replay.call(*call.costs.first()?, call.nonce)?;
            decided.push(Outcomes {
                admitted: outcome.allowed || !limit.vetoes,
                outcomes: OneOrMany::One(outcome),
            });
        }
        return answers.next().is_none().then_some(decided);
    }
    // Several limits: each one's state before each call; the call admitted if every limit that vetoes admits
    // it, else charged to none (each limit that would have admitted it reports its remaining as before).
    let mut decided = Vec::with_capacity(group.calls.len());
    for call in group.calls {
        let mut outcomes = Vec::with_capacity(group.limits.len());
        for (limit, cost) in group.limits.iter().zip(call.costs) {
            let (block, state) = answered(limit, answers.next()?)?;
            tell_afresh(limit, state.first());
            let mut replay = Replay::new(limit, now, first_and_rest(&state)?, block)?;
            outcomes.push(replay.call(*cost, call.nonce)?);
        }
        let admitted = group
            .limits
            .iter()
            .zip(&outcomes)
            .all(|(limit, outcome)| outcome.allowed || !limit.vetoes);
        if !admitted {
            for ((limit, outcome), cost) in group.limits.iter().zip(&mut outcomes).zip(call.costs) {
                if outcome.allowed {
                    // A permit in flight is one, whatever the call weighs.
                    outcome.remaining += match limit.algorithm {
                        Algorithm::InFlight => 1,
                        _ => *cost,
                    };
                }
            }
        }
        decided.push(Outcomes {
            admitted,
            outcomes: OneOrMany::Many(outcomes),
        });
    }
    answers.next().is_none().then_some(decided)
}

/// A limit's block under a penalty (`Some(None)` for none), as [`Replay`] takes it.
type Blocked = Option<Option<Block>>;

/// Parses one limit's answer in a group: under a penalty, its key's block (`"<until>:<offences>:<p|b>"` or `""`)
/// before "|"; then its state, as values.
fn answered(limit: &CallLimit<'_>, answer: &str) -> Option<(Blocked, Vec<Value>)> {
    let (block, state) = match limit.penalty {
        Some(_) => {
            let (block, state) = answer.split_once('|')?;
            let block = match block {
                "" => None,
                text => Some(Block::parse(text)?),
            };
            (Some(block), state)
        }
        None => (None, answer),
    };
    let mut values = Vec::with_capacity(4);
    for field in state.split(',') {
        values.push(match whole(field.as_bytes()) {
            Some(n) => Value::Int(n),
            None => Value::BulkString(field.as_bytes().to_vec()),
        });
    }
    Some((block, values))
}

/// Returns a state's first number and the rest, as [`Replay`] takes them.
fn first_and_rest(state: &[Value]) -> Option<(u64, &[Value])> {
    match state.split_first()? {
        (Value::Int(first), rest) => Some((non_negative(*first), rest)),
        _ => None,
    }
}

/// Reads `field` as a whole number written in decimal (as Lua's `%d` writes one), if it is one.
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

/// Returns whether two calls ask Redis about the same limits (keys and shapes, but costs): adjacent in a batch,
/// they go as one group.
fn same_limits(a: &[&CallLimit<'_>], b: &[&CallLimit<'_>]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(a, b)| a.key == b.key && shape(a) == shape(b) && a.algorithm == b.algorithm)
}

/// Returns the groups of a batch's calls (`asked`, each call's limits Redis is asked about, and `calls`, its nonce
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
