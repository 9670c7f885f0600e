//! What the operators see, against real Redis: `inspect` reads a key as memory does (the same twin on the
//! same state, for every algorithm, on a schedule of calls) and charges nothing; the most limited keys are
//! merged from every node's report; every decision names its verdict; the admin API answers only with its
//! token, in JSON (read back with `serde_json`), and changes what it says it changes.

use std::net::SocketAddr;
use std::time::Duration;

use limiter_runtime::{admin, Algorithm, FakeClock, Limiter, OnError, Override, Rule, Verdict};
use serde_json::Value;
use tests::deployment::with_heartbeats;
use tests::http::{request_with, Response};
use tests::{RedisServer, Rng, ALGORITHMS, PATIENT};

/// A schedule of calls of random costs at random times, on memory and on Redis (each on its own fake clock,
/// moved alike): after each call, `inspect` reads the key alike on both, reads it again the same (it charges
/// nothing), and says what the next call finds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_reads_a_key_as_the_next_call_finds_it_on_redis_and_in_memory() {
    let server = RedisServer::start();
    for (n, algorithm) in ALGORITHMS.into_iter().enumerate() {
        let mut rng = Rng::new(31 + n as u64);
        let (memory_clock, redis_clock) = (FakeClock::new(), FakeClock::new());
        let memory = Limiter::builder()
            .clock(memory_clock.clone())
            .build()
            .unwrap();
        // Patient: a call past the default deadline on a loaded machine would be decided without Redis.
        let redis = server
            .builder()
            .clock(redis_clock.clone())
            .deadline(PATIENT)
            .deny_cache(false)
            .build()
            .unwrap();
        let rule = Rule::new()
            .algorithm(algorithm)
            .max(7)
            .window(Duration::from_secs(10))
            .prefix(format!("inspect:{n}:"));
        // A fresh key's room: 7, but a leaky bucket without a wait, which admits one call at a time.
        let capacity = redis.inspect(&rule, "nobody").await.unwrap().remaining;
        assert_eq!(
            capacity,
            if algorithm == Algorithm::LeakyBucket {
                1
            } else {
                7
            }
        );
        for step in 0..200 {
            let cost = *rng.pick(&[0, 1, 1, 1, 2, 3]);
            if cost > 0 {
                let (m, r) = (
                    memory.check(&rule, "k").cost(cost).await,
                    redis.check(&rule, "k").cost(cost).await,
                );
                assert_eq!(m.allowed, r.allowed, "{algorithm:?}, step {step}");
            }
            let (m, r) = (
                memory.inspect(&rule, "k").await.unwrap(),
                redis.inspect(&rule, "k").await.unwrap(),
            );
            assert_eq!(m, r, "{algorithm:?}, step {step}");
            assert_eq!(
                redis.inspect(&rule, "k").await.unwrap(),
                r,
                "inspect charged"
            );
            assert_eq!(m.used + m.remaining, capacity, "{algorithm:?}: {m:?}");
            assert_eq!(
                m.retry_after.is_zero(),
                m.remaining > 0,
                "{algorithm:?}: {m:?}"
            );
            let step = Duration::from_micros(rng.below(3_000_000));
            memory_clock.advance(step);
            redis_clock.advance(step);
        }
        // What inspect says, the next call finds: as many units admitted as remain.
        let remaining = redis.inspect(&rule, "k").await.unwrap().remaining;
        for _ in 0..remaining {
            assert!(redis.check(&rule, "k").await.allowed, "{algorithm:?}");
        }
        let full = redis.inspect(&rule, "k").await.unwrap();
        assert_eq!((full.remaining, full.used), (0, capacity), "{algorithm:?}");
        assert!(!redis.check(&rule, "k").await.allowed, "{algorithm:?}");
        assert!(full.retry_after > Duration::ZERO && full.reset_after >= full.retry_after);
        // A key nobody used is empty.
        let fresh = redis.inspect(&rule, "nobody").await.unwrap();
        let fresh = (fresh.used, fresh.remaining, fresh.reset_after);
        assert_eq!(fresh, (0, capacity, Duration::ZERO), "{algorithm:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_counts_permits_in_flight_and_the_deny_cache() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new().prefix("inspect:flight:").in_flight(3);
    let (a, b) = (
        limiter.acquire(&rule, "job").await.unwrap(),
        limiter.acquire(&rule, "job").await.unwrap(),
    );
    let held = limiter.inspect(&rule, "job").await.unwrap();
    assert!(held.in_flight);
    assert_eq!((held.used, held.remaining, held.limit), (2, 1, 3));
    a.settle(limiter_runtime::AsCharged).await;
    b.settle(limiter_runtime::AsCharged).await;
    assert_eq!(limiter.inspect(&rule, "job").await.unwrap().used, 0);

    // A key Redis refused is in this node's deny cache until its retry time; another is not.
    let rule = Rule::new()
        .prefix("inspect:denied:")
        .max(1)
        .window(Duration::from_secs(60));
    assert!(limiter.check(&rule, "hot").await.allowed);
    assert!(!limiter.check(&rule, "hot").await.allowed);
    assert!(limiter.inspect(&rule, "hot").await.unwrap().deny_cached);
    assert!(!limiter.inspect(&rule, "cold").await.unwrap().deny_cached);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_overridden_limit_is_inspected_as_overridden_and_a_dead_redis_says_so() {
    let mut server = RedisServer::start();
    // Patient: a short deadline missed on a loaded machine would decide (or fail) the calls made before the
    // kill without Redis; once Redis is killed, a call fails at once (the port refuses connections).
    let limiter = server.builder().deadline(PATIENT).build().unwrap();
    let rule = Rule::new().prefix("inspect:o:").max(10);
    limiter
        .set_override(Override::key("inspect:o:", "vip").max(100))
        .await
        .unwrap();
    assert_eq!(limiter.inspect(&rule, "vip").await.unwrap().limit, 100);
    assert_eq!(limiter.inspect(&rule, "other").await.unwrap().limit, 10);
    server.kill();
    let error = limiter.inspect(&rule, "vip").await.unwrap_err();
    assert!(
        error.to_string().contains("could not answer the read"),
        "{error}"
    );
}

/// Three nodes, each refusing 150 keys (more than the 100 a node reports), each key more on some nodes than
/// on others: the merged count of every key listed is never below its refusals on all three.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_most_limited_keys_of_three_nodes_are_never_below_the_truth() {
    let server = RedisServer::start();
    let nodes = [(); 3].map(|_| with_heartbeats(server.builder()));
    let rule = Rule::new()
        .prefix("many:")
        .policy("many")
        .max(1)
        .window(Duration::from_secs(600));
    let calls = |node: usize, key: usize| 1 + (key * 7 + node * 53) % 10;
    let mut truth = std::collections::BTreeMap::new();
    for (n, node) in nodes.iter().enumerate() {
        for key in 0..150 {
            for _ in 0..calls(n, key) {
                node.check(&rule, &format!("k{key}")).await;
            }
            *truth.entry(format!("k{key}")).or_insert(0u64) += calls(n, key) as u64;
        }
    }
    // Each key's first call was admitted; the rest refused.
    truth.values_mut().for_each(|calls| *calls -= 1);
    // Until every node's report holds all its refusals (an event: the merged count reaches the truth's);
    // a report written during the calls would list fewer.
    let refusals: u64 = truth.values().sum();
    let started = std::time::Instant::now();
    loop {
        let overview = nodes[0].overview().await;
        let many = overview.policies.iter().find(|p| p.policy == "many");
        if overview.nodes.len() == 3 && many.is_some_and(|p| p.refused == refusals) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never every node's refusals: {overview:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let top = nodes[0].top_limited("many", 150).await.unwrap();
    assert!(top.len() >= 100, "{} keys listed", top.len());
    let mut above = 0;
    for listed in &top {
        let true_count = truth[&listed.key];
        assert!(
            listed.refused >= true_count,
            "{}: {} listed, {true_count} refused",
            listed.key,
            listed.refused
        );
        above += listed.refused - true_count;
    }
    // The truly most refused key is listed first or tied with it.
    let heaviest = truth.values().max().unwrap();
    assert!(top[0].refused >= *heaviest, "{top:?}");
    assert!(
        above > 0,
        "some keys were left out of a node's report: counted at its bound"
    );
}

/// Two nodes (limiters) on one Redis refuse keys; either answers for both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_most_limited_keys_are_the_whole_services() {
    let server = RedisServer::start();
    let (a, b) = (
        with_heartbeats(server.builder()),
        with_heartbeats(server.builder()),
    );
    let rule = Rule::new()
        .prefix("top:")
        .policy("api")
        .max(1)
        .window(Duration::from_secs(60));
    let other = Rule::new()
        .prefix("top2:")
        .policy("other")
        .max(1)
        .window(Duration::from_secs(60));
    for (node, key, calls) in [
        (&a, "mallory", 6),
        (&b, "mallory", 4),
        // A key holding what store keys escape: shown as written.
        (&b, "e:v|e%", 3),
        (&a, "alice", 1),
    ] {
        for _ in 0..calls {
            node.check(&rule, key).await;
        }
    }
    for _ in 0..3 {
        b.check(&other, "trudy").await;
    }
    // Within a heartbeat or two, each node has reported.
    let mut top = Vec::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        top = a.top_limited("api", 10).await.unwrap();
        if top.first().is_some_and(|t| t.refused == 9) {
            break;
        }
    }
    let found: Vec<(&str, &str, u64)> = top
        .iter()
        .map(|t| (t.policy.as_str(), t.key.as_str(), t.refused))
        .collect();
    // mallory: the first call admitted, the other 9 refused, 5 by a and 4 by b; e:v|e%: 2 of 3.
    assert_eq!(
        found,
        [("api", "mallory", 9), ("api", "e:v|e%", 2)],
        "{top:?}"
    );
    assert_eq!(b.top_limited("top:", 1).await.unwrap(), top[..1]);
    let everything = b.top_limited("", 10).await.unwrap();
    assert_eq!(everything.len(), 3, "{everything:?}");
    assert!(everything
        .iter()
        .any(|t| t.policy == "other" && t.key == "trudy" && t.refused == 2));

    let overview = a.overview().await;
    assert!(!overview.partial);
    assert_eq!(overview.nodes.len(), 2, "{overview:?}");
    assert_eq!(overview.nodes.iter().filter(|n| n.this).count(), 1);
    let api = overview
        .policies
        .iter()
        .find(|p| p.policy == "api")
        .unwrap();
    assert_eq!((api.decided, api.refused), (14, 11), "{api:?}");
    let usage = a.usage(&rule, "e:v|e%").await.unwrap();
    assert_eq!(usage.key, "e:v|e%");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_gone_the_overview_is_this_nodes_alone_and_top_keys_an_error() {
    let mut server = RedisServer::start();
    let limiter = server
        .builder()
        .deadline(Duration::from_millis(100))
        .on_error(OnError::Open)
        .build()
        .unwrap();
    let rule = Rule::new().prefix("gone:").max(1);
    limiter.check(&rule, "k").await;
    server.kill();
    for _ in 0..5 {
        let degraded = limiter.check(&rule, "k").await;
        assert_eq!(degraded.verdict, Verdict::DegradedOpen);
    }
    let overview = limiter.overview().await;
    assert!(overview.partial);
    let [node] = overview.nodes.as_slice() else {
        panic!("{overview:?}")
    };
    assert!(node.this && node.redis && node.degraded >= 5, "{node:?}");
    assert!(limiter.top_limited("", 10).await.is_err());
}

/// Every verdict of the vocabulary, each where it is given.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_decision_names_its_verdict() {
    let mut server = RedisServer::start();
    // Patient: a short deadline missed on a loaded machine would decide (or fail) the calls made before the
    // kill without Redis; once Redis is killed, a call fails at once (the port refuses connections).
    let limiter = server.builder().deadline(PATIENT).build().unwrap();
    let rule = Rule::new()
        .prefix("why:")
        .max(1)
        .window(Duration::from_secs(60));
    assert_eq!(limiter.check(&rule, "k").await.verdict, Verdict::Admitted);
    assert_eq!(limiter.check(&rule, "k").await.verdict, Verdict::Limited);
    let penalized = rule
        .clone()
        .prefix("why:penalty:")
        .penalty(limiter_runtime::Penalty::fixed(Duration::from_secs(60)));
    limiter.check(&penalized, "k").await;
    assert_eq!(
        limiter.check(&penalized, "k").await.verdict,
        Verdict::Blocked
    );
    let shadow = rule.clone().prefix("why:shadow:").shadow(true);
    limiter.check(&shadow, "k").await;
    let would = limiter.check(&shadow, "k").await;
    assert_eq!((would.verdict, would.allowed), (Verdict::Shadow, false));
    let zero = rule.clone().prefix("why:zero:").max(0);
    assert_eq!(
        limiter.check(&zero, "k").await.verdict,
        Verdict::Misconfigured
    );
    limiter.set_enabled_here(false);
    assert_eq!(
        limiter.check(&rule, "k").await.verdict,
        Verdict::SwitchedOff
    );
    limiter.set_enabled_here(true);
    server.kill();
    let verdict = |on_error| {
        let rule = rule.clone().prefix("why:down:").on_error(on_error);
        let limiter = limiter.clone();
        async move { limiter.check(&rule, "k").await.verdict }
    };
    assert_eq!(verdict(OnError::Open).await, Verdict::DegradedOpen);
    assert_eq!(verdict(OnError::Closed).await, Verdict::Unavailable);
    assert_eq!(verdict(OnError::Local).await, Verdict::DegradedLocal);
    let names: Vec<&str> = Verdict::ALL.iter().map(|v| v.as_str()).collect();
    assert_eq!(
        names,
        [
            "admitted",
            "limited",
            "blocked",
            "reserved",
            "unavailable",
            "degraded_open",
            "degraded_local",
            "shadow",
            "skipped",
            "switched_off",
            "misconfigured"
        ]
    );
}

/// A call of two limits that skips the first (`skip_if` held).
#[limiter_runtime::rate_limit(prefix = "why:skip:", key = user, max = 100, window = 60, skip_if = user.starts_with("staff"))]
#[limiter_runtime::rate_limit(prefix = "why:after:", key = user, max = 1, window = 60)]
async fn skipping(user: &str) -> Result<(), limiter_runtime::RateLimited> {
    let _ = user;
    Ok(())
}

/// `Skipped` is the verdict of a limit a real call skipped: seen beside the limit that refused the call.
#[tokio::test]
async fn a_skipped_limit_is_named_skipped() {
    let limiter = Limiter::builder().build().unwrap();
    limiter
        .scope(async {
            assert!(skipping("staff1").await.is_ok());
            let refused = skipping("staff1").await.unwrap_err();
            let verdicts: Vec<(String, Verdict)> = refused
                .limits()
                .map(|(_, decision)| (decision.verdict.as_str().to_owned(), decision.verdict))
                .collect();
            assert_eq!(
                verdicts,
                [
                    ("skipped".to_owned(), Verdict::Skipped),
                    ("limited".to_owned(), Verdict::Limited)
                ]
            );
            // A customer is counted by both.
            assert!(skipping("customer").await.is_ok());
        })
        .await;
}

/// Serves the admin router of `limiter` on a free loopback port, at `/admin`.
async fn serve_admin(limiter: Limiter, token: &str) -> SocketAddr {
    let app = axum::Router::new().nest("/admin", admin::router(limiter, token).unwrap());
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

const TOKEN: &str = "an-operators-token";

/// `method path` with the token and `body` (JSON), and what came back, read as JSON when there is any.
async fn api(at: SocketAddr, method: &str, path: &str, body: Option<Value>) -> (Response, Value) {
    let bearer = format!("Bearer {TOKEN}");
    let body = body.map(|b| b.to_string());
    let mut headers = vec![("authorization", bearer.as_str())];
    if body.is_some() {
        headers.push(("content-type", "application/json"));
    }
    let response =
        tests::http::request_with_body(at, method, path, &headers, body.as_deref()).await;
    let json = serde_json::from_str(&response.body).unwrap_or(Value::Null);
    (response, json)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_api_answers_its_token_alone_in_json() {
    let server = RedisServer::start();
    // On a fake clock that never moves: the refusals below stay in the deny cache (held a second of the
    // limiter's clock) however long a loaded machine takes to reach the inspection.
    let clock = FakeClock::new();
    let limiter = with_heartbeats(server.builder().clock(clock));
    assert!(admin::router(limiter.clone(), "short").is_err());
    let at = serve_admin(limiter.clone(), TOKEN).await;
    let rule = Rule::new()
        .prefix("rate_limit:emp:")
        .policy("employee")
        .max(2);
    for _ in 0..5 {
        limiter.check(&rule, "1001").await;
    }

    for authorization in [
        None,
        Some("Bearer wrong"),
        Some("an-operators-token"),
        Some("Bearer "),
    ] {
        let headers: Vec<(&str, &str)> = authorization
            .map(|a| ("authorization", a))
            .into_iter()
            .collect();
        let refused = request_with(at, "GET", "/admin/api/policies", &headers).await;
        assert_eq!(refused.status, 401, "{authorization:?}");
        assert_eq!(refused.header("www-authenticate"), Some("Bearer"));
    }
    // The page needs no token (it asks for one), and allows no other origin's code.
    let page = request_with(at, "GET", "/admin", &[]).await;
    assert_eq!(page.status, 200);
    assert!(page
        .header("content-type")
        .unwrap()
        .starts_with("text/html"));
    assert!(page
        .header("content-security-policy")
        .unwrap()
        .contains("default-src 'none'"));
    assert!(page.body.contains("id=\"override-form\""));

    let (_, policies) = api(at, "GET", "/admin/api/policies", None).await;
    // Beside the door's own policy (its failed tokens, counted above).
    let policies = policies.as_array().unwrap();
    let door = policies
        .iter()
        .find(|p| p["policy"] == "admin-failed-tokens")
        .unwrap();
    assert_eq!(door["decided"].as_u64(), Some(4 + 2));
    let employee = policies.iter().find(|p| p["policy"] == "employee").unwrap();
    assert_eq!(employee["prefix"], "rate_limit:emp:");
    assert_eq!(
        (employee["decided"].as_u64(), employee["refused"].as_u64()),
        (Some(5), Some(3))
    );
    assert!(employee["decided_per_s"].as_f64().unwrap() > 0.0);

    let (_, top) = api(at, "GET", "/admin/api/top?n=10", None).await;
    assert_eq!(
        top,
        serde_json::json!([{ "policy": "employee", "key": "1001", "refused": 3 }])
    );
    assert_eq!(
        api(at, "GET", "/admin/api/top?n=0", None).await.0.status,
        400
    );

    let (_, state) = api(
        at,
        "GET",
        "/admin/api/inspect?policy=employee&key=1001",
        None,
    )
    .await;
    assert_eq!(
        (state["used"].as_u64(), state["remaining"].as_u64()),
        (Some(2), Some(0))
    );
    assert_eq!(state["deny_cached"], true);
    let (unknown, _) = api(at, "GET", "/admin/api/inspect?policy=nope&key=1", None).await;
    assert_eq!(unknown.status, 404);

    let (_, nodes) = api(at, "GET", "/admin/api/nodes", None).await;
    assert_eq!(nodes[0]["this"], true);
    assert_eq!(nodes[0]["redis"], "up");

    // Overrides: set, listed, in force; cleared.
    // The policy by its name, as inspection and bans name it; a name no node knows is 404.
    let nameless = serde_json::json!({ "policy": "nobody", "max": 10 });
    let (unknown, why) = api(at, "PUT", "/admin/api/overrides", Some(nameless)).await;
    assert_eq!(unknown.status, 404, "{why}");
    assert!(
        why["error"]
            .as_str()
            .unwrap()
            .contains("named or prefixed \"nobody\""),
        "{why}"
    );
    let vip =
        serde_json::json!({ "policy": "employee", "key": "1001", "max": 10, "window_ms": null });
    assert_eq!(
        api(at, "PUT", "/admin/api/overrides", Some(vip))
            .await
            .0
            .status,
        204
    );
    let (_, list) = api(at, "GET", "/admin/api/overrides", None).await;
    assert_eq!(
        list,
        serde_json::json!([{ "policy": "employee", "prefix": "rate_limit:emp:", "key": "1001", "pattern": null, "max": 10, "window_ms": null, "reserve": null }])
    );
    assert!(limiter.check(&rule, "1001").await.allowed);
    let bad = serde_json::json!({ "prefix": "rate_limit:emp:", "max": -1 });
    let (refused, why) = api(at, "PUT", "/admin/api/overrides", Some(bad)).await;
    assert_eq!(refused.status, 400);
    assert!(why["error"].as_str().unwrap().contains("max"), "{why}");
    // A body that is not JSON is refused like any other bad input.
    let headers = [("authorization", "Bearer an-operators-token")];
    let garbled =
        tests::http::request_with_body(at, "PUT", "/admin/api/switch", &headers, Some("{on")).await;
    assert_eq!(garbled.status, 400);
    let why: Value = serde_json::from_str(&garbled.body).unwrap();
    assert!(why["error"].as_str().unwrap().contains("not JSON"), "{why}");
    let target = serde_json::json!({ "prefix": "rate_limit:emp:", "key": "1001" });
    assert_eq!(
        api(at, "DELETE", "/admin/api/overrides", Some(target))
            .await
            .0
            .status,
        204
    );
    assert!(limiter.overrides().is_empty());

    // The switch.
    let off = serde_json::json!({ "enabled": false });
    assert_eq!(
        api(at, "PUT", "/admin/api/switch", Some(off))
            .await
            .0
            .status,
        204
    );
    assert_eq!(
        api(at, "GET", "/admin/api/switch", None).await.1,
        serde_json::json!({ "enabled": false })
    );
    assert!(!limiter.is_enabled());
}

/// On a Cluster, each node's report lives in its set of instances' slot: read in one script call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_most_limited_keys_on_a_cluster() {
    let cluster = tests::RedisCluster::start();
    let node = || with_heartbeats(Limiter::builder().redis_cluster(cluster.seeds()));
    let (a, b) = (node(), node());
    let rule = Rule::new()
        .prefix("ctop:")
        .policy("c")
        .max(1)
        .window(Duration::from_secs(60));
    for (node, key) in [(&a, "x"), (&a, "x"), (&b, "x"), (&b, "y"), (&b, "y")] {
        node.check(&rule, key).await;
    }
    let mut top = Vec::new();
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        top = a.top_limited("c", 10).await.unwrap();
        if top.len() == 2 && top[0].refused == 2 {
            break;
        }
    }
    let found: Vec<(&str, u64)> = top.iter().map(|t| (t.key.as_str(), t.refused)).collect();
    assert_eq!(found, [("x", 2), ("y", 1)]);
    assert_eq!(b.overview().await.nodes.len(), 2);
    // A key cannot be read without charging it from every master: inspect goes to the key's own.
    let state = b.inspect(&rule, "y").await.unwrap();
    assert_eq!((state.used, state.remaining), (1, 0));
}

/// A prefix made per tenant makes a policy each: the watch tallies 128, and decides the rest as ever.
#[tokio::test]
async fn the_watch_tallies_a_bounded_number_of_policies() {
    let limiter = Limiter::in_memory();
    for tenant in 0..300 {
        let rule = Rule::new().prefix(format!("tenant:{tenant}:")).max(1);
        assert!(limiter.check(&rule, "k").await.allowed);
        assert!(!limiter.check(&rule, "k").await.allowed);
    }
    let overview = limiter.overview().await;
    assert_eq!(overview.policies.len(), 128);
    assert_eq!(limiter.top_limited("", 1_000).await.unwrap().len(), 128);
}

/// A node that does not tally reports no policy, and decides as ever.
#[tokio::test]
async fn a_node_may_tally_nothing() {
    let limiter = Limiter::builder().tally(false).build().unwrap();
    let rule = Rule::new().prefix("quiet:").max(1);
    assert!(limiter.check(&rule, "k").await.allowed);
    assert!(!limiter.check(&rule, "k").await.allowed);
    assert!(limiter.overview().await.policies.is_empty());
    assert!(limiter.top_limited("", 10).await.unwrap().is_empty());
    assert_eq!(limiter.inspect(&rule, "k").await.unwrap().used, 1);
}

/// Keys holding what some layer escapes: the store key's `%`, `:` and `|`, escapes written literally, the
/// node report's `\`, tab, newline and carriage return, quotes, control characters, glob and tag characters,
/// non-ASCII. Each is one policy's key, decided on two nodes.
const AWKWARD: [&str; 10] = [
    "a:b|c%d",
    "%3A%7C%25",
    "quote\"d 'single'",
    "back\\slash\\n\\t\\",
    "tab\tnew\nline\rcr",
    "ünï cödé ✓ 🦀",
    "ctl\u{0}\u{1}\u{1b}[31m\u{7f}",
    "*?[glob]{tag}",
    " spaced <b>&amp;</b> ",
    "%",
];

/// `text` percent-encoded whole but its unreserved characters (RFC 3986), as a query's value.
fn query_value(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                char::from(b).to_string()
            }
            b => format!("%{b:02X}"),
        })
        .collect()
}

/// Checks that a key holding what the store key, the nodes' reports or JSON escape comes out of the admin API
/// as it was written (read with a real JSON parser): in a policy's busiest keys (decided on this node, or on
/// another one and read from its report through Redis), in the most refused keys, and in `inspect`, which
/// reads the same count the calls made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn awkward_keys_come_out_of_the_admin_api_as_written() {
    let server = RedisServer::start();
    let (here, there) = (
        with_heartbeats(server.builder()),
        with_heartbeats(server.builder()),
    );
    let at = serve_admin(here.clone(), TOKEN).await;
    let rule = Rule::new()
        .prefix("awkward:")
        .policy("awkward")
        .max(1)
        .window(Duration::from_secs(600));
    // 16 calls a key in a row on each node: a node's tally puts every 16th decision's key among the busiest
    // (weighing 16), so each node puts each key there once, with 16; its first call admitted, 31 refused.
    for key in AWKWARD {
        for node in [&here, &there] {
            for _ in 0..16 {
                node.check(&rule, key).await;
            }
        }
    }
    let mut expected: Vec<&str> = AWKWARD.to_vec();
    expected.sort_unstable();

    // Within a few heartbeats, the other node's report is read back through Redis: each key is listed once,
    // as this node counted it and as that node reported it, merged.
    let started = std::time::Instant::now();
    let busiest = loop {
        let (_, policies) = api(at, "GET", "/admin/api/policies", None).await;
        let awkward = policies
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["policy"] == "awkward")
            .cloned();
        if let Some(awkward) = awkward.filter(|p| p["decided"] == 32 * AWKWARD.len()) {
            break awkward["busiest"].as_array().unwrap().clone();
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "never both nodes' reports: {policies:#}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut listed: Vec<(&str, u64)> = busiest
        .iter()
        .map(|b| (b["key"].as_str().unwrap(), b["decided"].as_u64().unwrap()))
        .collect();
    listed.sort_unstable();
    let wanted: Vec<(&str, u64)> = expected.iter().map(|key| (*key, 32)).collect();
    assert_eq!(listed, wanted, "{busiest:#?}");

    let (_, top) = api(at, "GET", "/admin/api/top?n=100&policy=awkward", None).await;
    let mut refused: Vec<(&str, u64)> = top
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["key"].as_str().unwrap(), t["refused"].as_u64().unwrap()))
        .collect();
    refused.sort_unstable();
    let wanted: Vec<(&str, u64)> = expected.iter().map(|key| (*key, 31)).collect();
    assert_eq!(refused, wanted, "{top:#}");

    for key in AWKWARD {
        let path = format!("/admin/api/inspect?policy=awkward&key={}", query_value(key));
        let (answer, state) = api(at, "GET", &path, None).await;
        assert_eq!(answer.status, 200, "{key:?}: {}", answer.body);
        assert_eq!(state["key"].as_str(), Some(key), "{state:#}");
        // The key the calls counted: full, its one call admitted.
        assert_eq!(
            (state["used"].as_u64(), state["remaining"].as_u64()),
            (Some(1), Some(0)),
            "{key:?}: {state:#}"
        );
    }
}
