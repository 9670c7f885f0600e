//! Taking a lease (`limiter.lua`'s `lease`), giving back what is left of the last one.

use redis::aio::ConnectionLike;
use redis::{Cmd, Value};

use super::reply::{bucket, int};
use super::{operation, Limit, LIMITER};
use crate::algorithm::{Algorithm, Receipt, Reported};
use crate::error::BackendError;

/// Takes a lease on `limit` (a token bucket or a fixed window) in one script call: up to `want` units, if the
/// limit has room for at least the call's `cost`, giving `back` back first (what is left of an earlier lease
/// of the same algorithm, as [`refund`](super::refund) is told it: its limit, whose cost is the units it
/// took, its units left, and what taking it charged). Returns when (Redis's clock), how many units were
/// taken (none: the call is refused), and the limit's state before they were.
pub(crate) async fn lease(
    connection: &mut impl ConnectionLike,
    limit: &Limit<'_>,
    want: u64,
    back: Option<&(Limit<'_>, u64, Receipt)>,
    test_now: Option<u64>,
) -> Result<(u64, u64, Reported), BackendError> {
    let op = operation("lease", test_now);
    let charge = limit.charge;
    let mark = back.map(|(earlier, _, receipt)| earlier.mark(receipt));
    let args = |cmd: &mut Cmd| {
        cmd.arg(&*op)
            .arg(limit.code())
            .arg(charge.window)
            .arg(charge.max)
            .arg(charge.burst)
            .arg(charge.cost)
            .arg(want.max(charge.cost));
        if let (Some((earlier, left, receipt)), Some(mark)) = (back, &mark) {
            cmd.arg(*left)
                .arg(earlier.charge.cost)
                .arg(receipt.at)
                .arg(mark.as_str());
        }
    };
    let reply: Vec<Value> = LIMITER.run(connection, &[limit.key], args).await?;
    let unexpected = || BackendError::Reply(format!("{reply:?}"));
    let [Some(now), Some(taken), Some(first)] = [0, 1, 2].map(|i| int(&reply, i)) else {
        return Err(unexpected());
    };
    let reported = match limit.algorithm {
        Algorithm::FixedWindow => Reported::Count(first),
        _ => bucket(first, reply.get(3)).ok_or_else(unexpected)?,
    };
    Ok((now, taken, reported))
}
