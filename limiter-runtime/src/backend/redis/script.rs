//! The Lua scripts of `scripts/` and how they are called: the limiter's (every algorithm, one atomic script call
//! for all the limits of a call), the instances' heartbeat and the overrides'.

use std::borrow::Cow;
use std::sync::LazyLock;

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisResult, Script, ServerErrorKind, ToRedisArgs, Value};

use crate::algorithm::{sliding_log, Algorithm, Charge, Outcome, Receipt, Reported, State};
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

/// The limiter's script: every algorithm, deciding the calls of several limits and giving back
/// (`scripts/limiter.lua`).
static LIMITER: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../../scripts/limiter.lua")));

/// Each algorithm's own script, deciding the calls of one limit with only what it needs: the common call
/// (`scripts/<algorithm>.lua`), in the order of [`Algorithm::ALL`].
static LEAN: LazyLock<[LuaScript; 5]> = LazyLock::new(|| {
    [
        LuaScript::new(include_str!("../../../scripts/sliding_log.lua")),
        LuaScript::new(include_str!("../../../scripts/fixed_window.lua")),
        LuaScript::new(include_str!("../../../scripts/sliding_window.lua")),
        LuaScript::new(include_str!("../../../scripts/token_bucket.lua")),
        LuaScript::new(include_str!("../../../scripts/leaky_bucket.lua")),
    ]
});

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
        let int = |i: usize| match answer.get(i) {
            Some(Value::Int(n)) => Some(non_negative(*n)),
            _ => None,
        };
        let allowed = int(0)? == 1;
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
            remaining: int(1)?,
            retry_after: int(2)?,
            reset_after: int(3)?,
            delay: match self.algorithm {
                Algorithm::LeakyBucket => int(4)?,
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

/// What the script decided of one call: whether it was admitted, and each limit's outcome.
#[derive(Debug, Clone)]
pub(crate) struct Decided {
    pub(crate) admitted: bool,
    pub(crate) outcomes: Vec<Outcome>,
}

/// Decides `calls` on `limits`, in turn, in one script call: each call as one, admitted only if all its
/// limits admit it, exactly as if each were sent alone in that order. Returns what each call was decided,
/// and when, on Redis's clock (µs since the Unix epoch, or `test_now` when a test passes "now" in).
pub(crate) async fn decide(
    connection: &mut impl ConnectionLike,
    limits: &[Limit<'_>],
    calls: &[Call<'_>],
    test_now: Option<u64>,
) -> Result<(Vec<Decided>, u64), BackendError> {
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
        decided.push(Decided { admitted, outcomes });
    }
    Ok((decided, now))
}

/// Decides `calls` on the one limit `limit`, in turn, in one call of its algorithm's own script, which
/// answers the key's state before the first call: the algorithm's twin, as that state, replays the calls for
/// each one's outcome (the sliding log's, from its count and the times the script reports of each call
/// refused).
async fn decide_one_limit(
    connection: &mut impl ConnectionLike,
    limit: &Limit<'_>,
    calls: &[Call<'_>],
    test_now: Option<u64>,
) -> Result<(Vec<Decided>, u64), BackendError> {
    let charge = limit.charge;
    // A test's "now" and minimum TTL ride with the window.
    let test_window = test_now.map(|now| format!("{} {now} {TEST_MIN_TTL_MILLIS}", charge.window));
    let logs = limit.algorithm == Algorithm::SlidingLog;
    let args = |cmd: &mut Cmd| {
        match &test_window {
            Some(window) => cmd.arg(window.as_str()),
            None => cmd.arg(charge.window),
        };
        cmd.arg(charge.max);
        if matches!(
            limit.algorithm,
            Algorithm::TokenBucket | Algorithm::LeakyBucket
        ) {
            cmd.arg(limit.depth());
        }
        for call in calls {
            cmd.arg(call.costs.first().copied().unwrap_or(1));
            if logs {
                cmd.arg(nonce_text(call.nonce).member_prefix());
            }
        }
    };
    let script = &LEAN[limit.code() as usize - 1];
    let reply: Vec<Value> = script.run(connection, &[limit.key], args).await?;
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let int = |i: usize| match reply.get(i) {
        Some(Value::Int(n)) => Some(non_negative(*n)),
        _ => None,
    };
    let now = int(0).ok_or_else(unexpected)?;
    let first = int(1).ok_or_else(unexpected)?;
    let charge_of = |call: &Call<'_>| Charge {
        cost: call.costs.first().copied().unwrap_or(1),
        ..*charge
    };
    let decided = |outcome: Outcome| Decided {
        admitted: outcome.allowed || !limit.vetoes,
        outcomes: vec![outcome],
    };
    let mut each = Vec::with_capacity(calls.len());
    if logs {
        // The count goes up by each admitted call's cost; each call refused reads two times.
        let (mut count, mut times) = (first, reply[2..].chunks(2));
        for call in calls {
            let charge = charge_of(call);
            let fits = count + charge.cost <= charge.max;
            let (blocking, newest) = match fits {
                true => (None, None),
                false => {
                    let [blocking, newest] = times.next().ok_or_else(unexpected)? else {
                        return Err(unexpected());
                    };
                    (score(blocking), score(newest))
                }
            };
            let mut outcome =
                sliding_log::outcome(now, &charge, count, |_| blocking.unwrap_or(now), newest);
            if outcome.allowed {
                count += charge.cost;
                outcome.receipt.mark = call.nonce;
            }
            each.push(decided(outcome));
        }
        return Ok((each, now));
    }
    let reported = match limit.algorithm {
        Algorithm::FixedWindow => Reported::Count(first),
        Algorithm::SlidingWindow => Reported::Counts {
            current: first,
            previous: int(2).ok_or_else(unexpected)?,
        },
        _ => {
            let run = match reply.get(2) {
                Some(Value::BulkString(run)) => parse_run(run).ok_or_else(unexpected)?,
                _ => (0, 0),
            };
            Reported::Queue {
                queued: u128::from(first),
                since: run.0,
                given: run.1,
            }
        }
    };
    let mut state =
        State::reported(limit.algorithm, now, charge, reported).ok_or_else(unexpected)?;
    for call in calls {
        each.push(decided(state.decide(now, &charge_of(call))));
    }
    Ok((each, now))
}

/// What is given back of an earlier lease when a new one is taken: its units left, and what taking it
/// charged (its units, and its receipt).
pub(crate) struct GiveBack {
    pub(crate) left: u64,
    pub(crate) units: u64,
    pub(crate) receipt: Receipt,
}

/// Takes a lease on `limit` (a token bucket or a fixed window) in one script call: up to `want` units, if the
/// limit has room for at least the call's `cost`, giving `back` back first. Returns when (Redis's clock),
/// how many units were taken (none: the call is refused), and the limit's state before they were.
pub(crate) async fn lease(
    connection: &mut impl ConnectionLike,
    limit: &Limit<'_>,
    want: u64,
    back: Option<&GiveBack>,
    test_now: Option<u64>,
) -> Result<(u64, u64, Reported), BackendError> {
    let op = operation("lease", test_now);
    let charge = limit.charge;
    let mark = back.map(|back| limit.mark(&back.receipt));
    let args = |cmd: &mut Cmd| {
        cmd.arg(&*op)
            .arg(limit.code())
            .arg(charge.window)
            .arg(charge.max)
            .arg(charge.burst)
            .arg(charge.cost)
            .arg(want.max(charge.cost));
        if let (Some(back), Some(mark)) = (back, &mark) {
            cmd.arg(back.left)
                .arg(back.units)
                .arg(back.receipt.at)
                .arg(mark.as_str());
        }
    };
    let reply: Vec<Value> = LIMITER.run(connection, &[limit.key], args).await?;
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let int = |i: usize| match reply.get(i) {
        Some(Value::Int(n)) => Some(non_negative(*n)),
        _ => None,
    };
    let (Some(now), Some(taken), Some(first)) = (int(0), int(1), int(2)) else {
        return Err(unexpected());
    };
    let reported = match limit.algorithm {
        Algorithm::FixedWindow => Reported::Count(first),
        _ => {
            let (since, given) = match reply.get(3) {
                Some(Value::BulkString(run)) if !run.is_empty() => {
                    parse_run(run).ok_or_else(unexpected)?
                }
                _ => (0, 0),
            };
            Reported::Queue {
                queued: u128::from(first),
                since,
                given,
            }
        }
    };
    Ok((now, taken, reported))
}

/// A member's score as Redis answers it (a decimal, possibly in floating-point notation), in µs; `None` for
/// none ("").
fn score(value: &Value) -> Option<u64> {
    let Value::BulkString(text) = value else {
        return None;
    };
    let text = std::str::from_utf8(text).ok()?;
    text.parse::<u64>()
        .ok()
        .or_else(|| text.parse::<f64>().ok().map(|s| s as u64))
}

/// A bucket's run as its script answers it: `<since>:<given>`.
fn parse_run(run: &[u8]) -> Option<(u64, u64)> {
    let (since, given) = std::str::from_utf8(run).ok()?.split_once(':')?;
    Some((since.parse().ok()?, given.parse().ok()?))
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

/// A nonce as the script names members with it: 16 hex digits (or none), on the stack.
pub(crate) struct NonceText {
    digits: [u8; 16],
    len: usize,
}

impl NonceText {
    const EMPTY: NonceText = NonceText {
        digits: [0; 16],
        len: 0,
    };

    pub(crate) fn as_str(&self) -> &str {
        // Only ASCII hex digits are ever written.
        std::str::from_utf8(&self.digits[..self.len]).unwrap_or_default()
    }

    /// What the call's members start with: its digits and `:` (the unit follows).
    fn member_prefix(&self) -> MemberPrefix {
        let mut prefix = MemberPrefix([b':'; 17]);
        prefix.0[..16].copy_from_slice(&self.digits);
        prefix
    }
}

/// A call's nonce and `:`, as its sliding-log members start.
struct MemberPrefix([u8; 17]);

impl ToRedisArgs for MemberPrefix {
    fn write_redis_args<W: ?Sized + redis::RedisWrite>(&self, out: &mut W) {
        out.write_arg(&self.0);
    }
}

/// `nonce` as the script names members with it: 16 hex digits.
pub(crate) fn nonce_text(nonce: u64) -> NonceText {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digits = std::array::from_fn(|i| HEX[(nonce >> (60 - 4 * i)) as usize & 0xf]);
    NonceText { digits, len: 16 }
}

fn non_negative(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
