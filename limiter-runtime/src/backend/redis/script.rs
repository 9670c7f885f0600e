//! The Lua scripts of `scripts/`: one per algorithm, each one atomic decision on one key in one round trip.

use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisResult, Script, ServerErrorKind, ToRedisArgs};

use crate::algorithm::{Algorithm, Charge, Outcome, Receipt};
use crate::error::BackendError;

/// Keys live at least this long when a test passes "now" in: Redis expires keys on its own clock, which does
/// not follow the test's.
const TEST_MIN_TTL_MILLIS: u64 = 600_000;

/// A Lua script of `scripts/`, called by its SHA-1 (EVALSHA) and, when Redis does not have it (NOSCRIPT:
/// after a restart, a failover or `SCRIPT FLUSH`), once more with its source (EVAL), which loads and runs it in
/// one atomic step, so that retry cannot meet NOSCRIPT again.
pub(crate) struct LuaScript {
    source: &'static str,
    sha1: String,
}

impl LuaScript {
    pub(crate) fn new(source: &'static str) -> LuaScript {
        LuaScript {
            source,
            sha1: Script::new(source).get_hash().to_owned(),
        }
    }

    /// Runs the script on `key` with `args`. Only NOSCRIPT is retried: any other failure may have been
    /// applied.
    pub(crate) async fn invoke<T: redis::FromRedisValue>(
        &self,
        connection: &mut impl ConnectionLike,
        key: &str,
        args: impl ToRedisArgs,
    ) -> RedisResult<T> {
        self.run(connection, &[key], |cmd| {
            cmd.arg(&args);
        })
        .await
    }

    /// Runs the script on `keys`, with the arguments `args` writes.
    async fn run<T: redis::FromRedisValue>(
        &self,
        connection: &mut impl ConnectionLike,
        keys: &[&str],
        args: impl Fn(&mut Cmd),
    ) -> RedisResult<T> {
        let call = |command: &str, script: &str| {
            let mut cmd = Cmd::new();
            cmd.arg(command).arg(script).arg(keys.len()).arg(keys);
            args(&mut cmd);
            cmd
        };
        match call("EVALSHA", &self.sha1).query_async(connection).await {
            Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                call("EVAL", self.source).query_async(connection).await
            }
            result => result,
        }
    }
}

/// The limiter's script: every algorithm, deciding and giving back (`scripts/limiter.lua`).
static LIMITER: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../../scripts/limiter.lua")));

/// The integers the script answers for each limit of a call.
const ANSWER: usize = 9;

/// One argument of the limiter's script.
enum Arg<'a> {
    Int(u64),
    Text(&'a str),
}

/// Writes `args` into `cmd`.
fn write<'a>(args: &'a [Arg<'a>]) -> impl Fn(&mut Cmd) + 'a {
    move |cmd| {
        for arg in args {
            match arg {
                Arg::Int(n) => cmd.arg(*n),
                Arg::Text(text) => cmd.arg(*text),
            };
        }
    }
}

/// One limit of a call, as the script is told it.
#[derive(Clone)]
pub(crate) struct Limit<'a> {
    pub(crate) algorithm: Algorithm,
    pub(crate) key: &'a str,
    pub(crate) charge: &'a Charge,
    pub(crate) vetoes: bool,
}

/// The script's number for `algorithm`.
fn code(algorithm: Algorithm) -> u64 {
    match algorithm {
        Algorithm::SlidingLog => 1,
        Algorithm::FixedWindow => 2,
        Algorithm::SlidingWindow => 3,
        Algorithm::TokenBucket => 4,
        Algorithm::LeakyBucket => 5,
    }
}

/// The header every call of the script starts with: the operation, "now" (tests) and the minimum TTL.
fn header(op: &'static str, test_now: Option<u64>) -> [Arg<'static>; 3] {
    match test_now {
        Some(now) => [Arg::Text(op), Arg::Int(now), Arg::Int(TEST_MIN_TTL_MILLIS)],
        None => [Arg::Text(op), Arg::Text(""), Arg::Int(0)],
    }
}

/// Decides one call on `limits` as one, in one script call: whether it was admitted, and each limit's
/// outcome, when on Redis's clock (µs since the Unix epoch, or `test_now` when a test passes "now" in). The
/// call's `nonce` (16 hex digits) names its sliding-log members.
pub(crate) async fn decide(
    connection: &mut impl ConnectionLike,
    limits: &[Limit<'_>],
    nonce: &str,
    test_now: Option<u64>,
) -> Result<(bool, Vec<Outcome>, u64), BackendError> {
    let keys: Vec<&str> = limits.iter().map(|limit| limit.key).collect();
    let mut args: Vec<Arg<'_>> = header("decide", test_now).into();
    for limit in limits {
        let Charge {
            window,
            max,
            burst,
            max_wait,
            ..
        } = *limit.charge;
        let vetoes = u64::from(limit.vetoes);
        let each = [code(limit.algorithm), window, max, burst, max_wait, vetoes];
        args.extend(each.map(Arg::Int));
    }
    for limit in limits {
        args.extend([Arg::Int(limit.charge.cost), Arg::Text(nonce)]);
    }
    let reply: Vec<i64> = LIMITER.run(connection, &keys, write(&args)).await?;
    let nonce = u64::from_str_radix(nonce, 16).unwrap_or(0);
    match &reply[..] {
        [now, admitted, answers @ ..] if answers.len() == ANSWER * limits.len() => {
            let now = non_negative(*now);
            let outcomes = answers.chunks_exact(ANSWER).zip(limits).map(|(answer, limit)| {
                let [allowed, remaining, retry_after, reset_after, delay, mark, fraction, since, given] =
                    std::array::from_fn(|i| non_negative(answer[i]));
                let sliding_log = limit.algorithm == Algorithm::SlidingLog;
                Outcome {
                    allowed: allowed == 1,
                    remaining,
                    retry_after,
                    reset_after,
                    delay,
                    receipt: Receipt {
                        at: if allowed == 1 { now } else { 0 },
                        mark: if sliding_log { nonce } else { mark },
                        fraction,
                        since,
                        given,
                    },
                }
            });
            Ok((*admitted == 1, outcomes.collect(), now))
        }
        _ => Err(BackendError::Reply(reply)),
    }
}

/// Gives back `units` of what each admission charged (its limit, and its receipt), in one script call.
pub(crate) async fn refund(
    connection: &mut impl ConnectionLike,
    charged: &[(Limit<'_>, u64, Receipt)],
    test_now: Option<u64>,
) -> Result<(), BackendError> {
    let keys: Vec<&str> = charged.iter().map(|(limit, _, _)| limit.key).collect();
    let marks: Vec<String> = charged
        .iter()
        .map(|(limit, _, receipt)| match limit.algorithm {
            Algorithm::SlidingLog => nonce_text(receipt.mark),
            _ => receipt.mark.to_string(),
        })
        .collect();
    let mut args: Vec<Arg<'_>> = header("refund", test_now).into();
    for ((limit, units, receipt), mark) in charged.iter().zip(&marks) {
        let charge = limit.charge;
        args.extend(
            [
                code(limit.algorithm),
                charge.window,
                charge.max,
                *units,
                charge.cost,
                receipt.at,
            ]
            .map(Arg::Int),
        );
        args.push(Arg::Text(mark));
        args.extend([receipt.fraction, receipt.since, receipt.given].map(Arg::Int));
    }
    let _: Vec<i64> = LIMITER.run(connection, &keys, write(&args)).await?;
    Ok(())
}

/// A nonce as the script names members with it: 16 hex digits.
pub(crate) fn nonce_text(nonce: u64) -> String {
    format!("{nonce:016x}")
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
