//! The Lua scripts of `scripts/` and how they are called: each algorithm's own (`one_limit`: the calls of one
//! limit), the limiter's (the limits of a stacked call decided as one, charges given back, `lease`), the
//! instances' heartbeat and the overrides'.
//!
//! A decision's script call is made in three steps: its command, built from the call ([`decide_command`]);
//! sent, owned, so that its answer can be awaited after the caller has gone ([`send`]); its reply, read
//! against the call ([`read_decided`]).

mod batch;
mod block;
#[cfg(test)]
mod checked;
mod inspect;
mod lease;
mod nonce;
mod one_limit;
mod reply;

pub(crate) use self::batch::{batch_command, groups_of, read_batch, Group};
pub(crate) use self::block::{block_key, blocked_key, BLOCK_SUFFIX};
pub(crate) use self::inspect::{inspect_command, read_inspected};
pub(crate) use self::lease::{lease_command, read_lease};
use self::nonce::NonceText;
pub(crate) use self::nonce::{nonce, nonce_text};
use self::one_limit::{one_limit_command, read_one_limit};
use self::reply::{int, non_negative};

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, RedisResult, Value};

use super::connection::Connection;
pub(crate) use super::lua_script::LuaScript;
use crate::algorithm::{Algorithm, Charge, Outcome, Receipt};
use crate::call::{CallLimit, OneOrMany};
use crate::error::BackendError;

/// Keys live at least this long when a test passes "now" in: Redis expires keys on its own clock, which does
/// not follow the test's.
const TEST_MIN_TTL_MILLIS: u64 = 600_000;

/// A script call sent, owned: it runs to its answer whether its caller waits for it or not (a caller past
/// its deadline hands it on, to be reconciled).
pub(crate) type Sent = Pin<Box<dyn Future<Output = RedisResult<Value>> + Send>>;

/// Sends `command` of `script` on `connection`.
pub(crate) fn send(script: &'static LuaScript, mut connection: Connection, command: Cmd) -> Sent {
    Box::pin(async move { connection.run(script, &command).await })
}

/// The limiter's script: every algorithm, deciding the calls of several limits and giving back
/// (`scripts/limiter.lua`).
pub(crate) static LIMITER: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../../../scripts/limiter.lua")));

/// A script of one limit, assembled at build time from `scripts/`: the head that reads the window and the
/// clock (`parts/now.lua`), then the named parts (an algorithm's own, between the read and the write it
/// shares with its kin: `parts/queue_read.lua` and `parts/queue_write.lua` for the buckets, `parts/count.lua`
/// for the fixed window and the calendar, whose head is its own).
macro_rules! one_limit_script {
    ($($part:literal),+) => {
        concat!(
            include_str!("../../../../scripts/parts/now.lua"),
            $(include_str!(concat!("../../../../scripts/", $part, ".lua"))),+
        )
    };
}

/// Each algorithm's own script, as Redis runs it, in the order of their [`code`]s: deciding the calls of
/// one limit with only what it needs (the common call).
pub(crate) const LEAN_SOURCES: [&str; 7] = [
    one_limit_script!("sliding_log"),
    one_limit_script!("fixed_window", "parts/count"),
    one_limit_script!("sliding_window"),
    one_limit_script!("parts/queue_read", "token_bucket", "parts/queue_write"),
    one_limit_script!("parts/queue_read", "leaky_bucket", "parts/queue_write"),
    one_limit_script!("in_flight"),
    concat!(
        include_str!("../../../../scripts/calendar.lua"),
        include_str!("../../../../scripts/parts/count.lua")
    ),
];

/// The source of `algorithm`'s own script, as Redis runs it (what the benchmarks time against a minimal one).
pub(crate) fn lean_source(algorithm: Algorithm) -> &'static str {
    LEAN_SOURCES[code(algorithm) as usize - 1]
}

/// [`LEAN_SOURCES`], loaded.
static LEAN: LazyLock<[LuaScript; 7]> = LazyLock::new(|| LEAN_SOURCES.map(LuaScript::new));

/// Renews the permits a node holds on one in-flight key (`scripts/renew.lua`, after its head).
const RENEW_SOURCE: &str = one_limit_script!("renew");

/// [`RENEW_SOURCE`], loaded.
pub(crate) static RENEW: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(RENEW_SOURCE));

/// Every script assembled from parts, by the name of its own part, as Redis runs it (what the check of the
/// scripts' commands reads, beside the files).
#[cfg(test)]
pub(crate) fn assembled() -> Vec<(&'static str, &'static str)> {
    let names = [
        "sliding_log",
        "fixed_window",
        "sliding_window",
        "token_bucket",
        "leaky_bucket",
    ];
    let mut assembled: Vec<_> = names.into_iter().zip(LEAN_SOURCES).collect();
    assembled.extend([("in_flight", LEAN_SOURCES[5]), ("renew", RENEW_SOURCE)]);
    assembled
}

/// Loads every decision script, and the inspection's (`SCRIPT LOAD`: on every node of a cluster), so that
/// the first call finds it, and a server that refuses scripts says so at start-up.
pub(crate) async fn load(connection: &mut impl ConnectionLike) -> Result<(), BackendError> {
    let inspect = &*inspect::INSPECT;
    for script in [&*LIMITER, &*RENEW, inspect].into_iter().chain(LEAN.iter()) {
        let _: Value = script.load_command().query_async(connection).await?;
    }
    Ok(())
}

/// The script's number for `algorithm`: its place in [`Algorithm::ALL`], from 1; in flight, the next; a
/// calendar, the one after.
fn code(algorithm: Algorithm) -> i64 {
    match algorithm {
        Algorithm::InFlight => Algorithm::ALL.len() as i64 + 1,
        Algorithm::Calendar => Algorithm::ALL.len() as i64 + 2,
        _ => {
            let place = Algorithm::ALL.iter().position(|a| *a == algorithm);
            place.map_or(0, |place| place as i64 + 1)
        }
    }
}

/// How deep `limit`'s bucket is: the token bucket's burst, the leaky bucket's max wait (µs).
fn depth(limit: &CallLimit<'_>) -> u64 {
    match limit.algorithm {
        Algorithm::TokenBucket => limit.charge.burst,
        Algorithm::LeakyBucket => limit.charge.max_wait,
        _ => 0,
    }
}

/// What the script is told of `limit` but a call's cost: the algorithm's code (negated when it does not
/// veto), window, max and depth, a calendar's ends, and a penalty's first and longest block (µs; zeros without
/// one). Calls of the same go in one batch.
pub(crate) fn shape(limit: &CallLimit<'_>) -> [u64; 9] {
    let code = match limit.vetoes {
        true => code(limit.algorithm),
        false => -code(limit.algorithm),
    };
    let [previous, current, next] = limit.charge.ends;
    [
        code as u64,
        limit.charge.window,
        limit.charge.max,
        depth(limit),
        previous,
        current,
        next,
        limit.penalty.map_or(0, |penalty| penalty.first_micros()),
        limit.penalty.map_or(0, |penalty| penalty.cap_micros()),
    ]
}

/// `limit`'s four arguments to `limiter.lua`: its shape, a calendar's ends in place of the depth.
fn limit_args(cmd: &mut Cmd, limit: &CallLimit<'_>) {
    let [code, window, max, depth, _, _, _, first, cap] = shape(limit);
    cmd.arg(code).arg(window).arg(max);
    match (limit.algorithm, limit.penalty) {
        (Algorithm::Calendar, None) => cmd.arg(ends_text(&limit.charge)),
        (_, None) => cmd.arg(depth),
        // A penalty's lengths ride after the depth.
        (algorithm, Some(_)) => {
            let depth = match algorithm {
                Algorithm::Calendar => ends_text(&limit.charge),
                _ => depth.to_string(),
            };
            cmd.arg(format!("{depth}|{first}|{cap}"))
        }
    };
}

/// A calendar's ends as the scripts take them: `<previous>:<current>:<next>` (µs).
fn ends_text(charge: &Charge) -> String {
    let [previous, current, next] = charge.ends;
    format!("{previous}:{current}:{next}")
}

/// How many values the script answers for `limit`: allowed, remaining, retry_after and reset_after, then the
/// leaky bucket's delay, then the buckets' receipt.
fn answer_len(limit: &CallLimit<'_>) -> usize {
    match limit.algorithm {
        Algorithm::TokenBucket => 5,
        Algorithm::LeakyBucket => 6,
        _ => 4,
    }
}

/// `limit`'s charge for a call that weighs `cost` on it.
fn weighing(limit: &CallLimit<'_>, cost: u64) -> Charge {
    Charge {
        cost,
        ..limit.charge
    }
}

/// The outcome the script's `answer` for `limit` says, for a call decided `now` and named by `nonce`, of
/// `charge`; `None` if the answer is not one.
fn outcome(
    limit: &CallLimit<'_>,
    charge: &Charge,
    answer: &[Value],
    now: u64,
    nonce: u64,
) -> Option<Outcome> {
    // 1: admitted; 0: refused; 2: refused for the key's block.
    let answered = int(answer, 0)?;
    let allowed = answered == 1;
    let receipt = match limit.algorithm {
        Algorithm::SlidingLog | Algorithm::InFlight => Receipt {
            mark: nonce,
            ..Receipt::default()
        },
        Algorithm::TokenBucket | Algorithm::LeakyBucket => match answer.last() {
            Some(Value::BulkString(queue)) if allowed => parse_queue(queue)?,
            _ => Receipt::default(),
        },
        // The period's end, as the script picks it.
        Algorithm::Calendar => Receipt {
            mark: crate::algorithm::calendar::end(now, charge),
            ..Receipt::default()
        },
        // The window's index, as the script computes it (in floating point, as Lua does).
        _ => Receipt {
            mark: (now as f64 / charge.window as f64).floor() as u64,
            ..Receipt::default()
        },
    };
    Some(Outcome {
        allowed,
        remaining: int(answer, 1)?,
        retry_after: int(answer, 2)?,
        reset_after: int(answer, 3)?,
        delay: match limit.algorithm {
            Algorithm::LeakyBucket => int(answer, 4)?,
            _ => 0,
        },
        receipt: Receipt {
            at: if allowed { now } else { 0 },
            ..receipt
        },
        blocked: answered == 2,
    })
}

/// The script's mark of what `receipt` charged on a limit of `algorithm`: the nonce, the window's index, or
/// the queue it left.
fn mark(algorithm: Algorithm, receipt: &Receipt) -> String {
    match algorithm {
        Algorithm::SlidingLog | Algorithm::InFlight => nonce_text(receipt.mark).as_str().to_owned(),
        Algorithm::TokenBucket | Algorithm::LeakyBucket => format!(
            "{}:{}:{}:{}",
            receipt.mark, receipt.fraction, receipt.since, receipt.given
        ),
        _ => receipt.mark.to_string(),
    }
}

/// A bucket's receipt: the queue as the script wrote it, `<end µs>:<fraction>:<since>:<given>`.
fn parse_queue(queue: &[u8]) -> Option<Receipt> {
    let text = std::str::from_utf8(queue).ok()?;
    let mut parts = text.split(':').map(|part| part.parse::<u64>().ok());
    let mut next = || parts.next().flatten();
    let receipt = Receipt {
        at: 0,
        mark: next()?,
        fraction: next()?,
        since: next()?,
        given: next()?,
    };
    parts.next().is_none().then_some(receipt)
}

/// A window (or a time to live) as a test passes it, with its "now" and the minimum TTL.
pub(crate) fn test_window(window: u64, now: u64) -> String {
    format!("{window} {now} {TEST_MIN_TTL_MILLIS}")
}

/// A lean script's first argument for `limit`: its window, or a calendar's ends; with a test's "now" and the
/// minimum TTL when a test passes them.
fn window_arg(limit: &CallLimit<'_>, test_now: Option<u64>) -> String {
    let window = match limit.algorithm {
        Algorithm::Calendar => ends_text(&limit.charge),
        _ => limit.charge.window.to_string(),
    };
    match test_now {
        Some(now) => format!("{window} {now} {TEST_MIN_TTL_MILLIS}"),
        None => window,
    }
}

/// The script's first argument: the operation, and, when a test passes "now" in, it and the minimum TTL.
pub(crate) fn operation(op: &'static str, test_now: Option<u64>) -> Cow<'static, str> {
    match test_now {
        Some(now) => Cow::Owned(format!("{op} {now} {TEST_MIN_TTL_MILLIS}")),
        None => Cow::Borrowed(op),
    }
}

/// One call of a batch on the same limits: its nonce (naming its sliding-log members) and its cost on each
/// limit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BatchCall<'a> {
    pub(crate) nonce: u64,
    pub(crate) costs: &'a [u64],
}

/// What the script decided of one call of a batch: whether the call was admitted, and each of its limits'
/// [`Outcome`].
#[derive(Debug, Clone)]
pub(crate) struct CallOutcome {
    pub(crate) admitted: bool,
    pub(crate) outcomes: OneOrMany<Outcome>,
}

/// The script and the command that decide `calls` on `limits` (of one slot), in turn, in one script call:
/// each call as one, admitted only if all its limits admit it, exactly as if each were sent alone in that
/// order; "now" from Redis `TIME`, or `test_now` when a test passes it in.
pub(crate) fn decide_command(
    limits: &[&CallLimit<'_>],
    calls: &[BatchCall<'_>],
    test_now: Option<u64>,
) -> (&'static LuaScript, Cmd) {
    if limits.iter().any(|limit| limit.penalty.is_some()) {
        // Blocks are read and written by `limiter.lua`'s batch: a batch of this one group.
        return (
            &LIMITER,
            batch_command(&[Group { limits, calls }], test_now),
        );
    }
    if let [limit] = limits {
        let script = &LEAN[code(limit.algorithm) as usize - 1];
        return (script, one_limit_command(script, limit, calls, test_now));
    }
    let keys: Vec<&str> = limits.iter().map(|limit| &*limit.key).collect();
    let mut cmd = LIMITER.command(&keys, calls.len());
    cmd.arg(&*operation("decide", test_now));
    group_args(&mut cmd, limits, calls);
    (&LIMITER, cmd)
}

/// The arguments `limiter.lua` decides `calls` on `limits` by: each limit's, then each call's.
fn group_args(cmd: &mut Cmd, limits: &[&CallLimit<'_>], calls: &[BatchCall<'_>]) {
    for limit in limits {
        limit_args(cmd, limit);
    }
    calls_args(cmd, limits, calls);
}

/// Each of `calls`' nonce (when `limits` keep members) and costs, as `limiter.lua` takes them.
fn calls_args(cmd: &mut Cmd, limits: &[&CallLimit<'_>], calls: &[BatchCall<'_>]) {
    let logs = limits
        .iter()
        .any(|limit| matches!(limit.algorithm, Algorithm::SlidingLog | Algorithm::InFlight));
    for call in calls {
        let nonce = match logs {
            true => nonce_text(call.nonce),
            false => NonceText::EMPTY,
        };
        cmd.arg(nonce.as_str()).arg(call.costs);
    }
}

/// What the script's `reply` says of `calls` on `limits` (as [`decide_command`] sent them): each call's
/// outcome, and when, on Redis's clock (µs since the Unix epoch, or the test's "now").
pub(crate) fn read_decided(
    reply: &Value,
    limits: &[&CallLimit<'_>],
    calls: &[BatchCall<'_>],
) -> Result<(OneOrMany<CallOutcome>, u64), BackendError> {
    if limits.iter().any(|limit| limit.penalty.is_some()) {
        let (mut each, now) = read_batch(reply, &[Group { limits, calls }])?;
        let decided = each
            .pop()
            .unwrap_or_else(|| Err(BackendError::Reply(format!("{reply:?}"))))?;
        return Ok((OneOrMany::Many(decided), now));
    }
    if let [limit] = limits {
        return read_one_limit(reply, limit, calls);
    }
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let Value::Array(reply) = reply else {
        return Err(unexpected());
    };
    let Some((Value::Int(now), answers)) = reply.split_first() else {
        return Err(unexpected());
    };
    let now = non_negative(*now);
    let decided = read_group(answers, limits, calls, now).ok_or_else(unexpected)?;
    Ok((OneOrMany::Many(decided), now))
}

/// Each of `calls`' outcome on `limits`, read from `answers` (as `limiter.lua` answers a group, without
/// "now"); `None` if they are not.
fn read_group(
    answers: &[Value],
    limits: &[&CallLimit<'_>],
    calls: &[BatchCall<'_>],
    now: u64,
) -> Option<Vec<CallOutcome>> {
    let per_call = limits.iter().map(|l| answer_len(l)).sum::<usize>();
    if answers.len() != per_call * calls.len() {
        return None;
    }
    let mut rest = answers;
    let mut decided = Vec::with_capacity(calls.len());
    for call in calls {
        let mut outcomes = Vec::with_capacity(limits.len());
        for (limit, cost) in limits.iter().zip(call.costs) {
            let (answer, after) = rest.split_at(answer_len(limit));
            rest = after;
            let charge = weighing(limit, *cost);
            outcomes.push(outcome(limit, &charge, answer, now, call.nonce)?);
        }
        let admitted = limits
            .iter()
            .zip(&outcomes)
            .all(|(l, o)| o.allowed || !l.vetoes);
        decided.push(CallOutcome {
            admitted,
            outcomes: OneOrMany::Many(outcomes),
        });
    }
    Some(decided)
}

/// One charge to give back: where (its key, its algorithm), what the admission charged (its charge, whose
/// cost is the units it took, and its receipt), and how many units go back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GiveBack<'a> {
    pub(crate) key: &'a str,
    pub(crate) algorithm: Algorithm,
    pub(crate) charge: &'a Charge,
    pub(crate) receipt: &'a Receipt,
    pub(crate) units: u64,
}

impl<'a> GiveBack<'a> {
    /// `units` of what `limit` charged (`receipt`).
    pub(crate) fn of(limit: &'a CallLimit<'_>, receipt: &'a Receipt, units: u64) -> Self {
        GiveBack {
            key: &limit.key,
            algorithm: limit.algorithm,
            charge: &limit.charge,
            receipt,
            units,
        }
    }

    /// Its arguments to the script (`give_back`'s, and `lease`'s for what an earlier lease left).
    fn args(&self, cmd: &mut Cmd) {
        cmd.arg(self.units)
            .arg(self.charge.cost)
            .arg(self.receipt.at)
            .arg(mark(self.algorithm, self.receipt));
    }
}

/// Gives back each of `charges` (all in one slot) in one script call.
pub(crate) async fn give_back(
    connection: &mut impl ConnectionLike,
    charges: &[GiveBack<'_>],
    test_now: Option<u64>,
) -> Result<(), BackendError> {
    let keys: Vec<&str> = charges.iter().map(|given| given.key).collect();
    let mut cmd = LIMITER.command(&keys, 1);
    cmd.arg(&*operation("give_back", test_now));
    for given in charges {
        cmd.arg(code(given.algorithm))
            .arg(given.charge.window)
            .arg(given.charge.max);
        given.args(&mut cmd);
    }
    let _: Vec<i64> = LIMITER.run(connection, &cmd).await?;
    Ok(())
}
