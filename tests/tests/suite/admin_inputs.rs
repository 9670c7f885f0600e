//! The admin API is as strict as the attribute, against real Redis: it refuses a limit of zero with a 400
//! that says why, tells a wrong token from a missing one (the `Bearer` scheme in any case), counts the calls
//! `on_error = closed` refuses, and inspects a key under a policy that another node used. Answers are read
//! with `serde_json` and the `http` types, not compared as text.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use http::{header, HeaderMap, HeaderName, HeaderValue, StatusCode};
use limiter_runtime::{admin, Algorithm, Limiter, OnError, Rule, Verdict};
use serde_json::{json, Value};
use tests::deployment::with_heartbeats;
use tests::http::request_with_body;
use tests::RedisServer;

const TOKEN: &str = "an-operators-token";

/// Serves the admin router of `limiter` on a free loopback port, at `/admin`, mounted as its docs say, with
/// room for the wrong tokens these tests send (`admin_door.rs` tests the allowance).
async fn serve_admin(limiter: Limiter) -> SocketAddr {
    let door = admin::builder(limiter)
        .operator_token(TOKEN)
        .failed_tokens(Rule::new().max(1_000))
        .build()
        .unwrap();
    let app = axum::Router::new().nest_service("/admin", door.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// An answer, read: its status and headers as the `http` types take them, and its body as JSON.
struct LimitRuling {
    status: StatusCode,
    headers: HeaderMap,
    json: Value,
}

/// `method path` with `authorization` (if any) and `body` (JSON), and what came back.
async fn ask(
    at: SocketAddr,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    body: Option<Value>,
) -> LimitRuling {
    let body = body.map(|b| b.to_string());
    let mut headers: Vec<(&str, &str)> = authorization
        .map(|a| ("authorization", a))
        .into_iter()
        .collect();
    if body.is_some() {
        headers.push(("content-type", "application/json"));
    }
    let response = request_with_body(at, method, path, &headers, body.as_deref()).await;
    let mut map = HeaderMap::new();
    for (name, value) in &response.headers {
        let name = HeaderName::from_bytes(name.as_bytes()).expect("a header name");
        map.append(name, HeaderValue::from_str(value).expect("a header value"));
    }
    let json = match response.body.is_empty() {
        true => Value::Null,
        false => serde_json::from_str(&response.body).expect("a JSON body"),
    };
    LimitRuling {
        status: StatusCode::from_u16(response.status).expect("a status code"),
        headers: map,
        json,
    }
}

/// [`ask`] with the token.
async fn api(at: SocketAddr, method: &str, path: &str, body: Option<Value>) -> LimitRuling {
    let bearer = format!("Bearer {TOKEN}");
    ask(at, method, path, Some(&bearer), body).await
}

/// The text of an error answer, which reads like a sentence: words, not a code or a dump.
fn sentence(answer: &LimitRuling) -> &str {
    let fields: Vec<&String> = answer.json.as_object().expect("an object").keys().collect();
    assert_eq!(fields, ["error"], "{}", answer.json);
    let text = answer.json["error"].as_str().expect("a string");
    assert!(text.split_whitespace().count() >= 4, "{text:?}");
    assert!(
        text.starts_with(|c: char| c.is_ascii_lowercase()),
        "{text:?}"
    );
    let content_type = answer.headers.get(header::CONTENT_TYPE).unwrap();
    assert_eq!(content_type, "application/json");
    text
}

/// An override of `max: 0` made every call of every node a 413: it is refused as the attribute refuses
/// `max = 0`, and no node's limit moves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_override_of_max_zero_is_refused_with_a_sentence() {
    let server = RedisServer::start();
    let (a, b) = (
        with_heartbeats(server.builder()),
        with_heartbeats(server.builder()),
    );
    let at = serve_admin(a.clone()).await;
    let rule = Rule::new().prefix("rate_limit:emp:").max(5);
    for body in [
        json!({ "prefix": "rate_limit:emp:", "max": 0 }),
        json!({ "prefix": "rate_limit:emp:", "key": "1001", "max": 0, "window_ms": 1000 }),
    ] {
        let refused = api(at, "PUT", "/admin/api/overrides", Some(body.clone())).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}");
        let why = sentence(&refused);
        assert!(why.contains("max") && why.contains("at least 1"), "{why:?}");
    }
    let zero_window = json!({ "prefix": "rate_limit:emp:", "window_ms": 0 });
    let refused = api(at, "PUT", "/admin/api/overrides", Some(zero_window)).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(sentence(&refused).contains("window_ms"));

    assert_eq!(
        api(at, "GET", "/admin/api/overrides", None).await.json,
        json!([])
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    for node in [&a, &b] {
        assert!(node.overrides().is_empty(), "{:?}", node.overrides());
        let decision = node.check(&rule, "1001").await;
        assert!(decision.allowed && decision.limit == 5, "{decision:?}");
    }
    // A limit of one is a limit like any other.
    let one = json!({ "prefix": "rate_limit:emp:", "max": 1 });
    let set = api(at, "PUT", "/admin/api/overrides", Some(one)).await;
    assert_eq!(set.status, StatusCode::NO_CONTENT);
    assert_eq!(a.check(&rule, "1002").await.limit, 1);
}

/// A token that is not the admin's is told so, apart from a request that brings none; the scheme is
/// matched in any case (RFC 9110: `bearer`, `BEARER`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_told_apart_from_a_missing_one_in_any_case_of_the_scheme() {
    let at = serve_admin(Limiter::in_memory()).await;
    let wrong = [
        "Bearer not-the-token".to_owned(),
        "bearer not-the-token".to_owned(),
        format!("Bearer {TOKEN}x"),
    ];
    let missing = [
        "",
        "Bearer ",
        "Bearer",
        "Basic YWxhZGRpbjpvcGVuc2VzYW1l",
        TOKEN,
    ];
    for (authorization, told) in wrong
        .iter()
        .map(|a| (Some(a.as_str()), "wrong token"))
        .chain(missing.iter().map(|&a| (Some(a), "is required")))
        .chain([(None, "is required")])
    {
        let refused = ask(at, "GET", "/admin/api/switch", authorization, None).await;
        assert_eq!(
            refused.status,
            StatusCode::UNAUTHORIZED,
            "{authorization:?}"
        );
        let challenge = refused.headers.get(header::WWW_AUTHENTICATE).unwrap();
        assert_eq!(challenge, "Bearer", "{authorization:?}");
        let why = sentence(&refused);
        assert!(why.contains(told), "{authorization:?}: {why:?}");
    }
    for authorization in [
        format!("Bearer {TOKEN}"),
        format!("bearer {TOKEN}"),
        format!("BEARER {TOKEN}"),
        format!("BeArEr   {TOKEN}"),
    ] {
        let answer = ask(at, "GET", "/admin/api/switch", Some(&authorization), None).await;
        assert_eq!(answer.status, StatusCode::OK, "{authorization:?}");
        assert_eq!(answer.json, json!({ "enabled": true }));
    }
}

/// A call refused while Redis is down, under `on_error = closed`, is a refusal: the policies count it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policies_count_the_refusals_of_a_limit_that_fails_closed() {
    let mut server = RedisServer::start();
    let limiter = server
        .builder()
        .deadline(Duration::from_millis(100))
        .build()
        .unwrap();
    let at = serve_admin(limiter.clone()).await;
    let rule = Rule::new()
        .prefix("closed:")
        .policy("closed")
        .max(10)
        .on_error(OnError::Closed);
    assert!(limiter.check(&rule, "k").await.allowed);
    server.kill();
    for _ in 0..4 {
        let refused = limiter.check(&rule, "k").await;
        assert_eq!(refused.verdict, Verdict::Unavailable, "{refused:?}");
        assert!(!refused.allowed);
    }
    let policies = api(at, "GET", "/admin/api/policies", None).await;
    assert_eq!(policies.status, StatusCode::OK);
    let closed = policies.json.as_array().unwrap();
    let closed = closed.iter().find(|p| p["policy"] == "closed").unwrap();
    assert_eq!(
        (closed["decided"].as_u64(), closed["refused"].as_u64()),
        (Some(5), Some(4)),
        "{closed}"
    );
    assert!(closed["refused_per_s"].as_f64().unwrap() > 0.0, "{closed}");
    let overview = limiter.overview().await;
    assert!(overview.partial);
    let closed = overview.policies.iter().find(|p| p.policy == "closed");
    assert_eq!(closed.unwrap().refused, 4);
}

/// Node a decides keys under policies that node b never used: b's admin API inspects them all the same, from
/// what a reports through Redis, with a's terms (a token bucket's burst, a calendar quota's zone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_answers_for_a_policy_any_node_used() {
    let server = RedisServer::start();
    let (a, b) = (
        with_heartbeats(server.builder()),
        with_heartbeats(server.builder()),
    );
    let at = serve_admin(b.clone()).await;
    let bucket = Rule::new()
        .prefix("rate_limit:emp:")
        .policy("employee")
        .algorithm(Algorithm::TokenBucket)
        .max(10)
        .burst(4)
        .window(Duration::from_secs(3_600));
    let daily = Rule::new()
        .prefix("tokens:")
        .period(limiter_runtime::Period::Day)
        .tz(limiter_runtime::Zone::get("Asia/Tokyo").unwrap())
        .max(1_000);
    for _ in 0..3 {
        assert!(a.check(&bucket, "1001").await.allowed);
    }
    assert!(a.check(&daily, "acme").cost(250).await.allowed);

    // Within a heartbeat or two, a has reported both.
    let started = Instant::now();
    while b.overview().await.policies.len() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a never reported"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for path in [
        "/admin/api/inspect?policy=employee&key=1001",
        "/admin/api/inspect?policy=rate_limit:emp:&key=1001",
    ] {
        let state = api(at, "GET", path, None).await;
        assert_eq!(state.status, StatusCode::OK, "{path}: {}", state.json);
        let (used, remaining) = (
            state.json["used"].as_u64(),
            state.json["remaining"].as_u64(),
        );
        // The burst of 4 is the bucket's room, not the max of 10.
        assert_eq!((used, remaining), (Some(3), Some(1)), "{}", state.json);
        assert_eq!(state.json["limit"], 10);
        assert_eq!(state.json["window_ms"], 3_600_000);
        assert_eq!(state.json["policy"], "employee");
        assert_eq!(
            comparable(&state.json),
            a_inspected(&a, &bucket, "1001").await
        );
    }
    let state = api(
        at,
        "GET",
        "/admin/api/inspect?policy=tokens:&key=acme",
        None,
    )
    .await;
    assert_eq!(state.status, StatusCode::OK, "{}", state.json);
    assert_eq!(
        comparable(&state.json),
        a_inspected(&a, &daily, "acme").await
    );
    assert_eq!(state.json["used"], 250);

    let unknown = api(at, "GET", "/admin/api/inspect?policy=nope&key=1", None).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert!(sentence(&unknown).contains("\"nope\""));
}

/// An inspection as the admin API wrote it, but `deny_cached` (each node's own) and the times (which move).
fn comparable(state: &Value) -> Value {
    let mut state = state.clone();
    let fields = state.as_object_mut().expect("an object");
    for moving in ["deny_cached", "retry_after_ms", "reset_after_ms"] {
        assert!(fields.remove(moving).is_some(), "{moving}");
    }
    state
}

/// What `limiter` itself says of `key` under `rule`, written as [`comparable`] leaves the admin API's.
async fn a_inspected(limiter: &Limiter, rule: &Rule, key: &str) -> Value {
    let state = limiter.inspect(rule, key).await.unwrap();
    json!({
        "policy": state.policy,
        "key": state.key,
        "limit": state.limit,
        "window_ms": state.window.as_millis() as u64,
        "used": state.used,
        "remaining": state.remaining,
        "in_flight": state.in_flight,
        "blocked_ms": state.blocked_for.as_millis() as u64,
        "banned": state.banned,
        "paused": state.paused,
        "offences": state.offences,
        "ceilings": state.ceilings.iter().map(|c| json!({
            "priority": c.priority.as_str(),
            "ceiling": c.ceiling,
            "remaining": c.remaining,
        })).collect::<Vec<_>>(),
    })
}

/// The bans through the API, against real Redis and a second node: a ban set on one node refuses the key on
/// the other; listed with its remaining time; lifted. Bad bodies and a policy no node used are refused with a
/// sentence; a policy without a penalty is banned like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bans_are_set_listed_and_lifted_through_the_api() {
    let server = RedisServer::start();
    let (a, b) = (server.limiter(), server.limiter());
    let at = serve_admin(a.clone()).await;
    let bearer = format!("Bearer {TOKEN}");
    let auth = Some(bearer.as_str());
    let login = Rule::new()
        .prefix("api:login:")
        .policy("login")
        .max(5)
        .penalty(limiter_runtime::Penalty::fixed(Duration::from_secs(60)));
    let plain = Rule::new().prefix("api:plain:").policy("plain").max(5);
    a.check(&login, "alice").await;
    a.check(&plain, "alice").await;
    let ban = json!({ "policy": "login", "key": "mallory", "duration_ms": 600_000 });
    let set = ask(at, "PUT", "/admin/api/bans", auth, Some(ban)).await;
    assert_eq!(set.status, StatusCode::NO_CONTENT, "{}", set.json);
    let refused = b.check(&login, "mallory").await;
    assert_eq!(refused.verdict, Verdict::Blocked);
    let listed = ask(at, "GET", "/admin/api/bans?policy=login", auth, None).await;
    assert_eq!(listed.status, StatusCode::OK);
    assert_eq!(
        listed.headers.get(header::CACHE_CONTROL).unwrap(),
        "no-store"
    );
    let bans = listed.json.as_array().expect("a list");
    assert_eq!(bans.len(), 1, "{}", listed.json);
    assert_eq!(
        (bans[0]["key"].as_str(), bans[0]["banned"].as_bool()),
        (Some("mallory"), Some(true))
    );
    let left = bans[0]["remaining_ms"].as_u64().unwrap();
    assert!((590_000..=600_000).contains(&left), "{left}");
    let inspected = ask(
        at,
        "GET",
        "/admin/api/inspect?policy=login&key=mallory",
        auth,
        None,
    )
    .await;
    assert_eq!(inspected.json["banned"], json!(true), "{}", inspected.json);
    for (body, status, says) in [
        (
            json!({ "policy": "login", "key": "k" }),
            StatusCode::BAD_REQUEST,
            "duration_ms",
        ),
        (
            json!({ "policy": "login", "key": "k", "duration_ms": 0 }),
            StatusCode::BAD_REQUEST,
            "duration_ms",
        ),
        (
            json!({ "policy": "login", "duration_ms": 5 }),
            StatusCode::BAD_REQUEST,
            "key",
        ),
        (
            json!({ "policy": "nobody", "key": "k", "duration_ms": 5 }),
            StatusCode::NOT_FOUND,
            "no node",
        ),
    ] {
        let answer = ask(at, "PUT", "/admin/api/bans", auth, Some(body.clone())).await;
        assert_eq!(answer.status, status, "{body}: {}", answer.json);
        let error = answer.json["error"].as_str().unwrap_or_default();
        assert!(error.contains(says), "{body}: {error}");
    }
    let lift = json!({ "policy": "login", "key": "mallory" });
    let lifted = ask(at, "DELETE", "/admin/api/bans", auth, Some(lift.clone())).await;
    assert_eq!(lifted.json, json!({ "lifted": true }));
    let again = ask(at, "DELETE", "/admin/api/bans", auth, Some(lift)).await;
    assert_eq!(again.json, json!({ "lifted": false }));
    let started = Instant::now();
    while !b.check(&login, "mallory").await.allowed {
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "still refused on the other node"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let none = ask(at, "GET", "/admin/api/bans", auth, None).await;
    assert_eq!(none.json, json!([]));
    // A policy without a penalty is banned all the same, the other node refusing the key at its next call.
    let ban = json!({ "policy": "plain", "key": "eve", "duration_ms": 600_000 });
    let set = ask(at, "PUT", "/admin/api/bans", auth, Some(ban)).await;
    assert_eq!(set.status, StatusCode::NO_CONTENT, "{}", set.json);
    let started = Instant::now();
    while b.check(&plain, "eve").await.verdict != Verdict::Blocked {
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "the other node still admits the key a second after the ban"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let listed = ask(at, "GET", "/admin/api/bans?policy=plain", auth, None).await;
    assert_eq!(listed.json[0]["key"], json!("eve"), "{}", listed.json);
}

/// A number that may be null says so, and means the limit's own; a ban's `duration_ms`, which may not be
/// null, never says it may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_number_says_whether_it_may_be_null_and_null_means_the_limits_own() {
    let limiter = Limiter::in_memory();
    let at = serve_admin(limiter.clone()).await;
    let login = Rule::new()
        .prefix("api:login:")
        .policy("login")
        .max(5)
        .penalty(limiter_runtime::Penalty::fixed(Duration::from_secs(60)));
    limiter.check(&login, "alice").await;

    // The policy by its name, as everywhere in the API.
    let window_only = json!({ "policy": "login", "max": null, "window_ms": 2_000 });
    let set = api(at, "PUT", "/admin/api/overrides", Some(window_only)).await;
    assert_eq!(set.status, StatusCode::NO_CONTENT, "{}", set.json);
    let listed = api(at, "GET", "/admin/api/overrides", None).await.json;
    assert_eq!(
        listed,
        json!([{ "policy": "login", "prefix": "api:login:", "key": null, "pattern": null, "max": null, "window_ms": 2_000, "reserve": null }])
    );
    let decision = limiter.check(&login, "bob").await;
    assert_eq!(
        decision.limit, 5,
        "null is the limit's own max: {decision:?}"
    );
    // A pattern of keys: its override listed with its pattern, and decided by every key it matches.
    let pattern = json!({ "policy": "login", "pattern": "ali*", "max": 2 });
    let set = api(at, "PUT", "/admin/api/overrides", Some(pattern)).await;
    assert_eq!(set.status, StatusCode::NO_CONTENT, "{}", set.json);
    let listed = api(at, "GET", "/admin/api/overrides", None).await.json;
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["pattern"] == "ali*" && o["max"] == 2),
        "{listed}"
    );
    assert_eq!(limiter.check(&login, "alison").await.limit, 2);
    for (bad, says) in [
        (
            json!({ "policy": "login", "pattern": "ali", "max": 2 }),
            "one `*`",
        ),
        (
            json!({ "policy": "login", "pattern": "a*", "key": "k", "max": 2 }),
            "not both",
        ),
    ] {
        let refused = api(at, "PUT", "/admin/api/overrides", Some(bad)).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST);
        assert!(
            sentence(&refused).contains(says),
            "{:?}",
            sentence(&refused)
        );
    }
    let clear = json!({ "policy": "login", "pattern": "ali*" });
    let cleared = api(at, "DELETE", "/admin/api/overrides", Some(clear)).await;
    assert_eq!(cleared.status, StatusCode::NO_CONTENT, "{}", cleared.json);
    // Shares kept for the higher priorities, as the attribute writes them; inspect shows each ceiling.
    for (reserve, says) in [
        (json!("critical 120%"), "a whole percent"),
        (json!("urgent 20%"), "unknown priority `urgent`"),
        (json!(20), "reserve is a string"),
    ] {
        let body = json!({ "prefix": "api:login:", "reserve": reserve });
        let refused = api(at, "PUT", "/admin/api/overrides", Some(body)).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{reserve}");
        assert!(
            sentence(&refused).contains(says),
            "{:?}",
            sentence(&refused)
        );
    }
    let reserve = json!({ "prefix": "api:login:", "reserve": "critical 40%" });
    let set = api(at, "PUT", "/admin/api/overrides", Some(reserve)).await;
    assert_eq!(set.status, StatusCode::NO_CONTENT, "{}", set.json);
    let inspected = api(at, "GET", "/admin/api/inspect?policy=login&key=bob", None)
        .await
        .json;
    assert_eq!(
        inspected["ceilings"],
        json!([
            { "priority": "critical", "ceiling": 5, "remaining": 4 },
            { "priority": "high", "ceiling": 3, "remaining": 2 },
            { "priority": "normal", "ceiling": 3, "remaining": 2 },
            { "priority": "low", "ceiling": 3, "remaining": 2 },
        ])
    );
    let not_a_number = json!({ "prefix": "api:login:", "max": "5" });
    let refused = api(at, "PUT", "/admin/api/overrides", Some(not_a_number)).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(sentence(&refused), "max is a whole number or null");

    for duration in [json!("ten"), json!(-5), json!(1.5), Value::Null] {
        let ban = json!({ "policy": "login", "key": "mallory", "duration_ms": duration });
        let refused = api(at, "PUT", "/admin/api/bans", Some(ban)).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{duration}");
        let why = sentence(&refused);
        assert!(
            why.contains("from 1 to a year") && !why.contains("null"),
            "{duration}: {why:?}"
        );
    }
    assert!(limiter.check(&login, "mallory").await.allowed);
}

/// An override of a policy no node has used (by name or by prefix) is refused with a 404 naming it, as a ban
/// under a policy no node has used is: an operator's typo sets nothing that no limit would read. A policy's
/// name is as good as its prefix. Clearing is for any policy (an override of a policy gone).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_override_or_a_ban_of_a_policy_no_node_used_is_a_404_naming_it() {
    let limiter = Limiter::in_memory();
    let at = serve_admin(limiter.clone()).await;
    let used = Rule::new().prefix("api:used:").policy("used").max(5);
    limiter.check(&used, "k").await;

    for (path, body, named) in [
        (
            "/admin/api/overrides",
            json!({ "prefix": "api:usde:", "max": 1 }),
            "\"api:usde:\"",
        ),
        (
            "/admin/api/overrides",
            json!({ "prefix": "api:usde:", "key": "k", "window_ms": 1_000 }),
            "\"api:usde:\"",
        ),
        (
            "/admin/api/overrides",
            json!({ "policy": "usde", "max": 1 }),
            "\"usde\"",
        ),
        (
            "/admin/api/bans",
            json!({ "policy": "api:usde:", "key": "k", "duration_ms": 1_000 }),
            "\"api:usde:\"",
        ),
    ] {
        let refused = api(at, "PUT", path, Some(body.clone())).await;
        assert_eq!(refused.status, StatusCode::NOT_FOUND, "{body}");
        let why = sentence(&refused);
        assert!(why.contains(named), "{body}: {why:?}");
    }
    assert!(limiter.overrides().is_empty(), "{:?}", limiter.overrides());
    assert_eq!(limiter.check(&used, "k").await.limit, 5);

    let known = json!({ "prefix": "api:used:", "max": 1 });
    let set = api(at, "PUT", "/admin/api/overrides", Some(known)).await;
    assert_eq!(set.status, StatusCode::NO_CONTENT, "{}", set.json);
    assert_eq!(limiter.check(&used, "other").await.limit, 1);
    let by_name = json!({ "policy": "used", "max": 2 });
    let set = api(at, "PUT", "/admin/api/overrides", Some(by_name)).await;
    assert_eq!(set.status, StatusCode::NO_CONTENT, "{}", set.json);
    assert_eq!(limiter.check(&used, "other").await.limit, 2);
    assert_eq!(limiter.overrides().len(), 1, "the same override, by name");
    let gone = json!({ "prefix": "api:gone:" });
    let cleared = api(at, "DELETE", "/admin/api/overrides", Some(gone)).await;
    assert_eq!(cleared.status, StatusCode::NO_CONTENT);
}

/// The page answers at the router's prefix with and without a trailing slash, mounted as the docs say and in
/// the example service.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_answers_at_the_prefix_with_or_without_a_trailing_slash() {
    let limiter = Limiter::in_memory();
    let documented = serve_admin(limiter.clone()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let example = listener.local_addr().unwrap();
    let door = admin::builder(limiter.clone())
        .operator_token(TOKEN)
        .build()
        .unwrap();
    let app =
        examples::service::app(limiter, door).into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    for at in [documented, example] {
        let bare = request_with_body(at, "GET", "/admin", &[], None).await;
        assert_eq!(bare.status, 200, "{at}");
        assert!(bare.body.contains("id=\"override-form\""));
        for path in ["/admin/", "/admin/?from=bookmark"] {
            let slashed = request_with_body(at, "GET", path, &[], None).await;
            assert_eq!(slashed.status, 200, "{at}{path}");
            assert_eq!(slashed.header("content-type"), bare.header("content-type"));
            assert_eq!(slashed.body, bare.body, "{at}{path}");
        }
        let switch = api(at, "GET", "/admin/api/switch", None).await;
        assert_eq!(switch.json, json!({ "enabled": true }), "{at}");
    }
}
