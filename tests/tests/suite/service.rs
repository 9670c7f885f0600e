//! The example service end to end, over real HTTP, against a real Redis: the quota fields of the per-client
//! layer and of the route on a 200 and a 429 (read with a Structured Fields parser), counts shared by two
//! instances, an override through the admin endpoint reaching the other instance within a
//! second, the operators' routes closed without the token, the switch turned on one instance stopping every instance's Redis traffic, and 503 when Redis is
//! down and the limiter fails closed.

use crate::fields;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use fields::{member, policies, quota, retry_after};
use limiter_runtime::{admin, Limiter, OnError};
use redis::Commands;
use tests::http::{request, request_with, Response};
use tests::RedisServer;

/// The operators' token the services under test are given.
const TOKEN: &str = "test-admin-token";

/// Serves the example service with `limiter` on a free loopback port.
async fn serve(limiter: Limiter) -> SocketAddr {
    let door = admin::builder(limiter.clone())
        .operator_token(TOKEN)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app =
        examples::service::app(limiter, door).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// An operator's `POST path`, with the token.
async fn admin(address: SocketAddr, path: &str) -> Response {
    let bearer = format!("Bearer {TOKEN}");
    request_with(address, "POST", path, &[("authorization", &bearer)]).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_and_the_sixth_lookups_429_carry_both_policies_fields() {
    let server = RedisServer::start();
    let service = serve(server.limiter()).await;
    // The first lookup: the layer's policy (per client) and the route's, each with its own state.
    let first = request(service, "GET", "/employees/1001").await;
    assert_eq!(first.status, 200, "{first:?}");
    assert!(first.body.contains("\"id\":\"1001\""), "{}", first.body);
    let (policy, state) = quota(&first);
    assert_eq!(policies(&policy), ["per-client", "employee"]);
    let employee = member(&policy, "employee");
    assert_eq!((employee.get("q"), employee.get("w")), (5, 10));
    let per_client = member(&policy, "per-client");
    assert_eq!((per_client.get("q"), per_client.get("w")), (60, 60));
    assert_eq!(member(&state, "employee").get("r"), 4);
    assert_eq!(member(&state, "per-client").get("r"), 59);
    assert!(
        (9..=10).contains(&member(&state, "employee").get("t")),
        "{state:?}"
    );
    for _ in 0..4 {
        let ok = request(service, "GET", "/employees/1001").await;
        assert_eq!(ok.status, 200, "{ok:?}");
    }
    let limited: Response = request(service, "GET", "/employees/1001").await;
    assert_eq!(limited.status, 429);
    assert_eq!(
        limited.body,
        "slow down, have a cup of tea. Refused by the policy \"employee\"."
    );
    let (policy, state) = quota(&limited);
    assert_eq!(policies(&policy), ["per-client", "employee"]);
    let employee = member(&state, "employee");
    assert_eq!(employee.get("r"), 0);
    assert!((1..=10).contains(&employee.get("t")), "{state:?}");
    assert!(
        (employee.get("t")..=10).contains(&retry_after(&limited)),
        "Retry-After {} is never earlier than t = {}",
        retry_after(&limited),
        employee.get("t")
    );

    // The other routes: one shared bucket, and a limit per client IP.
    for _ in 0..10 {
        assert_eq!(request(service, "GET", "/api/test").await.status, 200);
    }
    assert_eq!(request(service, "GET", "/api/test").await.status, 429);
    let me = request(service, "GET", "/whoami").await;
    assert_eq!((me.status, me.body.as_str()), (200, "127.0.0.1"));
    assert_eq!(
        server
            .connection()
            .keys::<_, Vec<String>>("rate_limit:ip:127.0.0.1")
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_counts_and_an_override_reaches_the_other_within_a_second() {
    let server = RedisServer::start();
    let b_limiter = server.limiter();
    let (a, b) = (
        serve(server.limiter()).await,
        serve(b_limiter.clone()).await,
    );
    for service in [a, a, a, b, b] {
        assert_eq!(request(service, "GET", "/employees/7").await.status, 200);
    }
    // Five calls across two instances: one count, so the sixth is limited on either.
    assert_eq!(request(a, "GET", "/employees/7").await.status, 429);
    assert_eq!(request(b, "GET", "/employees/7").await.status, 429);

    // Both instances are running; the operator lowers employee 42's limit on instance a.
    assert_eq!(request(b, "GET", "/employees/42").await.status, 200);
    let update = admin(a, "/limit/update?prefix=rate_limit:emp:&key=42&threshold=1").await;
    assert_eq!(update.status, 200, "{update:?}");
    let started = Instant::now();
    while !b_limiter
        .overrides()
        .iter()
        .any(|o| o.target_key() == Some("42"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "instance b has not seen it after {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Employee 42 was looked up once already: the lowered limit rejects the next lookup on b.
    let response = request(b, "GET", "/employees/42").await;
    assert_eq!(response.status, 429, "{response:?}");
    assert_eq!(member(&quota(&response).0, "employee").get("q"), 1);
    // Cleared through the endpoint: back to 5.
    assert_eq!(
        admin(a, "/limit/update?prefix=rate_limit:emp:&key=42")
            .await
            .status,
        200
    );
    assert_eq!(
        admin(a, "/limit/update?threshold=3").await.status,
        400,
        "no prefix"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switched_off_through_one_instance_every_instance_sends_nothing_to_redis() {
    let server = RedisServer::start();
    let (a, b) = (serve(server.limiter()).await, serve(server.limiter()).await);
    for service in [a, b] {
        assert_eq!(request(service, "GET", "/employees/1").await.status, 200);
    }
    let off = admin(a, "/limit/enabled?enabled=false").await;
    assert_eq!(off.status, 200, "{off:?}");
    // The other instance hears of it within a second.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let before = server.calls("evalsha");
    for service in [a, b] {
        for _ in 0..10 {
            assert_eq!(request(service, "GET", "/employees/1").await.status, 200);
        }
    }
    assert_eq!(
        server.calls("evalsha"),
        before,
        "no decision reached Redis while switched off"
    );
    let on = admin(b, "/limit/enabled?enabled=true").await;
    assert_eq!(on.status, 200, "{on:?}");
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    // Both count again, in one count: 2 calls so far, 3 more, then the limit.
    for service in [a, b, a] {
        assert_eq!(request(service, "GET", "/employees/1").await.status, 200);
    }
    for service in [a, b] {
        assert_eq!(request(service, "GET", "/employees/1").await.status, 429);
    }

    // This instance alone: the other still limits.
    let here = admin(a, "/limit/enabled?enabled=false&scope=here").await;
    assert_eq!(here.status, 200, "{here:?}");
    assert_eq!(request(a, "GET", "/employees/1").await.status, 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(request(b, "GET", "/employees/1").await.status, 429);
    for bad in ["enabled=maybe", "enabled=false&scope=there"] {
        let answer = admin(a, &format!("/limit/enabled?{bad}")).await;
        assert_eq!(answer.status, 400, "{bad}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_routes_require_the_token_and_the_service_one_to_start() {
    let server = RedisServer::start();
    let service = serve(server.limiter()).await;
    let path = "/limit/enabled?enabled=false";
    for authorization in [None, Some("Bearer wrong"), Some(TOKEN), Some("Bearer ")] {
        let headers: Vec<(&str, &str)> = authorization
            .map(|a| ("authorization", a))
            .into_iter()
            .collect();
        let refused = request_with(service, "POST", path, &headers).await;
        assert_eq!(refused.status, 401, "{authorization:?}: {refused:?}");
        assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
    }
    assert!(server.limiter().is_enabled());
    assert_eq!(admin(service, path).await.status, 200);

    // No token, or one too short to be one: the service has none to start with.
    for token in ["", "   ", "short", "fifteen-letters"] {
        let door = admin::builder(server.limiter())
            .operator_token(token)
            .build();
        let refused = door.expect_err("no token");
        assert!(refused.to_string().contains("at least 16"), "{refused}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_down_a_closed_limiter_answers_503_not_429() {
    let mut server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .on_error(OnError::Closed)
        .build()
        .unwrap();
    let service = serve(limiter).await;
    assert_eq!(request(service, "GET", "/employees/1").await.status, 200);
    server.kill();
    let unavailable = request(service, "GET", "/employees/1").await;
    assert_eq!(unavailable.status, 503, "{unavailable:?}");
    assert!(
        unavailable
            .header("retry-after")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    assert!(
        unavailable.header("ratelimit").is_none(),
        "no quota to report"
    );
}

/// Five failed logins, then the sixth attempt blocks the user on every instance: 429 with `Retry-After` the
/// block's length (the 15 minutes the limit itself takes to admit the user again, longer than the penalty's
/// first minute: a client that obeys is admitted) and the quota fields (read with the fields' parser) saying
/// nothing is left until then; even the right password is refused meanwhile, and another user is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_who_fails_a_sixth_login_is_blocked_on_every_instance() {
    let server = RedisServer::start();
    let (a, b) = (serve(server.limiter()).await, serve(server.limiter()).await);
    let login = |at: SocketAddr, password: &'static str| async move {
        tests::http::request_with_body(at, "POST", "/login/eve", &[], Some(password)).await
    };
    for at in [a, b, a, b, a] {
        assert_eq!(login(at, "guess").await.status, 401);
    }
    let blocked = login(b, "guess").await;
    assert_eq!(blocked.status, 429, "{blocked:?}");
    assert_eq!(retry_after(&blocked), 900);
    let (policy, state) = quota(&blocked);
    assert_eq!(
        (
            member(&policy, "login").get("q"),
            member(&policy, "login").get("w")
        ),
        (5, 900)
    );
    assert_eq!(member(&state, "login").get("r"), 0);
    assert_eq!(member(&state, "login").get("t"), 900);
    let right = login(a, "hunter2").await;
    assert_eq!(right.status, 429, "blocked, whatever the password");
    assert!((899..=900).contains(&retry_after(&right)));
    let other = tests::http::request_with_body(a, "POST", "/login/ada", &[], Some("hunter2")).await;
    assert_eq!(other.status, 200);
}
