//! The Lua scripts of `scripts/` and how they are called: each algorithm's own (`one_limit`: the calls of one
//! limit), the limiter's (the limits of a stacked call decided as one, charges given back, `lease`), the
//! instances' heartbeat and the overrides'.
//!
//! A decision's script call is made in three steps: its command, built from the call ([`decide_command`]);
//! sent, owned, so that its answer can be awaited after the caller has gone ([`send`]); its reply, read
//! against the call ([`read_decided`]).

/// A script assembled at build time from `scripts/` (see `build.rs`; a copy kept in `scripts/assembled/`), by its
/// name there.
macro_rules! assembled {
    ($name:literal) => {
        include_str!(concat!(env!("OUT_DIR"), "/scripts/", $name, ".lua"))
    };
}

#[cfg(test)]
mod assembled;
mod batch;
mod block;
#[cfg(test)]
mod checked;
mod inspect;
mod lease;
mod lua_script;
mod nonce;
mod one_limit;
mod replay;
mod reply;

pub(crate) use self::batch::{batch_command, groups_of, read_batch, Group};
pub(crate) use self::block::{block_key, blocked_key, BLOCK_SUFFIX};
pub(crate) use self::inspect::{inspect_command, read_inspected};
pub(crate) use self::lease::{lease_command, read_lease};
use self::nonce::NonceText;
pub(crate) use self::nonce::{nonce, nonce_text};
use self::one_limit::{one_limit_command, read_one_limit};

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, RedisResult, Value};

pub(crate) use self::lua_script::LuaScript;
use super::connection::Connection;
use crate::algorithm::carry::Level;
use crate::algorithm::{Algorithm, Outcome, Receipt, Terms};
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

/// Each algorithm's script of one limit (`scripts/one_limit.lua`, assembled with its file of
/// `scripts/algorithms/`), as Redis runs it, in the order of their [`code`]s: deciding the calls of one
/// limit with only what it needs (the common call).
pub(crate) const ONE_LIMIT_SOURCES: [&str; 7] = [
    assembled!("one_limit/sliding_log"),
    assembled!("one_limit/fixed_window"),
    assembled!("one_limit/sliding_window"),
    assembled!("one_limit/token_bucket"),
    assembled!("one_limit/leaky_bucket"),
    assembled!("one_limit/in_flight"),
    assembled!("one_limit/calendar"),
];

/// Returns the source of `algorithm`'s script of one limit, as Redis runs it (what the benchmarks time against a
/// minimal one).
pub(crate) fn one_limit_source(algorithm: Algorithm) -> &'static str {
    ONE_LIMIT_SOURCES[code(algorithm) as usize - 1]
}

/// [`ONE_LIMIT_SOURCES`], loaded.
static ONE_LIMIT: LazyLock<[LuaScript; 7]> =
    LazyLock::new(|| ONE_LIMIT_SOURCES.map(LuaScript::new));

/// Decides a batch of groups: calls of one limit or of several, on any keys, under penalties
/// (`scripts/groups.lua`, with every algorithm's file).
pub(crate) static GROUPS: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(assembled!("groups")));

/// Gives charges back (`scripts/give_back.lua`).
static GIVE_BACK: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(assembled!("give_back")));

/// Takes a lease (`scripts/lease.lua`).
static LEASE: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(assembled!("lease")));

/// Bans a key (`scripts/ban.lua`).
pub(crate) static BAN: LazyLock<LuaScript> = LazyLock::new(|| LuaScript::new(assembled!("ban")));

/// Pauses a key, as an upstream asked (`scripts/pause.lua`).
pub(crate) static PAUSE: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(assembled!("pause")));

/// Renews the permits a node holds on one in-flight key (`scripts/renew.lua`).
pub(crate) static RENEW: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(assembled!("renew")));

/// Returns every script assembled at build time, by its name, as Redis runs it (what the check of the scripts'
/// commands reads, beside the files).
#[cfg(test)]
pub(crate) fn assembled() -> Vec<(String, &'static str)> {
    let mut assembled: Vec<_> = Algorithm::ALL
        .into_iter()
        .chain([Algorithm::InFlight, Algorithm::Calendar])
        .map(|algorithm| {
            (
                format!("one_limit {algorithm}"),
                one_limit_source(algorithm),
            )
        })
        .collect();
    assembled.extend([
        ("groups".to_owned(), assembled!("groups")),
        ("give_back".to_owned(), assembled!("give_back")),
        ("lease".to_owned(), assembled!("lease")),
        ("ban".to_owned(), assembled!("ban")),
        ("pause".to_owned(), assembled!("pause")),
        ("renew".to_owned(), assembled!("renew")),
        ("inspect".to_owned(), assembled!("inspect")),
    ]);
    assembled
}

/// Loads every decision script, and the inspection's (`SCRIPT LOAD`: on every node of a cluster), so that
/// the first call finds it, and a server that refuses scripts says so at start-up.
pub(crate) async fn load(connection: &mut impl ConnectionLike) -> Result<(), BackendError> {
    let scripts = [
        &*GROUPS,
        &*GIVE_BACK,
        &*LEASE,
        &*BAN,
        &*PAUSE,
        &*RENEW,
        &*inspect::INSPECT,
    ];
    for script in scripts.into_iter().chain(ONE_LIMIT.iter()) {
        let _: Value = script.load_command().query_async(connection).await?;
    }
    Ok(())
}

/// Returns the script's number for `algorithm`: its place, from 1, in `limiter_grammar::algorithm::NAMES`, the
/// list `build.rs` numbers the scripts' branches from.
fn code(algorithm: Algorithm) -> i64 {
    i64::from(algorithm.grammar().code())
}

/// Returns how deep `limit`'s bucket is: the token bucket's burst, the leaky bucket's max wait (µs).
fn depth(limit: &CallLimit<'_>) -> u64 {
    match limit.algorithm {
        Algorithm::TokenBucket => limit.terms.burst,
        Algorithm::LeakyBucket => limit.terms.max_wait,
        _ => 0,
    }
}

/// Returns the letter that follows a bucket's depth when its level does not carry over proportionally (the
/// common call's, which sends its depth alone, as a number): `a` as is, `n` not carried (see
/// `scripts/algorithms/token_bucket.lua`).
fn carry_letter(limit: &CallLimit<'_>) -> Option<char> {
    if !matches!(
        limit.algorithm,
        Algorithm::TokenBucket | Algorithm::LeakyBucket
    ) {
        return None;
    }
    match limit.carry {
        Some(Level::Proportional) => None,
        Some(Level::AsIs) => Some('a'),
        None => Some('n'),
    }
}

/// Adds `limit`'s depth as the scripts take it: a number, followed by its [`carry_letter`] when it has one.
fn depth_arg(cmd: &mut Cmd, limit: &CallLimit<'_>) {
    match carry_letter(limit) {
        None => cmd.arg(depth(limit)),
        Some(letter) => cmd.arg(format!("{}{letter}", depth(limit))),
    };
}

/// Returns what the script is told of `limit` but a call's cost: the algorithm's code (negated when it does not
/// veto), window, max and depth, a calendar's ends, a penalty's first and longest block (µs; zeros without
/// one), the units the call must leave free for the priorities above its own, and how a bucket's level
/// carries over (its [`carry_letter`], 0 for none). Calls of the same go in one batch.
pub(crate) fn shape(limit: &CallLimit<'_>) -> [u64; 11] {
    let code = match limit.vetoes {
        true => code(limit.algorithm),
        false => -code(limit.algorithm),
    };
    let [previous, current, next] = limit.terms.ends;
    [
        code as u64,
        limit.terms.window,
        limit.terms.max,
        depth(limit),
        previous,
        current,
        next,
        limit.penalty.map_or(0, |penalty| penalty.first_micros()),
        limit.penalty.map_or(0, |penalty| penalty.cap_micros()),
        limit.terms.kept,
        carry_letter(limit).map_or(0, u64::from),
    ]
}

/// Adds a limit's max as the scripts take it: `<max>`, or `<max>/<kept>` for calls that must leave `kept` units
/// free for the priorities above their own (a call without one pays for nothing more).
fn max_arg(cmd: &mut Cmd, terms: &Terms) {
    match terms.kept {
        0 => cmd.arg(terms.max),
        kept => cmd.arg(format!("{}/{kept}", terms.max)),
    };
}

/// Adds `limit`'s four arguments to `scripts/groups.lua`: its shape, a calendar's ends in place of the depth.
fn limit_args(cmd: &mut Cmd, limit: &CallLimit<'_>) {
    let [code, window, _, depth, _, _, _, first, cap, _, _] = shape(limit);
    // The code as it was made: negative for a shadow limit.
    cmd.arg(code as i64).arg(window);
    max_arg(cmd, &limit.terms);
    match (limit.algorithm, limit.penalty) {
        (Algorithm::Calendar, None) => {
            cmd.arg(ends_text(&limit.terms));
        }
        (_, None) => depth_arg(cmd, limit),
        // A penalty's lengths ride after the depth.
        (algorithm, Some(_)) => {
            let depth = match (algorithm, carry_letter(limit)) {
                (Algorithm::Calendar, _) => ends_text(&limit.terms),
                (_, None) => depth.to_string(),
                (_, Some(letter)) => format!("{depth}{letter}"),
            };
            cmd.arg(format!("{depth}|{first}|{cap}"));
        }
    }
}

/// Writes a calendar's ends as the scripts take them: `<previous>:<current>:<next>` (µs).
fn ends_text(charge: &Terms) -> String {
    let [previous, current, next] = charge.ends;
    format!("{previous}:{current}:{next}")
}

/// Returns `limit`'s charge for a call that weighs `cost` on it.
fn terms_at_cost(limit: &CallLimit<'_>, cost: u64) -> Terms {
    Terms {
        cost,
        ..limit.terms
    }
}

/// Returns the script's mark of what `receipt` charged on a limit of `algorithm`: the nonce, the window's index, or
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

/// Writes a window (or a time to live) as a test passes it, with its "now" and the minimum TTL.
pub(crate) fn test_window(window: u64, now: u64) -> String {
    format!("{window} {now} {TEST_MIN_TTL_MILLIS}")
}

/// Returns a script of one limit's first argument: `window` µs; with a test's "now" and the minimum TTL when a test
/// passes them.
fn window_arg(window: u64, test_now: Option<u64>) -> String {
    match test_now {
        Some(now) => test_window(window, now),
        None => window.to_string(),
    }
}

/// Returns the first argument of a script of several limits (`scripts/parts/clock.lua`): "" for Redis's clock, or a
/// test's "now" and the minimum TTL.
pub(crate) fn clock(test_now: Option<u64>) -> Cow<'static, str> {
    match test_now {
        Some(now) => Cow::Owned(format!("{now} {TEST_MIN_TTL_MILLIS}")),
        None => Cow::Borrowed(""),
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
pub(crate) struct Outcomes {
    pub(crate) admitted: bool,
    pub(crate) outcomes: OneOrMany<Outcome>,
}

/// Returns the script and the command that decide `calls` on `limits` (of one slot), in turn, in one script call:
/// each call as one, admitted only if all its limits admit it, exactly as if each were sent alone in that
/// order; "now" from Redis `TIME`, or `test_now` when a test passes it in.
pub(crate) fn decide_command(
    limits: &[&CallLimit<'_>],
    calls: &[BatchCall<'_>],
    test_now: Option<u64>,
) -> (&'static LuaScript, Cmd) {
    if let [limit] = limits {
        if limit.penalty.is_none() {
            let script = &ONE_LIMIT[code(limit.algorithm) as usize - 1];
            return (script, one_limit_command(script, limit, calls, test_now));
        }
    }
    // Blocks, and calls of several limits, are decided by the script of groups: a batch of this one group.
    (&GROUPS, batch_command(&[Group { limits, calls }], test_now))
}

/// Adds each of `calls`' nonce (when `limits` keep members) and costs, as `scripts/groups.lua` takes them.
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

/// Reads what the script's `reply` says of `calls` on `limits` (as [`decide_command`] sent them): each call's
/// outcome, and when, on Redis's clock (µs since the Unix epoch, or the test's "now").
pub(crate) fn read_decided(
    reply: &Value,
    limits: &[&CallLimit<'_>],
    calls: &[BatchCall<'_>],
) -> Result<(OneOrMany<Outcomes>, u64), BackendError> {
    if let [limit] = limits {
        if limit.penalty.is_none() {
            return read_one_limit(reply, limit, calls);
        }
    }
    let (mut each, now) = read_batch(reply, &[Group { limits, calls }])?;
    let decided = each
        .pop()
        .unwrap_or_else(|| Err(BackendError::Reply(format!("{reply:?}"))))?;
    Ok((OneOrMany::Many(decided), now))
}

/// One charge to give back: where (its key, its algorithm), what the admission charged (its charge, whose
/// cost is the units it took, and its receipt), and how many units go back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GiveBack<'a> {
    pub(crate) key: &'a str,
    pub(crate) algorithm: Algorithm,
    pub(crate) terms: &'a Terms,
    pub(crate) receipt: &'a Receipt,
    pub(crate) units: u64,
}

impl<'a> GiveBack<'a> {
    /// Returns a give-back of `units` of what `limit` charged (`receipt`).
    pub(crate) fn of(limit: &'a CallLimit<'_>, receipt: &'a Receipt, units: u64) -> Self {
        GiveBack {
            key: &limit.key,
            algorithm: limit.algorithm,
            terms: &limit.terms,
            receipt,
            units,
        }
    }

    /// Adds its arguments to the script (`give_back`'s, and `lease`'s for what an earlier lease left).
    fn args(&self, cmd: &mut Cmd) {
        cmd.arg(self.units)
            .arg(self.terms.cost)
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
    let mut cmd = GIVE_BACK.command(&keys, 1);
    cmd.arg(&*clock(test_now));
    for given in charges {
        cmd.arg(code(given.algorithm))
            .arg(given.terms.window)
            .arg(given.terms.max);
        given.args(&mut cmd);
    }
    let _: Vec<i64> = GIVE_BACK.run(connection, &cmd).await?;
    Ok(())
}
