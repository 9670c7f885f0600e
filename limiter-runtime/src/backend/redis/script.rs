//! The Lua scripts of `scripts/`: one per algorithm, each one atomic decision on one key in one round trip.

use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisResult, Script, ServerErrorKind, ToRedisArgs};

use crate::algorithm::{Algorithm, Charge, Outcome};
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
        let call = |command: &str, script: &str| {
            let mut cmd = Cmd::new();
            cmd.arg(command).arg(script).arg(1).arg(key).arg(&args);
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

/// The script of `algorithm`.
fn script(algorithm: Algorithm) -> &'static LuaScript {
    macro_rules! file {
        ($name:literal) => {{
            static SCRIPT: LazyLock<LuaScript> =
                LazyLock::new(|| LuaScript::new(include_str!(concat!("../../../scripts/", $name))));
            &SCRIPT
        }};
    }
    match algorithm {
        Algorithm::SlidingLog => file!("sliding_log.lua"),
        Algorithm::FixedWindow => file!("fixed_window.lua"),
        Algorithm::SlidingWindow => file!("sliding_window.lua"),
        Algorithm::TokenBucket => file!("token_bucket.lua"),
        Algorithm::LeakyBucket => file!("leaky_bucket.lua"),
    }
}

/// Decides a call of `charge` on `key` with `algorithm`'s script, and says when on Redis's clock (µs since the
/// Unix epoch), or at `test_now` (µs) when a test passes "now" in.
pub(crate) async fn decide(
    connection: &mut impl ConnectionLike,
    algorithm: Algorithm,
    key: &str,
    charge: &Charge,
    test_now: Option<u64>,
) -> Result<(Outcome, u64), BackendError> {
    let args = (
        charge.window,
        charge.max,
        charge.cost,
        charge.burst,
        charge.max_wait,
    );
    let test_now = test_now.map(|now| (now, TEST_MIN_TTL_MILLIS));
    let reply: Vec<i64> = script(algorithm)
        .invoke(connection, key, (args, test_now))
        .await?;
    match reply[..] {
        [allowed, remaining, retry_after, reset_after, delay, now] => Ok((
            Outcome {
                allowed: allowed == 1,
                remaining: non_negative(remaining),
                retry_after: non_negative(retry_after),
                reset_after: non_negative(reset_after),
                delay: non_negative(delay),
            },
            non_negative(now),
        )),
        _ => Err(BackendError::Reply(reply)),
    }
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
