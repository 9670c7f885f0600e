//! The verbs whose futures own what they ask (boxed): a list's check and enforce, and the verbs that hold a
//! charge ([`Permit`], [`Estimate`], [`Turn`]). Each builds its call from its asks, as every request does.

use crate::call::Ask;
use crate::limiter::{Estimate, Limiter, Permit, Turn};
use crate::{Decision, Priority, RateLimited};

/// What makes a check's answer of each limit's decision.
pub(super) type Answer<D> = fn(&mut dyn ExactSizeIterator<Item = Decision>) -> D;

/// Checks the call of `asks`: what `answer` makes of each limit's decision; a permit it took given back at
/// once.
pub(super) async fn check<D>(limiter: &Limiter, asks: Vec<Ask<'static>>, answer: Answer<D>) -> D {
    let call = limiter.pipeline.call(asks);
    let decided = limiter.pipeline.ruling(&call).await;
    limiter.let_go(&call, &decided).await;
    let answered = answer(&mut decided.decisions());
    answered
}

/// Enforces the call of `asks`: a refusal, or what `answer` makes of each limit's decision once its slot has
/// come.
pub(super) async fn enforce<D>(
    limiter: &Limiter,
    asks: Vec<Ask<'static>>,
    priority: Priority,
    answer: Answer<D>,
) -> Result<D, RateLimited> {
    let call = limiter.pipeline.call(asks);
    let (call, decided) = limiter.admit(call, priority).await?;
    limiter.let_go(&call, &decided).await;
    let answered = answer(&mut decided.decisions());
    Ok(answered)
}

/// Takes the permits of the call of `asks`, its rates enforced beside them.
pub(super) async fn acquire(
    limiter: &Limiter,
    asks: Vec<Ask<'static>>,
    priority: Priority,
) -> Result<Permit, RateLimited> {
    let call = limiter.pipeline.call(asks);
    let (call, decided) = limiter.admit(call, priority).await?;
    Ok(Permit::new(limiter.clone(), call, decided))
}

/// Charges the estimate of the call of `asks` (its cost), to settle later.
pub(super) async fn estimate(
    limiter: &Limiter,
    asks: Vec<Ask<'static>>,
    priority: Priority,
) -> Result<Estimate, RateLimited> {
    let call = limiter.pipeline.call(asks);
    let (call, decided) = limiter.admit(call, priority).await?;
    Ok(Estimate::new(limiter.clone(), call, decided))
}

/// Waits for the turn of the call of `asks`, of `priority`, to go to an upstream: built again each time it
/// asks.
pub(super) async fn turn(
    limiter: &Limiter,
    asks: Vec<Ask<'static>>,
    priority: Priority,
) -> Result<Turn, RateLimited> {
    let pipeline = &limiter.pipeline;
    limiter
        .turn_of(priority, || pipeline.call(asks.iter().cloned()))
        .await
}
