//! The Lua scripts of `scripts/` and how they are called: each algorithm's own (`one_limit`: the calls of one
//! limit), the limiter's (the limits of a stacked call decided as one, charges given back, `lease`), the
//! instances' heartbeat and the overrides'.

mod lease;
mod nonce;
mod one_limit;
mod reply;

pub(crate) use self::lease::lease;
use self::nonce::{nonce_text, NonceText};
use self::one_limit::decide_one_limit;
use self::reply::{int, non_negative};

use std::borrow::Cow;
use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisResult, Script, ServerErrorKind, ToRedisArgs, Value};

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
            // Room for a common call (the command, the SHA-1, a key and a few numbers) from the start: grown
            // one argument at a time, the buffers cost more than the rest of building it.
            let mut cmd = Cmd::with_capacity(8, 192);
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

/// The limiter's script: every algorithm, deciding the calls of several limits and giving back
/// (`scripts/limiter.lua`).
static LIMITER: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../../../scripts/limiter.lua")));

/// Each algorithm's own script, deciding the calls of one limit with only what it needs: the common call
/// (`scripts/<algorithm>.lua`), in the order of [`Algorithm::ALL`].
static LEAN: LazyLock<[LuaScript; 5]> = LazyLock::new(|| {
    [
        LuaScript::new(include_str!("../../../../scripts/sliding_log.lua")),
        LuaScript::new(include_str!("../../../../scripts/fixed_window.lua")),
        LuaScript::new(include_str!("../../../../scripts/sliding_window.lua")),
        LuaScript::new(include_str!("../../../../scripts/token_bucket.lua")),
        LuaScript::new(include_str!("../../../../scripts/leaky_bucket.lua")),
    ]
});

/// Loads every decision script (`SCRIPT LOAD`: on every node of a cluster), so that the first decision finds
/// it, and a server that refuses scripts says so at start-up.
pub(crate) async fn load(connection: &mut impl ConnectionLike) -> Result<(), BackendError> {
    for script in std::iter::once(&*LIMITER).chain(LEAN.iter()) {
        let _: Value = redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(script.source)
            .query_async(connection)
            .await?;
    }
    Ok(())
}

/// One limit of a call, as the script is told it.
#[derive(Clone)]
pub(crate) struct Limit<'a> {
    pub(crate) algorithm: Algorithm,
    pub(crate) key: &'a str,
    pub(crate) charge: &'a Charge,
    pub(crate) vetoes: bool,
}

impl Limit<'_> {
    /// The script's number for the algorithm: its place in [`Algorithm::ALL`], from 1.
    pub(crate) fn code(&self) -> i64 {
        let place = Algorithm::ALL.iter().position(|a| *a == self.algorithm);
        place.map_or(0, |place| place as i64 + 1)
    }

    /// How deep the limit's bucket is: the token bucket's burst, the leaky bucket's max wait (µs).
    fn depth(&self) -> u64 {
        match self.algorithm {
            Algorithm::TokenBucket => self.charge.burst,
            Algorithm::LeakyBucket => self.charge.max_wait,
            _ => 0,
        }
    }

    /// What the script is told of this limit but its cost: the algorithm's code (negated when it does not
    /// veto), window, max and depth; two calls with the same go in one batch.
    pub(crate) fn shape(&self) -> [u64; 4] {
        let code = if self.vetoes {
            self.code()
        } else {
            -self.code()
        };
        [
            code as u64,
            self.charge.window,
            self.charge.max,
            self.depth(),
        ]
    }

    /// How many values the script answers for this limit: allowed, remaining, retry_after and reset_after,
    /// then the leaky bucket's delay, then the buckets' receipt.
    fn answer_len(&self) -> usize {
        match self.algorithm {
            Algorithm::TokenBucket => 5,
            Algorithm::LeakyBucket => 6,
            _ => 4,
        }
    }

    /// The outcome the script's `answer` for this limit says, for a call decided `now` and named by `nonce`;
    /// `None` if the answer is not one.
    fn outcome(&self, answer: &[Value], now: u64, nonce: u64) -> Option<Outcome> {
        let allowed = int(answer, 0)? == 1;
        let receipt = match self.algorithm {
            Algorithm::SlidingLog => Receipt {
                mark: nonce,
                ..Receipt::default()
            },
            Algorithm::TokenBucket | Algorithm::LeakyBucket => match answer.last() {
                Some(Value::BulkString(queue)) if allowed => parse_queue(queue)?,
                _ => Receipt::default(),
            },
            // The window's index, as the script computes it (in floating point, as Lua does).
            _ => Receipt {
                mark: (now as f64 / self.charge.window as f64).floor() as u64,
                ..Receipt::default()
            },
        };
        Some(Outcome {
            allowed,
            remaining: int(answer, 1)?,
            retry_after: int(answer, 2)?,
            reset_after: int(answer, 3)?,
            delay: match self.algorithm {
                Algorithm::LeakyBucket => int(answer, 4)?,
                _ => 0,
            },
            receipt: Receipt {
                at: if allowed { now } else { 0 },
                ..receipt
            },
        })
    }

    /// The script's mark of what `receipt` charged: the nonce, the window's index, or the queue it left.
    fn mark(&self, receipt: &Receipt) -> String {
        match self.algorithm {
            Algorithm::SlidingLog => nonce_text(receipt.mark).as_str().to_owned(),
            Algorithm::TokenBucket | Algorithm::LeakyBucket => format!(
                "{}:{}:{}:{}",
                receipt.mark, receipt.fraction, receipt.since, receipt.given
            ),
            _ => receipt.mark.to_string(),
        }
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

/// The script's first argument: the operation, and, when a test passes "now" in, it and the minimum TTL.
fn operation(op: &'static str, test_now: Option<u64>) -> Cow<'static, str> {
    match test_now {
        Some(now) => Cow::Owned(format!("{op} {now} {TEST_MIN_TTL_MILLIS}")),
        None => Cow::Borrowed(op),
    }
}

/// One call of a batch on the same limits: its nonce (naming its sliding-log members) and its cost on each
/// limit.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    pub(crate) nonce: u64,
    pub(crate) costs: &'a [u64],
}

/// What the script decided of one call of a batch: whether the call was admitted, and each of its limits'
/// [`Outcome`] (not `decide::Decided`: a call's answers as the limiter returns them).
#[derive(Debug, Clone)]
pub(crate) struct CallOutcome {
    pub(crate) admitted: bool,
    pub(crate) outcomes: Outcomes,
}

/// A call's outcomes, one per limit: a call of one limit (the common call) keeps its own inline, so that
/// deciding it, and handing it to a coalesced caller, allocates nothing.
#[derive(Debug, Clone)]
pub(crate) enum Outcomes {
    /// A call of one limit.
    One(Outcome),
    /// A call of several, in the order of its limits.
    Many(Vec<Outcome>),
}

impl Outcomes {
    /// Each limit's outcome, in the order of the call's limits.
    pub(crate) fn as_slice(&self) -> &[Outcome] {
        match self {
            Outcomes::One(outcome) => std::slice::from_ref(outcome),
            Outcomes::Many(outcomes) => outcomes,
        }
    }
}

/// Decides `calls` on `limits`, in turn, in one script call: each call as one, admitted only if all its
/// limits admit it, exactly as if each were sent alone in that order. Returns what each call was decided,
/// and when, on Redis's clock (µs since the Unix epoch, or `test_now` when a test passes "now" in).
pub(crate) async fn decide(
    connection: &mut impl ConnectionLike,
    limits: &[Limit<'_>],
    calls: &[Call<'_>],
    test_now: Option<u64>,
) -> Result<(Vec<CallOutcome>, u64), BackendError> {
    if let [limit] = limits {
        return decide_one_limit(connection, limit, calls, test_now).await;
    }
    let keys: Vec<&str> = limits.iter().map(|limit| limit.key).collect();
    let op = operation("decide", test_now);
    let logs = limits.iter().any(|l| l.algorithm == Algorithm::SlidingLog);
    let args = |cmd: &mut Cmd| {
        cmd.arg(&*op);
        for limit in limits {
            let code = if limit.vetoes {
                limit.code()
            } else {
                -limit.code()
            };
            let charge = limit.charge;
            cmd.arg(code)
                .arg(charge.window)
                .arg(charge.max)
                .arg(limit.depth());
        }
        for call in calls {
            let nonce = if logs {
                nonce_text(call.nonce)
            } else {
                NonceText::EMPTY
            };
            cmd.arg(nonce.as_str()).arg(call.costs);
        }
    };
    let reply: Vec<Value> = LIMITER.run(connection, &keys, args).await?;
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let per_call = limits.iter().map(Limit::answer_len).sum::<usize>();
    let (Some(Value::Int(now)), true) = (reply.first(), reply.len() == 1 + per_call * calls.len())
    else {
        return Err(unexpected());
    };
    let now = non_negative(*now);
    let mut rest = &reply[1..];
    let mut decided = Vec::with_capacity(calls.len());
    for call in calls {
        let mut outcomes = Vec::with_capacity(limits.len());
        for limit in limits {
            let (answer, after) = rest.split_at(limit.answer_len());
            rest = after;
            let outcome = limit.outcome(answer, now, call.nonce);
            outcomes.push(outcome.ok_or_else(unexpected)?);
        }
        let admitted = limits
            .iter()
            .zip(&outcomes)
            .all(|(l, o)| o.allowed || !l.vetoes);
        decided.push(CallOutcome {
            admitted,
            outcomes: Outcomes::Many(outcomes),
        });
    }
    Ok((decided, now))
}

/// Gives back `units` of what each admission charged (its limit, and its receipt), in one script call.
pub(crate) async fn refund(
    connection: &mut impl ConnectionLike,
    charged: &[(Limit<'_>, u64, Receipt)],
    test_now: Option<u64>,
) -> Result<(), BackendError> {
    let keys: Vec<&str> = charged.iter().map(|(limit, _, _)| limit.key).collect();
    let op = operation("refund", test_now);
    let marks: Vec<String> = charged
        .iter()
        .map(|(l, _, receipt)| l.mark(receipt))
        .collect();
    let args = |cmd: &mut Cmd| {
        cmd.arg(&*op);
        for ((limit, units, receipt), mark) in charged.iter().zip(&marks) {
            let charge = limit.charge;
            cmd.arg(limit.code())
                .arg(charge.window)
                .arg(charge.max)
                .arg(*units)
                .arg(charge.cost)
                .arg(receipt.at)
                .arg(mark);
        }
    };
    let _: Vec<i64> = LIMITER.run(connection, &keys, args).await?;
    Ok(())
}
