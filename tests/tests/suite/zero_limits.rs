//! A limit of zero (`Rule::max(0)`, `Rule::in_flight(0)`) admits no call, ever: in memory and on Redis alike,
//! it refuses each as too large ([`Reason::TooLarge`], HTTP 413 without `Retry-After`), as it refuses a cost
//! above its limit, never with a time to retry after that would never come.

use std::time::Duration;

use axum::response::IntoResponse;
use http::{header, StatusCode};
use limiter_runtime::{FakeClock, Limiter, Reason, Rule};
use tests::{RedisServer, ALGORITHMS};

/// Every way of writing a limit of zero: each algorithm's `max(0)`, and no permit in flight.
fn zeros() -> Vec<Rule> {
    let mut rules: Vec<Rule> = ALGORITHMS
        .into_iter()
        .map(|algorithm| {
            Rule::new()
                .prefix(format!("zero:{algorithm:?}:"))
                .algorithm(algorithm)
                .max(0)
                .window(Duration::from_secs(10))
        })
        .collect();
    rules.push(Rule::new().prefix("zero:flight:").in_flight(0));
    rules.push(
        Rule::new()
            .prefix("zero:calendar:")
            .period(limiter_runtime::Period::Day)
            .max(0),
    );
    rules
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_of_zero_refuses_every_call_as_too_large_in_memory_and_on_redis() {
    let server = RedisServer::start();
    for (store, limiter) in [
        ("memory", Limiter::in_memory()),
        ("redis", server.limiter()),
    ] {
        for rule in zeros() {
            let what = format!("{store}, {rule:?}");
            for cost in [0, 1, 5] {
                let decision = limiter.check(&rule, "k").cost(cost).await;
                assert!(!decision.allowed, "{what}, cost {cost}: {decision:?}");
                assert_eq!(decision.limit, 0, "{what}");
                assert_eq!(decision.retry_after, Duration::ZERO, "{what}, cost {cost}");
                assert_eq!(decision.reset_after, Duration::ZERO, "{what}, cost {cost}");
            }
            let refused = limiter.enforce(&rule, "k").await.unwrap_err();
            assert_eq!(refused.reason(), Reason::TooLarge, "{what}");
            assert_eq!(refused.retry_after(), Duration::ZERO, "{what}");
            let refused = limiter
                .resolve(&rule)
                .enforce("k")
                .cost(0)
                .await
                .unwrap_err();
            assert_eq!(refused.reason(), Reason::TooLarge, "{what}");
            let refused = limiter.acquire(&rule, "k").await.unwrap_err();
            assert_eq!(refused.reason(), Reason::TooLarge, "{what}");
            assert_eq!(refused.retry_after(), Duration::ZERO, "{what}");
            // As a response: 413, and no Retry-After to wait for.
            let response = refused.into_response();
            assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE, "{what}");
            assert!(
                response.headers().get(header::RETRY_AFTER).is_none(),
                "{what}"
            );
        }
    }
    // Nothing was ever counted in Redis.
    assert!(server.limit_keys().is_empty(), "{:?}", server.limit_keys());
}

/// A limit of one is not too large for a call of one: it is refused for the window, then admitted again once
/// the window has passed (on a fake clock); a permit in flight of one is refused while held, then admitted
/// again once dropped.
#[tokio::test]
async fn a_limit_of_one_is_a_limit_like_any_other() {
    let clock = FakeClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build().unwrap();
    let window = Duration::from_secs(10);
    let rule = Rule::new().prefix("one:").max(1).window(window);
    let permit = limiter.acquire(&rule, "k").await.unwrap();
    let refused = limiter.acquire(&rule, "k").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::Limited);
    // Spent for the whole window, whether or not the permit is held.
    drop(permit);
    clock.advance(window - Duration::from_millis(1));
    let refused = limiter.acquire(&rule, "k").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::Limited);
    clock.advance(Duration::from_millis(1));
    assert!(limiter.acquire(&rule, "k").await.is_ok(), "admitted again");

    let rule = Rule::new().prefix("one:flight:").in_flight(1);
    let permit = limiter.acquire(&rule, "k").await.unwrap();
    let refused = limiter.acquire(&rule, "k").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::Limited);
    drop(permit);
    let again = limiter.acquire(&rule, "k").await;
    assert!(again.is_ok(), "admitted again once the permit is dropped");
    let refused = limiter.acquire(&rule, "k").await.unwrap_err();
    assert_eq!(refused.reason(), Reason::Limited, "one at a time still");
}
