//! Priorities: a share of every limit kept for the calls that matter most ([`Rule::reserve`]), decided in the
//! same script call as the count, on real Redis from two runtimes and in memory: a flood of `Normal` calls
//! leaves the `Critical` share free; reserves nest over four priorities; a limit in flight keeps permits for
//! `Critical` calls; a stacked call refused by a reserve is charged nothing; a refusal for a reserve is not an
//! offence; a lease taken for `Normal` calls never spends the reserve; `on_error = local` keeps the
//! proportions; and the tower layer reads the priority from a header, its quota fields counting against the
//! request's own ceiling. (On a Cluster: `cluster.rs`.)

mod fields;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{Algorithm, Limiter, OnError, Override, Penalty, Priority, Rule, Verdict};
use tests::http::request_with;
use tests::priorities::{a_flood_leaves_the_critical_share, calls, Told};
use tests::RedisServer;

/// Two runtimes on one Redis (two nodes), and one in memory twice (one node).
fn deployments(server: &RedisServer) -> [(Limiter, Limiter); 2] {
    let memory = Limiter::in_memory();
    [
        (server.limiter(), server.limiter()),
        (memory.clone(), memory),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_normal_calls_leaves_the_critical_share_on_two_nodes() {
    let server = RedisServer::start();
    for (i, (a, b)) in deployments(&server).iter().enumerate() {
        a_flood_leaves_the_critical_share(a, b, &format!("flood:{i}:")).await;
    }
}

/// Four priorities, each ceiling its own: `Low` 50, `Normal` 70, `High` 90, `Critical` 100. Each priority in
/// turn floods two runtimes and fills exactly up to its ceiling; then all four at once, on a fresh key: no
/// priority's calls are admitted while the limit holds its ceiling or more, and the total is exactly 100.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_reserves_with_four_priorities() {
    let server = RedisServer::start();
    for (algorithm, (a, b)) in [
        Algorithm::SlidingLog,
        Algorithm::FixedWindow,
        Algorithm::TokenBucket,
    ]
    .into_iter()
    .zip(deployments(&server).into_iter().cycle())
    {
        let rule = Rule::new()
            .algorithm(algorithm)
            .max(100)
            .window(Duration::from_secs(3_600))
            .prefix(format!("nested:{algorithm:?}:"))
            .reserve(Priority::Critical, 10)
            .reserve(Priority::High, 30)
            .reserve(Priority::Normal, 50);
        let ceilings = [50, 70, 90, 100];
        let mut used = 0;
        for (priority, ceiling) in Priority::ALL.into_iter().zip(ceilings) {
            let told = flood(&a, &b, &rule, "turns", priority, 2, 100).await;
            assert_eq!(
                told.admitted,
                ceiling - used,
                "{algorithm:?} {priority}: {told:?}"
            );
            used = ceiling;
        }
        // Now every priority is refused: the limit is full.
        for priority in Priority::ALL {
            let decision = a.check_with(&rule, "turns", 1, priority).await;
            assert_eq!(decision.verdict, Verdict::Limited, "{priority}");
        }

        // All at once: each admitted call of a priority found the limit below its ceiling, so what the lower
        // priorities took never passes their ceiling; the critical calls take what is left, exactly.
        let mut tasks = Vec::new();
        for priority in Priority::ALL {
            for runtime in [&a, &b] {
                let task = calls(
                    runtime.clone(),
                    rule.clone(),
                    "mixed",
                    priority,
                    60,
                    Duration::ZERO,
                );
                tasks.push((priority, tokio::spawn(task)));
            }
        }
        let mut admitted = [0; 4];
        for (priority, task) in tasks {
            admitted[priority as usize] += task.await.unwrap().admitted;
        }
        let [low, normal, high, critical] = admitted;
        assert!(low <= 50, "{admitted:?}");
        assert!(low + normal <= 70, "{admitted:?}");
        assert!(low + normal + high <= 90, "{admitted:?}");
        let total = low + normal + high + critical;
        let more = calls(
            a.clone(),
            rule.clone(),
            "mixed",
            Priority::Critical,
            100,
            Duration::ZERO,
        )
        .await;
        assert_eq!(
            total + more.admitted,
            100,
            "{algorithm:?}: {admitted:?}, then {more:?}"
        );
    }
}

/// `calls` tasks on each of `a` and `b`, each making `each` calls of `priority` on `rule`'s `key`: what they were
/// told, summed.
async fn flood(
    a: &Limiter,
    b: &Limiter,
    rule: &Rule,
    key: &'static str,
    priority: Priority,
    tasks: usize,
    each: u64,
) -> Told {
    let mut running = Vec::new();
    for runtime in [a, b] {
        for _ in 0..tasks {
            let task = calls(
                runtime.clone(),
                rule.clone(),
                key,
                priority,
                each,
                Duration::ZERO,
            );
            running.push(tokio::spawn(task));
        }
    }
    let mut sum = Told::default();
    for task in running {
        let told = task.await.unwrap();
        sum.admitted += told.admitted;
        sum.reserved += told.reserved;
        sum.limited += told.limited;
    }
    sum
}

/// `in_flight = 10` with 2 kept for `Critical`: never more than 8 calls below `Critical` hold a permit at once,
/// from two runtimes, and a `Critical` call finds one while 8 others run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_keep_permits_for_critical_calls() {
    let server = RedisServer::start();
    for (a, b) in deployments(&server) {
        let rule = Rule::new()
            .prefix("running:")
            .in_flight(10)
            .reserve(Priority::Critical, 20);
        // Held: 8 normal permits, then the ninth is refused for the share kept.
        let mut held = Vec::new();
        for i in 0..8 {
            let runtime = if i % 2 == 0 { &a } else { &b };
            held.push(runtime.acquire(&rule, "db").await.unwrap());
        }
        let refused = b.acquire(&rule, "db").await.unwrap_err();
        assert_eq!(refused.decision().verdict, Verdict::Reserved);
        let critical = a
            .acquire_with(&rule, "db", Priority::Critical)
            .await
            .unwrap();
        assert_eq!(critical.decision().remaining, 1);
        drop((held, critical));
        tokio::time::sleep(Duration::from_millis(100)).await;

        // Many callers at once, holding their permits a little: at most 8 below critical at any moment,
        // while a critical caller is never refused.
        let running = Arc::new(AtomicU64::new(0));
        let most = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for i in 0..12 {
            let runtime = if i % 2 == 0 { a.clone() } else { b.clone() };
            let (rule, running, most) = (rule.clone(), Arc::clone(&running), Arc::clone(&most));
            tasks.push(tokio::spawn(async move {
                for _ in 0..20 {
                    if let Ok(permit) = runtime.acquire(&rule, "db").await {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        running.fetch_sub(1, Ordering::SeqCst);
                        permit.release().await;
                    }
                }
            }));
        }
        for _ in 0..20 {
            let permit = a.acquire_with(&rule, "db", Priority::Critical).await;
            let permit = permit.expect("a critical call finds a permit");
            tokio::time::sleep(Duration::from_millis(3)).await;
            permit.release().await;
        }
        for task in tasks {
            task.await.unwrap();
        }
        let most = most.load(Ordering::SeqCst);
        assert!((1..=8).contains(&most), "{most} normal calls at once");
    }
}

/// A stacked call that one limit's reserve refuses is charged to none of its limits.
#[tokio::test]
async fn a_stacked_call_refused_by_a_reserve_is_charged_nothing() {
    let server = RedisServer::start();
    for (a, _) in deployments(&server) {
        let tight = Rule::new()
            .prefix("stacked:tight:")
            .max(10)
            .reserve(Priority::Critical, 20);
        let wide = Rule::new().prefix("stacked:wide:").max(100);
        for _ in 0..8 {
            let decisions = a.check_all([(&tight, "k"), (&wide, "k")]).await;
            assert!(decisions.iter().all(|d| d.allowed));
        }
        let [refused, other] = a.check_all([(&tight, "k"), (&wide, "k")]).await;
        assert_eq!(refused.verdict, Verdict::Reserved);
        assert!(!refused.allowed);
        let _ = other;
        assert_eq!(
            a.inspect(&wide, "k").await.unwrap().used,
            8,
            "nothing charged"
        );
        let [tight_decision, wide_decision] = a
            .check_all([
                (&tight, "k", 1, Priority::Critical),
                (&wide, "k", 1, Priority::Critical),
            ])
            .await;
        assert!(tight_decision.allowed && wide_decision.allowed);
        assert_eq!(a.inspect(&wide, "k").await.unwrap().used, 9);
    }
}

/// A refusal for a share kept above the call is not an offence: no block starts, and the critical calls still
/// find their share; a refusal of the full limit is, and blocks the key.
#[tokio::test]
async fn a_refusal_for_a_reserve_is_not_an_offence() {
    let server = RedisServer::start();
    for (a, _) in deployments(&server) {
        let rule = Rule::new()
            .prefix("penalized:")
            .max(5)
            .window(Duration::from_secs(60))
            .reserve(Priority::Critical, 40)
            .penalty(Penalty::fixed(Duration::from_secs(60)));
        for _ in 0..3 {
            assert!(a.check(&rule, "k").await.allowed);
        }
        for _ in 0..3 {
            let decision = a.check(&rule, "k").await;
            assert_eq!(decision.verdict, Verdict::Reserved, "{decision:?}");
            // Its retry is its own priority's: when a unit leaves the window.
            assert!(
                decision.retry_after > Duration::from_secs(50),
                "{decision:?}"
            );
        }
        let inspected = a.inspect(&rule, "k").await.unwrap();
        assert_eq!(
            (inspected.blocked_for, inspected.offences),
            (Duration::ZERO, 0)
        );
        for _ in 0..2 {
            assert!(
                a.check_with(&rule, "k", 1, Priority::Critical)
                    .await
                    .allowed
            );
        }
        // Full: a refusal now is the limit's own, an offence.
        let decision = a.check_with(&rule, "k", 1, Priority::Critical).await;
        assert_eq!(decision.verdict, Verdict::Blocked, "{decision:?}");
        assert_eq!(a.inspect(&rule, "k").await.unwrap().offences, 1);
    }
}

/// A lease taken for `Normal` calls takes only what their ceiling leaves: the reserve stays for `Critical` calls.
#[tokio::test]
async fn a_lease_taken_for_normal_calls_never_spends_the_reserve() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    for algorithm in [Algorithm::FixedWindow, Algorithm::TokenBucket] {
        let rule = Rule::new()
            .prefix(format!("leased:{algorithm:?}:"))
            .algorithm(algorithm)
            .max(10)
            .window(Duration::from_secs(3_600))
            .lease(5)
            .lease_ttl(Duration::from_secs(10))
            .reserve(Priority::Critical, 20);
        let call = |priority, n| {
            calls(
                limiter.clone(),
                rule.clone(),
                "hot",
                priority,
                n,
                Duration::ZERO,
            )
        };
        // Leases of 5 and 3: the ceiling of 8, no more.
        let normal = call(Priority::Normal, 20).await;
        assert_eq!(normal.admitted, 8, "{algorithm:?}: {normal:?}");
        // A critical call takes a lease of the reserve (2) and spends one unit of it: the unit left serves
        // critical calls only.
        assert_eq!(call(Priority::Critical, 1).await.admitted, 1);
        let normal = call(Priority::Normal, 5).await;
        assert_eq!(normal.admitted, 0, "{algorithm:?}: {normal:?}");
        let critical = call(Priority::Critical, 5).await;
        assert_eq!(critical.admitted, 1, "{algorithm:?}: {critical:?}");
    }
}

/// With Redis unreachable and `on_error = local`, this node's share keeps the limit's proportions.
#[tokio::test]
async fn a_local_share_keeps_the_proportions() {
    let mut server = RedisServer::start();
    let limiter = server
        .builder()
        .deadline(Duration::from_millis(100))
        .on_error(OnError::Local)
        .build()
        .unwrap();
    server.kill();
    let rule = Rule::new()
        .prefix("local:")
        .max(10)
        .reserve(Priority::Critical, 20);
    let normal = limiter.check(&rule, "k").await;
    assert_eq!(normal.verdict, Verdict::DegradedLocal);
    for _ in 0..7 {
        assert!(limiter.check(&rule, "k").await.allowed);
    }
    let refused = limiter.check(&rule, "k").await;
    assert!(!refused.allowed && refused.degraded, "{refused:?}");
    for _ in 0..2 {
        assert!(
            limiter
                .check_with(&rule, "k", 1, Priority::Critical)
                .await
                .allowed
        );
    }
    assert!(
        !limiter
            .check_with(&rule, "k", 1, Priority::Critical)
            .await
            .allowed
    );
}

async fn hello() -> &'static str {
    "hello"
}

/// Serves `/hello` behind a layer of `rule`, keyed by `x-client` and prioritized by `x-priority`.
async fn serve(limiter: &Limiter, rule: Rule) -> SocketAddr {
    let layer = RateLimitLayer::new(limiter, [rule], Key::header("x-client")).priority(|request| {
        request
            .headers
            .get("x-priority")
            .and_then(|value| value.to_str().ok())
            .and_then(|text| text.parse().ok())
            .unwrap_or_default()
    });
    let app = Router::new().route("/hello", get(hello)).layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// The layer reads each request's priority from a header; its quota fields (read with a Structured Fields
/// parser) count against the request's own ceiling: a `Low` client sees what is left to `Low` requests.
#[tokio::test]
async fn the_layer_takes_the_priority_from_a_header() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new()
        .prefix("api:")
        .name("api")
        .max(10)
        .window(Duration::from_secs(60))
        .reserve(Priority::Critical, 20)
        .reserve(Priority::Normal, 50);
    let address = serve(&limiter, rule).await;
    let get = |priority: &'static str| async move {
        let headers = [("x-client", "acme"), ("x-priority", priority)];
        request_with(address, "GET", "/hello", &headers).await
    };
    // Low requests fill their ceiling of 5.
    for left in (0..5).rev() {
        let response = get("low").await;
        assert_eq!(response.status, 200);
        let (policy, state) = fields::quota(&response);
        let (policy, state) = (
            fields::member(&policy, "api"),
            fields::member(&state, "api"),
        );
        assert_eq!((policy.get("q"), state.get("r")), (5, left), "{response:?}");
    }
    let refused = get("low").await;
    assert_eq!(refused.status, 429);
    assert!(fields::retry_after(&refused) > 0);
    // A normal request has its own ceiling of 8: 3 left of it.
    let normal = get("normal").await;
    assert_eq!(normal.status, 200);
    let (policy, state) = fields::quota(&normal);
    assert_eq!(
        (
            fields::member(&policy, "api").get("q"),
            fields::member(&state, "api").get("r")
        ),
        (8, 2)
    );
    // A critical one, all 10: 3 left (6 used).
    let critical = get("critical").await;
    let (policy, state) = fields::quota(&critical);
    assert_eq!(
        (
            fields::member(&policy, "api").get("q"),
            fields::member(&state, "api").get("r")
        ),
        (10, 3)
    );
    // A request that names no priority is normal; one that names none we know is too.
    assert_eq!(get("urgent").await.status, 200);
}

/// The deny cache tells priorities apart: the refusals of `Normal` calls it answers say nothing of `Critical`
/// ones, which Redis still decides.
#[tokio::test]
async fn a_denial_for_normal_calls_says_nothing_of_critical_ones() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new()
        .prefix("denied:")
        .max(10)
        .reserve(Priority::Critical, 20);
    let normal = calls(
        limiter.clone(),
        rule.clone(),
        "k",
        Priority::Normal,
        8,
        Duration::ZERO,
    )
    .await;
    assert_eq!(normal.admitted, 8);
    let before = server.calls("evalsha");
    let refused = calls(
        limiter.clone(),
        rule.clone(),
        "k",
        Priority::Normal,
        50,
        Duration::ZERO,
    )
    .await;
    assert_eq!(refused.reserved, 50);
    assert!(
        server.calls("evalsha") - before <= 2,
        "the cache answered the refusals"
    );
    let critical = calls(
        limiter.clone(),
        rule.clone(),
        "k",
        Priority::Critical,
        3,
        Duration::ZERO,
    )
    .await;
    assert_eq!((critical.admitted, critical.limited), (2, 1));
}

/// An operator's override sets a policy's reserves at run time, on every node: the other runtime keeps the
/// share from then on. `inspect` shows what each priority may still use.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_override_keeps_a_share_on_every_node() {
    let server = RedisServer::start();
    let (a, b) = (server.limiter(), server.limiter());
    let rule = Rule::new().prefix("overridden:").max(10);
    assert!(b.check(&rule, "k").await.allowed);
    a.set_override(Override::prefix("overridden:").reserve(Priority::Critical, 50))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    while b.overrides().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "b has not seen the override"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let normal = calls(
        b.clone(),
        rule.clone(),
        "k",
        Priority::Normal,
        10,
        Duration::ZERO,
    )
    .await;
    assert_eq!(
        (normal.admitted, normal.reserved),
        (4, 6),
        "a ceiling of 5, one used before"
    );
    let inspected = b.inspect(&rule, "k").await.unwrap();
    let ceilings: Vec<_> = inspected
        .ceilings
        .iter()
        .map(|c| (c.priority, c.ceiling, c.remaining))
        .collect();
    assert_eq!(
        ceilings,
        [
            (Priority::Critical, 10, 5),
            (Priority::High, 5, 0),
            (Priority::Normal, 5, 0),
            (Priority::Low, 5, 0),
        ]
    );
    assert_eq!(
        b.overrides()[0].reserve_value().as_deref(),
        Some("critical 50%")
    );
    let critical = calls(
        a.clone(),
        rule.clone(),
        "k",
        Priority::Critical,
        6,
        Duration::ZERO,
    )
    .await;
    assert_eq!((critical.admitted, critical.limited), (5, 1));
}
