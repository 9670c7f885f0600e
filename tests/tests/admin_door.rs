//! The admin door over real HTTP, on two instances of the example service sharing a real Redis: wrong tokens
//! from one address are refused past the allowance (429, `Retry-After`), the block escalates and holds for
//! the right token and the page too, while another address is served; the address comes from the connection
//! or from the forwarded-header rules, else one shared key; without Redis the same holds per node. A viewer
//! reads and changes nothing (403); every change is on the record the other node lists, and in the log.
//! Clients are told apart by the loopback address they connect from (127.0.0.2, 127.0.0.3, ...).
//! (A test binary of its own: one test sets the process's global log subscriber.)

mod fields;

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use fields::{member, policies, quota, retry_after};
use futures::future::join_all;
use limiter_runtime::tower::Key;
use limiter_runtime::{admin, Algorithm, FakeClock, Limiter, Penalty, Rule};
use serde_json::{json, Value};
use tests::http::request_from;
use tests::logs::Captured;
use tests::RedisServer;

const OPERATOR: &str = "an-operators-token-0123";
const VIEWER: &str = "a-viewers-token-456789";

/// Whoever sends wrong tokens.
const GUESSER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);
/// An operator, elsewhere.
const ELSEWHERE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 3);

/// The tests' allowance: 3 failed tokens (a token bucket of 3, refilled at 3 a second: a flood's first
/// refusal comes at the fourth), then blocks of 2 s, 4 s, ... 16 s. The tests that count against it run their
/// limiters on a fake clock: the bucket refills only when a test moves the clock, so a flood is one instant
/// however slowly a loaded machine sends it, and its counts are exact.
fn allowance() -> Rule {
    Rule::new()
        .algorithm(Algorithm::TokenBucket)
        .max(3)
        .window(Duration::from_secs(1))
        .penalty(Penalty::escalating(
            Duration::from_secs(2),
            Duration::from_secs(16),
        ))
}

/// The door of `limiter`: both roles, the tests' allowance.
fn door(limiter: &Limiter) -> admin::Builder {
    admin::builder(limiter.clone())
        .operator_token(OPERATOR)
        .viewer_token(VIEWER)
        .failed_tokens(allowance())
}

/// Serves the example service behind `door` on a free port of 127.0.0.1 (which clients reach from any
/// loopback address), recording each client's address, or none (`addresses` false).
async fn serve(limiter: &Limiter, door: admin::Builder, addresses: bool) -> SocketAddr {
    let app = examples::service::app(limiter.clone(), door.build().unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    match addresses {
        true => {
            let app = app.into_make_service_with_connect_info::<SocketAddr>();
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        }
        false => {
            tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        }
    }
    address
}

/// An answer, read: its status, `Retry-After` and body (JSON when it is).
#[derive(Debug)]
struct LimitRuling {
    status: u16,
    retry_after: Option<u64>,
    json: Value,
}

/// `method path` from `from` to `at`, with `token` (if any), `headers` and a JSON `body` (if any).
async fn ask(
    from: Ipv4Addr,
    at: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> LimitRuling {
    let bearer = token.map(|token| format!("Bearer {token}"));
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    if let Some(bearer) = &bearer {
        all.push(("authorization", bearer));
    }
    let body = body.map(|body| body.to_string());
    if body.is_some() {
        all.push(("content-type", "application/json"));
    }
    let response = request_from(from, at, method, path, &all, body.as_deref()).await;
    LimitRuling {
        status: response.status,
        retry_after: response.header("retry-after").map(|r| r.parse().unwrap()),
        json: serde_json::from_str(&response.body).unwrap_or(Value::Null),
    }
}

/// `GET path` from `from` with `token`.
async fn get(from: Ipv4Addr, at: SocketAddr, path: &str, token: Option<&str>) -> LimitRuling {
    ask(from, at, "GET", path, token, &[], None).await
}

/// Waits (at most 5 s) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `n` wrong tokens from `from`, 10 at a time, alternating between `nodes`: the statuses, and the
/// `Retry-After` of each 429.
async fn flood(from: Ipv4Addr, nodes: &[SocketAddr], n: usize) -> (Vec<u16>, Vec<u64>) {
    let (mut statuses, mut waits) = (Vec::new(), Vec::new());
    for wave in 0..n.div_ceil(10) {
        let asked = (0..10).map(|i| {
            let at = nodes[(wave * 10 + i) % nodes.len()];
            get(
                from,
                at,
                "/admin/api/policies",
                Some("not-the-token-at-all"),
            )
        });
        for answer in join_all(asked).await {
            if answer.status == 429 {
                waits.push(answer.retry_after.expect("a 429 says when to come back"));
                assert!(
                    answer.json["error"].as_str().unwrap().contains("wrong"),
                    "{answer:?}"
                );
            }
            statuses.push(answer.status);
        }
    }
    (statuses, waits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_are_refused_past_the_allowance_on_every_node_and_the_block_escalates() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let (a, b) = (
        server.limiter_with_clock(&clock),
        server.limiter_with_clock(&clock),
    );
    let nodes = [
        serve(&a, door(&a), true).await,
        serve(&b, door(&b), true).await,
    ];

    // Limiting switched off through the door: every limit opens, but not the door's own.
    let off = json!({ "enabled": false });
    let switched = ask(
        ELSEWHERE,
        nodes[0],
        "PUT",
        "/admin/api/switch",
        Some(OPERATOR),
        &[],
        Some(off),
    );
    assert_eq!(switched.await.status, 204);
    until("the other node switched off", || !b.is_enabled()).await;

    for (round, block) in [(1, 2), (2, 4)] {
        let (statuses, waits) = flood(GUESSER, &nodes, 60).await;
        // The allowance, then 429 for the rest: the first refusal started a block of `block` seconds, and
        // the later ones are told what is left of it: all of it, as the fake clock has not moved.
        assert_eq!(
            statuses.iter().filter(|s| **s == 401).count(),
            3,
            "round {round}: {statuses:?}"
        );
        assert_eq!(
            statuses.iter().filter(|s| **s == 429).count(),
            57,
            "round {round}"
        );
        assert!(
            waits.iter().all(|w| *w == block),
            "round {round}: {waits:?}"
        );

        // The refusal's quota fields, read with a Structured Fields parser: the door's policy, none left,
        // and `t` the block's remaining time, as `Retry-After` says.
        let refused = request_from(GUESSER, nodes[1], "GET", "/admin/api/nodes", &[], None).await;
        let (policy, state) = quota(&refused);
        assert_eq!(policies(&policy), ["admin-failed-tokens"]);
        let (door_policy, door_state) = (
            member(&policy, "admin-failed-tokens"),
            member(&state, "admin-failed-tokens"),
        );
        assert_eq!(
            (
                door_policy.get("q"),
                door_policy.get("w"),
                door_state.get("r")
            ),
            (3, 1, 0)
        );
        assert_eq!(door_state.get("t"), retry_after(&refused));
        assert_eq!(retry_after(&refused), block as i64, "{refused:?}");

        // From that address, everything is refused on either node: the right token, none, the page.
        for at in nodes {
            for token in [Some(OPERATOR), Some(VIEWER), None] {
                let refused = get(GUESSER, at, "/admin/api/switch", token).await;
                assert_eq!(refused.status, 429, "{token:?}: {refused:?}");
            }
            assert_eq!(get(GUESSER, at, "/admin/", None).await.status, 429);
            let update = ask(
                GUESSER,
                at,
                "POST",
                "/limit/update?prefix=p:&threshold=9",
                Some(OPERATOR),
                &[],
                None,
            );
            assert_eq!(update.await.status, 429);
        }
        // Another address is served on both, and its one wrong token is its own.
        for at in nodes {
            let served = get(ELSEWHERE, at, "/admin/api/switch", Some(OPERATOR)).await;
            assert_eq!(
                (served.status, &served.json),
                (200, &json!({ "enabled": false }))
            );
            assert_eq!(get(ELSEWHERE, at, "/admin/", None).await.status, 200);
        }
        assert_eq!(
            get(ELSEWHERE, nodes[1], "/admin/api/nodes", Some("wrong"))
                .await
                .status,
            401
        );

        // The right token is refused to the block's last millisecond, and served once it has ended.
        clock.advance(Duration::from_millis(block * 1000 - 1));
        let refused = get(GUESSER, nodes[round % 2], "/admin/api/role", Some(VIEWER)).await;
        assert_eq!(
            (refused.status, refused.retry_after),
            (429, Some(1)),
            "round {round}: {refused:?}"
        );
        clock.advance(Duration::from_millis(1));
        let served = get(GUESSER, nodes[round % 2], "/admin/api/role", Some(VIEWER)).await;
        assert_eq!(served.status, 200, "round {round}: {served:?}");
        assert_eq!(
            served.json,
            json!({ "role": "viewer", "client": "127.0.0.2" })
        );
    }
    // The door's policy is the limiter's own, reported like every other.
    let policies = get(ELSEWHERE, nodes[1], "/admin/api/policies", Some(VIEWER)).await;
    let names: Vec<&str> = policies
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["policy"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"admin-failed-tokens"), "{names:?}");
}

/// Checks that the door's default allowance, left as it is, holds on a fake clock in memory and through Redis:
/// 5 failed tokens in any minute (a sliding log: 2 of them 30 s old still count when 3 more come a minute after
/// the first ones, where a window or a bucket would have admitted 5 again), then blocked for a minute, 2, 4, ...
/// up to an hour and no longer, each block to its last millisecond, the right token refused with the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_allowance_is_five_a_minute_then_blocks_from_a_minute_doubling_to_an_hour() {
    let server = RedisServer::start();
    let (memory_clock, redis_clock) = (FakeClock::new(), FakeClock::new());
    let memory = Limiter::builder()
        .clock(memory_clock.clone())
        .build()
        .unwrap();
    let redis = server.limiter_with_clock(&redis_clock);
    for (store, limiter, clock) in [
        ("memory", memory, memory_clock),
        ("redis", redis, redis_clock),
    ] {
        let door = admin::builder(limiter.clone())
            .operator_token(OPERATOR)
            .viewer_token(VIEWER);
        let at = serve(&limiter, door, true).await;
        let wrong = || async {
            let answer = get(
                GUESSER,
                at,
                "/admin/api/nodes",
                Some("not-the-token-at-all"),
            )
            .await;
            (answer.status, answer.retry_after)
        };
        let right = || async {
            let answer = get(GUESSER, at, "/admin/api/role", Some(VIEWER)).await;
            (answer.status, answer.retry_after)
        };
        let second = Duration::from_secs(1);

        // 3 failures, and 2 more 30 s later: 5 in the minute.
        for _ in 0..3 {
            assert_eq!(wrong().await, (401, None), "{store}");
        }
        clock.advance(30 * second);
        for _ in 0..2 {
            assert_eq!(wrong().await, (401, None), "{store}");
        }
        // A minute and a second after the first 3, they are out of the last minute, the other 2 are not: 3
        // more are within the allowance, and the fourth is past it.
        clock.advance(31 * second);
        for _ in 0..3 {
            assert_eq!(wrong().await, (401, None), "{store}");
        }
        let mut blocks = vec![];
        for round in 1..=8 {
            if round > 1 {
                // The last failures are more than a minute old (the block was one at least): 5 again.
                for _ in 0..5 {
                    assert_eq!(wrong().await, (401, None), "{store}, round {round}");
                }
            }
            // The first failure past the allowance starts the block, and is told all of it.
            let (status, block) = wrong().await;
            assert_eq!(status, 429, "{store}, round {round}");
            let block = block.unwrap();
            blocks.push(block);
            // Every request from the address is refused, the right token's and the page's; another
            // address is served.
            assert_eq!(right().await, (429, Some(block)), "{store}, round {round}");
            assert_eq!(get(GUESSER, at, "/admin/", None).await.status, 429);
            let elsewhere = get(ELSEWHERE, at, "/admin/api/role", Some(VIEWER)).await;
            assert_eq!(elsewhere.status, 200, "{store}, round {round}");
            // To its last millisecond, and no longer.
            clock.advance(Duration::from_millis(block * 1000 - 1));
            assert_eq!(right().await, (429, Some(1)), "{store}, round {round}");
            clock.advance(Duration::from_millis(1));
            assert_eq!(right().await, (200, None), "{store}, round {round}");
            clock.advance(second);
        }
        // A minute, doubled at each offence, up to the hour.
        assert_eq!(
            blocks,
            [60, 120, 240, 480, 960, 1920, 3600, 3600],
            "{store}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_address_is_the_forwarded_one_when_configured_and_else_one_shared_key() {
    let server = RedisServer::start();
    // On a fake clock that never moves: the fourth failure is refused however long the first three took.
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    // Behind one proxy that appends to X-Forwarded-For.
    let proxied = serve(
        &limiter,
        door(&limiter).client(Key::x_forwarded_for(1)),
        true,
    )
    .await;
    let from = |address: &'static str| [("x-forwarded-for", address)];
    let wrong = |forwarded| async move {
        ask(
            GUESSER,
            proxied,
            "GET",
            "/admin/api/nodes",
            Some("wrong"),
            &from(forwarded),
            None,
        )
        .await
        .status
    };
    let right = |forwarded| async move {
        ask(
            GUESSER,
            proxied,
            "GET",
            "/admin/api/nodes",
            Some(OPERATOR),
            &from(forwarded),
            None,
        )
        .await
        .status
    };
    for _ in 0..3 {
        assert_eq!(wrong("198.51.100.7").await, 401);
    }
    assert_eq!(wrong("198.51.100.7").await, 429);
    assert_eq!(right("198.51.100.7").await, 429);
    // The same connection's address, for another client behind the proxy: served.
    assert_eq!(right("198.51.100.8").await, 200);
    // No header: the peer's address counts, and it has failed nothing.
    let role = get(GUESSER, proxied, "/admin/api/role", Some(OPERATOR)).await;
    assert_eq!(
        role.json,
        json!({ "role": "operator", "client": "127.0.0.2" })
    );

    // A server that records no addresses: every request counts under one key, never none.
    let other = server.limiter_with_clock(&clock);
    let blind = serve(&other, door(&other), false).await;
    let role = get(GUESSER, blind, "/admin/api/role", Some(OPERATOR)).await;
    assert_eq!(role.json["client"], "no-client-address");
    for _ in 0..3 {
        let failed = get(GUESSER, blind, "/admin/api/nodes", None).await;
        assert_eq!(failed.status, 401);
    }
    // Another address's failure is past the same allowance, and blocks the first one's right token.
    assert_eq!(
        get(ELSEWHERE, blind, "/admin/api/nodes", None).await.status,
        429
    );
    let refused = get(GUESSER, blind, "/admin/api/nodes", Some(OPERATOR)).await;
    assert_eq!(refused.status, 429);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_each_node_limits_its_own_failed_tokens() {
    // In memory: each node counts its own, on a fake clock (no refill during the flood).
    let clock = FakeClock::new();
    let in_memory = || Limiter::builder().clock(clock.clone()).build().unwrap();
    let (a, b) = (in_memory(), in_memory());
    let nodes = [
        serve(&a, door(&a), true).await,
        serve(&b, door(&b), true).await,
    ];
    let (statuses, _) = flood(GUESSER, &nodes[..1], 20).await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 401).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(
        get(GUESSER, nodes[0], "/admin/api/nodes", Some(OPERATOR))
            .await
            .status,
        429
    );
    assert_eq!(
        get(ELSEWHERE, nodes[0], "/admin/api/nodes", Some(OPERATOR))
            .await
            .status,
        200
    );
    assert_eq!(
        get(GUESSER, nodes[1], "/admin/api/nodes", Some(OPERATOR))
            .await
            .status,
        200
    );
    // Each node keeps its own record of changes, as it keeps its own counts.
    let update = "/limit/update?prefix=p:&threshold=3";
    let made = ask(
        ELSEWHERE,
        nodes[0],
        "POST",
        update,
        Some(OPERATOR),
        &[],
        None,
    )
    .await;
    assert_eq!(made.status, 200);
    let here = get(ELSEWHERE, nodes[0], "/admin/api/changes", Some(VIEWER)).await;
    assert_eq!(here.json[0]["change"], format!("POST {update}"));
    assert_eq!(here.json.as_array().unwrap().len(), 1);
    let there = get(ELSEWHERE, nodes[1], "/admin/api/changes", Some(VIEWER)).await;
    assert_eq!(there.json, json!([]));

    // With Redis gone, each node goes on counting (`on_error = local`): never unlimited.
    let mut server = RedisServer::start();
    let shared = server.limiter_with_clock(&clock);
    let at = serve(&shared, door(&shared), true).await;
    assert_eq!(
        get(ELSEWHERE, at, "/admin/api/nodes", Some(OPERATOR))
            .await
            .status,
        200
    );
    server.kill();
    let (statuses, _) = flood(GUESSER, &[at], 20).await;
    // Exactly the allowance: the node decides with its share of it, `ceil(3 / live nodes)`, and the only
    // node this Redis has seen is this one (its heartbeat's count, 1 from the start); its local bucket starts
    // full, and on the fake clock it does not refill during the flood. (Before the fake clock, the bucket's
    // refill at 3 a second while the flood ran could only add 401s, never remove one.)
    assert_eq!(
        statuses.iter().filter(|s| **s == 401).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 429).count(),
        17,
        "{statuses:?}"
    );
    assert_eq!(
        get(GUESSER, at, "/admin/api/nodes", Some(OPERATOR))
            .await
            .status,
        429
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_reads_everything_and_changes_nothing() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let at = serve(&limiter, door(&limiter), true).await;
    // A policy in use, so that each change below would be valid.
    let employee = |id| request_from(ELSEWHERE, at, "GET", id, &[], None);
    assert_eq!(employee("/employees/7").await.status, 200);
    let role = get(ELSEWHERE, at, "/admin/api/role", Some(VIEWER)).await;
    assert_eq!(
        role.json,
        json!({ "role": "viewer", "client": "127.0.0.3" })
    );
    for path in [
        "policies",
        "top",
        "nodes",
        "overrides",
        "switch",
        "bans",
        "changes",
    ] {
        let read = get(ELSEWHERE, at, &format!("/admin/api/{path}"), Some(VIEWER)).await;
        assert_eq!(read.status, 200, "{path}: {read:?}");
    }
    let inspect = "/admin/api/inspect?policy=employee&key=7";
    assert_eq!(
        get(ELSEWHERE, at, inspect, Some(VIEWER)).await.json["used"],
        1
    );

    let changes = [
        (
            "PUT",
            "/admin/api/switch",
            Some(json!({ "enabled": false })),
        ),
        (
            "PUT",
            "/admin/api/overrides",
            Some(json!({ "prefix": "rate_limit:emp:", "max": 1 })),
        ),
        (
            "DELETE",
            "/admin/api/overrides",
            Some(json!({ "prefix": "rate_limit:emp:" })),
        ),
        (
            "PUT",
            "/admin/api/bans",
            Some(json!({ "policy": "employee", "key": "7", "duration_ms": 60000 })),
        ),
        (
            "DELETE",
            "/admin/api/bans",
            Some(json!({ "policy": "employee", "key": "7" })),
        ),
        (
            "POST",
            "/limit/update?prefix=rate_limit:emp:&threshold=1",
            None,
        ),
        ("POST", "/limit/enabled?enabled=false", None),
    ];
    // Ten rounds: more than the allowance, and a 403 is no failed token.
    for _ in 0..10 {
        for (method, path, body) in &changes {
            let refused = ask(ELSEWHERE, at, method, path, Some(VIEWER), &[], body.clone()).await;
            assert_eq!(refused.status, 403, "{method} {path}: {refused:?}");
            let sentence = refused.json["error"].as_str().unwrap();
            assert!(
                sentence.contains("needs the operator's token"),
                "{sentence}"
            );
        }
    }
    // Nothing changed, and nothing is on the record.
    assert!(limiter.is_enabled() && limiter.overrides().is_empty());
    let rule = limiter.policy("employee").await.unwrap();
    assert!(limiter
        .inspect(&rule, "7")
        .await
        .unwrap()
        .blocked_for
        .is_zero());
    assert_eq!(
        get(ELSEWHERE, at, "/admin/api/changes", Some(VIEWER))
            .await
            .json,
        json!([])
    );
    // The operator's token changes what the viewer's could not.
    let (method, path, body) = &changes[0];
    assert_eq!(
        ask(
            ELSEWHERE,
            at,
            method,
            path,
            Some(OPERATOR),
            &[],
            body.clone()
        )
        .await
        .status,
        204
    );
    assert!(!limiter.is_enabled());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_is_on_the_record_the_other_node_lists_and_in_the_log() {
    let logs = Captured::default();
    tracing::subscriber::set_global_default(logs.subscriber()).unwrap();
    let server = RedisServer::start();
    let (a, b) = (server.limiter(), server.limiter());
    let (here, there) = (
        serve(&a, door(&a), true).await,
        serve(&b, door(&b), true).await,
    );
    assert_eq!(
        request_from(ELSEWHERE, here, "GET", "/employees/7", &[], None)
            .await
            .status,
        200
    );
    let operator = Ipv4Addr::new(127, 0, 0, 4);
    let made = [
        (
            "PUT",
            "/admin/api/overrides",
            Some(json!({ "prefix": "rate_limit:emp:", "key": "7", "max": 2 })),
            r#"set the override of key "7" of prefix "rate_limit:emp:": max 2"#,
        ),
        (
            "DELETE",
            "/admin/api/overrides",
            Some(json!({ "prefix": "rate_limit:emp:", "key": "7" })),
            r#"cleared the override of key "7" of prefix "rate_limit:emp:""#,
        ),
        (
            "PUT",
            "/admin/api/switch",
            Some(json!({ "enabled": false })),
            "turned limiting off for every node",
        ),
        (
            "PUT",
            "/admin/api/switch",
            Some(json!({ "enabled": true })),
            "turned limiting on for every node",
        ),
        (
            "PUT",
            "/admin/api/bans",
            Some(json!({ "policy": "employee", "key": "7", "duration_ms": 90000 })),
            r#"banned key "7" of policy "employee" for 90s"#,
        ),
        (
            "DELETE",
            "/admin/api/bans",
            Some(json!({ "policy": "employee", "key": "7" })),
            r#"lifted the block of key "7" of policy "employee""#,
        ),
        (
            "POST",
            "/limit/update?prefix=rate_limit:emp:&threshold=3",
            None,
            "POST /limit/update?prefix=rate_limit:emp:&threshold=3",
        ),
    ];
    for (method, path, body, _) in &made {
        let answer = ask(
            operator,
            here,
            method,
            path,
            Some(OPERATOR),
            &[],
            body.clone(),
        )
        .await;
        assert!(
            (200..300).contains(&answer.status),
            "{method} {path}: {answer:?}"
        );
    }
    // A refused change is none: not on the record.
    let bad = json!({ "prefix": "rate_limit:emp:", "max": 0 });
    assert_eq!(
        ask(
            operator,
            here,
            "PUT",
            "/admin/api/overrides",
            Some(OPERATOR),
            &[],
            Some(bad)
        )
        .await
        .status,
        400
    );

    // The other node lists them, newest first, with who made them where.
    let listed = get(ELSEWHERE, there, "/admin/api/changes", Some(VIEWER)).await;
    let listed = listed.json.as_array().unwrap().clone();
    assert_eq!(listed.len(), made.len(), "{listed:#?}");
    let node = get(ELSEWHERE, here, "/admin/api/nodes", Some(VIEWER)).await;
    let node = node
        .json
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["this"] == true)
        .unwrap()["node"]
        .clone();
    for (entry, (_, _, _, what)) in listed.iter().zip(made.iter().rev()) {
        assert_eq!(entry["change"], *what, "{entry}");
        assert_eq!(
            (&entry["role"], &entry["client"]),
            (&json!("operator"), &json!("127.0.0.4"))
        );
        assert_eq!(entry["node"], node);
        assert!(entry["at_ms"].as_u64().unwrap() > 1_700_000_000_000);
    }
    // And each is an event in the log, with the same fields.
    let text = logs.text();
    for (_, _, _, what) in &made {
        let line = text
            .lines()
            .find(|line| {
                line.contains("changed through the admin door")
                    && line.contains(&format!("change={what:?}"))
            })
            .unwrap_or_else(|| panic!("no event for {what}: {text}"));
        assert!(
            line.contains(" INFO ")
                && line.contains("role=\"operator\"")
                && line.contains("client=\"127.0.0.4\""),
            "{line}"
        );
    }

    // The record is bounded: the newest 100 are kept.
    for n in 0..105 {
        let path = format!("/limit/update?prefix=p{n}:&threshold=3");
        assert_eq!(
            ask(operator, here, "POST", &path, Some(OPERATOR), &[], None)
                .await
                .status,
            200
        );
    }
    let kept = get(ELSEWHERE, there, "/admin/api/changes", Some(VIEWER)).await;
    let kept = kept.json.as_array().unwrap().clone();
    assert_eq!(kept.len(), 100);
    assert_eq!(
        kept[0]["change"],
        "POST /limit/update?prefix=p104:&threshold=3"
    );
    assert_eq!(
        kept[99]["change"],
        "POST /limit/update?prefix=p5:&threshold=3"
    );
}
