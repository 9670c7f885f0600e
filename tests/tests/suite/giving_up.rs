//! One way to wait for a slot, whichever door a call comes in by: the plain API's `enforce`, `acquire` and
//! `estimate`, a list's `enforce`, the attribute's `mode = wait`, the tower layer and an outbound `turn` each
//! wait in their node's line, and a caller that gives up (its future dropped) gives its slot back. So 25
//! callers that give up after 300 ms do not delay the next one: it is served within a second, where it would
//! have waited past two seconds for the slots they kept.

use std::future::{poll_fn, IntoFuture};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{rate_limit, Algorithm, FakeClock, Limiter, RateLimited, Rule};
use tests::RedisServer;
use tower_layer::Layer;
use tower_service::Service;

/// 10 calls a second, evenly spaced; a call waits up to 30 s for its slot.
fn spaced(prefix: &'static str) -> Rule {
    Rule::new()
        .prefix(prefix)
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1))
        .max_wait(Duration::from_secs(30))
}

/// A rule of `prefix` that waits for nothing: what [`inspect`](Limiter::inspect) tells it to wait for a
/// call of key `k` is how far the key's line reaches ahead.
fn reach(prefix: &'static str) -> Rule {
    Rule::new()
        .prefix(prefix)
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1))
}

/// Waits until the line of `prefix`'s key `k` reaches no further than `ahead`: the callers that gave up have
/// given their slots back (in memory at once, to Redis on tasks of their own; on a frozen clock nothing else
/// shortens it). Fails after 10 s.
async fn line_within(limiter: &Limiter, prefix: &'static str, ahead: Duration, door: &str) {
    let started = Instant::now();
    loop {
        let inspected = limiter.inspect(&reach(prefix), "k").await.unwrap();
        if inspected.retry_after <= ahead {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{door}: the line still reaches {:?} ahead",
            inspected.retry_after
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Starts 25 callers (`call(i)`) of `prefix`'s key `k` at once, each giving up after 300 ms; then, once
/// their slots are back (the line reaches at most 6 slots ahead, where it reached 25), times the next caller:
/// served, and within a second.
async fn the_next_caller_is_not_delayed<F, Fut, T, E>(
    limiter: &Limiter,
    prefix: &'static str,
    door: &str,
    call: F,
) where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T, E>>,
    E: std::fmt::Debug,
{
    let callers = (0..25).map(|i| tokio::time::timeout(Duration::from_millis(300), call(i)));
    let results = futures::future::join_all(callers).await;
    let gave_up = results.iter().filter(|result| result.is_err()).count();
    // 10 a second: the slots 0 to 300 ms are served, the other 21 or so give up.
    assert!(gave_up >= 18, "{door}: {gave_up} of 25 gave up");
    // Dropped, a caller gives its slot back at once in its node's line, and to Redis on a task.
    line_within(limiter, prefix, Duration::from_millis(600), door).await;
    let started = Instant::now();
    let next = call(25).await;
    let waited = started.elapsed();
    assert!(
        next.is_ok(),
        "{door}: the next caller refused: {next:?}",
        next = next.err()
    );
    assert!(
        waited < Duration::from_secs(1),
        "{door}: the next caller waited {waited:?} for the slots of {gave_up} callers that gave up"
    );
}

#[tokio::test]
async fn a_caller_that_gives_up_gives_its_slot_back_whatever_its_door() {
    let server = RedisServer::start();
    // A frozen clock for the decisions: nothing leaks, so the line shrinks only by what is given back (the
    // waits themselves are real: each slot is waited for on this machine's clock).
    let clock = FakeClock::new();
    let in_memory = Limiter::builder().clock(clock.clone()).build().unwrap();
    for limiter in [in_memory, server.limiter_with_clock(&clock)] {
        let rule = spaced("enforce:");
        the_next_caller_is_not_delayed(&limiter, "enforce:", "enforce", |_| {
            limiter.enforce(&rule, "k").into_future()
        })
        .await;
        let rule = spaced("acquire:");
        the_next_caller_is_not_delayed(&limiter, "acquire:", "acquire", |_| {
            limiter.acquire(&rule, "k").into_future()
        })
        .await;
        let rule = spaced("estimate:");
        the_next_caller_is_not_delayed(&limiter, "estimate:", "estimate", |_| {
            limiter.estimate(&rule, "k").cost(1).into_future()
        })
        .await;
        let (rule, other) = (spaced("all:"), Rule::new().prefix("all:other:").max(1_000));
        the_next_caller_is_not_delayed(&limiter, "all:", "all(..).enforce", |_| {
            limiter
                .all([(&rule, "k"), (&other, "k")])
                .enforce()
                .into_future()
        })
        .await;
        let limit = limiter.resolve(&spaced("limit:"));
        the_next_caller_is_not_delayed(&limiter, "limit:", "Limit::enforce", |_| {
            limit.enforce("k").into_future()
        })
        .await;
        let rule = spaced("turn:");
        the_next_caller_is_not_delayed(&limiter, "turn:", "turn", |_| {
            limiter.turn(&rule, "k").into_future()
        })
        .await;
        the_next_caller_is_not_delayed(&limiter, "attribute:", "the attribute", |_| {
            limiter.scope(waits("k"))
        })
        .await;
        let layer = RateLimitLayer::new(&limiter, [spaced("layer:")], Key::header("x-id"));
        let service = layer.layer(Router::new().route("/", get(|| async { "ok" })));
        the_next_caller_is_not_delayed(&limiter, "layer:", "the tower layer", |_| {
            let mut service = service.clone();
            async move {
                poll_fn(|cx| Service::<http::Request<Body>>::poll_ready(&mut service, cx))
                    .await
                    .unwrap();
                let request = http::Request::get("/")
                    .header("x-id", "k")
                    .body(Body::empty());
                let response = service.call(request.unwrap()).await.unwrap();
                match response.status().as_u16() {
                    200 => Ok(()),
                    status => Err(status),
                }
            }
        })
        .await;
    }
}

#[rate_limit(prefix = "attribute:", key = id, algorithm = leaky_bucket, max = 10, window = "1s", mode = wait, max_wait = "30s")]
async fn waits(id: &str) -> Result<(), RateLimited> {
    Ok(())
}
