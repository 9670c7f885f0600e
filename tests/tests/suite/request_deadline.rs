//! At most one deadline per request: behind a `RateLimitLayer`, a request whose first decision met a failing
//! Redis decides its later ones (an annotated handler's, the plain API's) at once, by their `on_error`,
//! instead of each waiting a deadline of its own. Redis is paused (SIGSTOP), so every decision that asks it
//! waits its whole deadline.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{rate_limit, Limiter, OnError, RateLimited, Rule};
use tests::http::request;
use tests::RedisServer;

const DEADLINE: Duration = Duration::from_millis(300);

#[rate_limit(prefix = "handler:", key = "all", max = 100)]
async fn guarded() -> Result<&'static str, RateLimited> {
    Ok("served")
}

/// The handler: an annotated function, then the plain API, each a decision of its own.
async fn handler() -> String {
    let decision = Limiter::current()
        .check(&Rule::new().prefix("plain:").max(100), "all")
        .await;
    match guarded().await {
        Ok(body) => format!("{body} {}", decision.degraded),
        Err(refused) => refused.to_string(),
    }
}

async fn serve(limiter: &Limiter) -> SocketAddr {
    let layer = RateLimitLayer::new(
        limiter,
        [Rule::new().prefix("layer:").policy("layer").max(100)],
        Key::route(),
    );
    let app = Router::new().route("/work", get(handler)).layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_waits_for_a_failing_redis_at_most_one_deadline() {
    let server = RedisServer::start();
    // A breaker that never opens: only the request's own memory can spare its later decisions the wait.
    let limiter = server
        .builder()
        .deadline(DEADLINE)
        .breaker(1_000, Duration::from_secs(60))
        .on_error(OnError::Open)
        .build()
        .unwrap();
    let address = serve(&limiter).await;
    let healthy = request(address, "GET", "/work").await;
    assert_eq!(
        (healthy.status, healthy.body.as_str()),
        (200, "served false")
    );

    server.pause();
    for _ in 0..3 {
        let started = Instant::now();
        let response = request(address, "GET", "/work").await;
        let took = started.elapsed();
        // Three decisions (the layer's, the plain API's, the handler's), decided degraded (open): served.
        assert_eq!(
            (response.status, response.body.as_str()),
            (200, "served true")
        );
        assert!(
            took >= DEADLINE,
            "the first decision waits its deadline: {took:?}"
        );
        assert!(
            took < DEADLINE + DEADLINE / 2,
            "one deadline for the whole request, not one per decision: {took:?}"
        );
    }
    server.resume();
    // Redis answers again: a new request asks it, every decision.
    let started = Instant::now();
    loop {
        let response = request(address, "GET", "/work").await;
        if response.body == "served false" {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "Redis decides again"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
