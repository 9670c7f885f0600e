//! Priorities: a share of every limit kept for the calls that matter most ([`Rule::reserve`]), decided in the
//! same script call as the count, on real Redis from two runtimes and in memory: a flood of `Normal` calls
//! leaves the `Critical` share free; reserves nest over four priorities; a limit in flight keeps permits for
//! `Critical` calls; a stacked call refused by a reserve is charged nothing; a refusal for a reserve is not an
//! offence; a cost above its priority's ceiling (within `max`) is too large; a lease taken for `Normal` calls
//! never spends the reserve; `on_error = local` keeps the proportions, on one node and on each of three; and
//! the tower layer reads the priority from a header, its quota fields counting against the request's own
//! ceiling. (On a Cluster: `cluster.rs`.)

use crate::fields;

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{
    Algorithm, Clock, FakeClock, Limiter, OnError, Override, Penalty, Permit, Priority, Reason,
    Rule, Verdict,
};
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
            let decision = a.check(&rule, "turns").priority(priority).await;
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
///
/// Counted exactly: in each round every caller holding no permit asks at once (12 callers below `Critical`, on
/// two runtimes), and nobody gives a permit back until all have been answered. So what is held when a round's
/// asking ends is every permit the limit granted and has not taken back: a ninth granted at any moment would
/// still be held then. With more callers than permits, exactly 8 are held after each round (a `Critical`
/// permit held meanwhile would count against their ceiling too, so the `Critical` caller asks next, racing
/// the callers still without one). Then some permits are given back (awaited; a different number each round)
/// and taken again by the next round.
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
            .acquire(&rule, "db")
            .priority(Priority::Critical)
            .await
            .unwrap();
        assert_eq!(critical.decision().remaining, 1);
        // Each given back before the rounds start: `release` returns once the next call finds it free.
        for permit in held.into_iter().chain([critical]) {
            permit.settle(limiter_runtime::AsCharged).await;
        }
        assert_eq!(a.inspect(&rule, "db").await.unwrap().used, 0);

        // Every caller of 12 without a permit asks at once, on both runtimes, with `priority`.
        let ask = |from: usize, priority| {
            (from..12)
                .map(|i| {
                    let runtime = if i % 2 == 0 { a.clone() } else { b.clone() };
                    let rule = rule.clone();
                    tokio::spawn(
                        async move { runtime.acquire(&rule, "db").priority(priority).await },
                    )
                })
                .collect::<Vec<_>>()
        };
        let mut held: Vec<Permit> = Vec::new();
        for round in 0..10 {
            let before = held.len();
            for task in ask(before, Priority::Normal) {
                match task.await.unwrap() {
                    Ok(permit) => held.push(permit),
                    Err(refused) => {
                        assert_eq!(refused.decision().verdict, Verdict::Reserved, "{refused:?}")
                    }
                }
            }
            // Exactly the ceiling: a ninth below `Critical` would be held still; fewer would leave a permit
            // below the ceiling free while callers were refused.
            assert_eq!(held.len(), 8, "round {round}: {before} held before it");
            // The `Critical` caller, racing the 4 still without one: it finds a permit, they do not.
            let critical = ask(11, Priority::Critical).pop().unwrap();
            for task in ask(8, Priority::Normal) {
                let refused = task.await.unwrap().unwrap_err();
                assert_eq!(refused.decision().verdict, Verdict::Reserved, "{refused:?}");
            }
            let critical = critical.await.unwrap();
            let critical = critical.expect("a critical call finds a permit while 8 others run");
            // The store counts the 8 too: 1 left after the critical one.
            let decision = critical.decision();
            assert_eq!(
                (decision.limit, decision.remaining),
                (10, 1),
                "round {round}"
            );
            critical.settle(limiter_runtime::AsCharged).await;
            // Some given back, all at once; each round, a different number.
            let back: Vec<_> = held
                .drain(..1 + round % 8)
                .map(|permit| tokio::spawn(permit.settle(limiter_runtime::AsCharged)))
                .collect();
            for task in back {
                task.await.unwrap();
            }
        }
        for permit in held {
            permit.settle(limiter_runtime::AsCharged).await;
        }
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
            let decisions = a.all([(&tight, "k"), (&wide, "k")]).check().await;
            assert!(decisions.iter().all(|d| d.allowed));
        }
        let [refused, other] = a.all([(&tight, "k"), (&wide, "k")]).check().await;
        assert_eq!(refused.verdict, Verdict::Reserved);
        assert!(!refused.allowed);
        let _ = other;
        assert_eq!(
            a.inspect(&wide, "k").await.unwrap().used,
            8,
            "nothing charged"
        );
        let [tight_decision, wide_decision] = a
            .all([(&tight, "k"), (&wide, "k")])
            .check()
            .priority(Priority::Critical)
            .await;
        assert!(tight_decision.allowed && wide_decision.allowed);
        assert_eq!(a.inspect(&wide, "k").await.unwrap().used, 9);
    }
}

/// A refusal for a share kept above the call is not an offence: no block starts, and the critical calls still
/// find their share; a refusal of the full limit is, and blocks the key. On the fake clock, so that the
/// refusal's retry is exact.
#[tokio::test]
async fn a_refusal_for_a_reserve_is_not_an_offence() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let memory = Limiter::builder().clock(clock.clone()).build().unwrap();
    for a in [server.limiter_with_clock(&clock), memory] {
        let rule = Rule::new()
            .prefix("penalized:")
            .max(5)
            .window(Duration::from_secs(60))
            .reserve(Priority::Critical, 40)
            .penalty(Penalty::fixed(Duration::from_secs(60)));
        // Admitted at 0 s, 1 s and 2 s: the ceiling of 3 (5 less 40% of 5).
        let start = clock.now();
        for _ in 0..3 {
            assert!(a.check(&rule, "k").await.allowed);
            clock.advance(Duration::from_secs(1));
        }
        clock.advance(Duration::from_secs(7));
        for second in 10..13 {
            let decision = a.check(&rule, "k").await;
            assert_eq!(decision.verdict, Verdict::Reserved, "{decision:?}");
            // Its retry is its own priority's: when a unit leaves the window, the first admitted (at 0 s) leaving
            // it at 60 s (a sliding log counts an admission at s while s > now - 60 s).
            assert_eq!(
                decision.retry_after,
                Duration::from_secs(60 - second),
                "at {second} s: {decision:?}"
            );
            assert_eq!(clock.now() - start, Duration::from_secs(second));
            clock.advance(Duration::from_secs(1));
        }
        let inspected = a.inspect(&rule, "k").await.unwrap();
        assert_eq!(
            (inspected.blocked_for, inspected.offences),
            (Duration::ZERO, 0)
        );
        for _ in 0..2 {
            assert!(
                a.check(&rule, "k")
                    .priority(Priority::Critical)
                    .await
                    .allowed
            );
        }
        // Full: a refusal now is the limit's own, an offence.
        let decision = a.check(&rule, "k").priority(Priority::Critical).await;
        assert_eq!(decision.verdict, Verdict::Blocked, "{decision:?}");
        assert_eq!(a.inspect(&rule, "k").await.unwrap().offences, 1);
        // The clock is shared: the next limiter's calls come an hour later.
        clock.advance(Duration::from_secs(3_600));
    }
}

/// A call whose cost does not fit under its own ceiling at all, though it fits under `max` (cost 9, of a ceiling
/// of 8 and a `max` of 10), is refused as too large ([`Reason::TooLarge`]: no wait admits it, so no retry
/// time), and charged nothing; the same cost fits a `Critical` call's ceiling, all 10. Each algorithm, on Redis
/// and in memory.
#[tokio::test]
async fn a_cost_above_its_ceiling_but_within_max_is_too_large() {
    let server = RedisServer::start();
    for (a, _) in deployments(&server) {
        for algorithm in [
            Algorithm::SlidingLog,
            Algorithm::FixedWindow,
            Algorithm::SlidingWindow,
            Algorithm::TokenBucket,
        ] {
            let rule = Rule::new()
                .prefix(format!("large:{algorithm:?}:"))
                .algorithm(algorithm)
                .max(10)
                .window(Duration::from_secs(3_600))
                .reserve(Priority::Critical, 20);
            for priority in [Priority::Low, Priority::Normal, Priority::High] {
                let refused = a
                    .enforce(&rule, "k")
                    .cost(9)
                    .priority(priority)
                    .await
                    .unwrap_err();
                assert_eq!(
                    (refused.reason(), refused.retry_after(), refused.limit()),
                    (Reason::TooLarge, Duration::ZERO, 8),
                    "{algorithm:?} {priority}: {refused:?}"
                );
                let decision = a.check(&rule, "k").cost(9).priority(priority).await;
                assert!(!decision.allowed, "{algorithm:?} {priority}: {decision:?}");
                assert_eq!(decision.retry_after, Duration::ZERO, "{decision:?}");
            }
            assert_eq!(
                a.inspect(&rule, "k").await.unwrap().used,
                0,
                "{algorithm:?}"
            );
            // The ceiling itself fits, and so does 9 for a critical call on another key.
            let normal = a.enforce(&rule, "k").cost(8).await;
            assert_eq!(normal.unwrap().remaining, 0, "{algorithm:?}");
            let critical = a
                .enforce(&rule, "other")
                .cost(9)
                .priority(Priority::Critical)
                .await;
            assert_eq!(critical.unwrap().remaining, 1, "{algorithm:?}");
        }
    }
}

/// An inspection of a limit with a reserve reads the whole limit, whatever the algorithm: 8 normal calls and a
/// critical one used 9 of 10; the critical calls have 1 left, the others none (their ceiling, 8, is reached).
#[tokio::test]
async fn an_inspection_reads_the_whole_limit_and_each_priority_s_part() {
    let server = RedisServer::start();
    for (a, b) in deployments(&server) {
        for algorithm in [
            Algorithm::SlidingLog,
            Algorithm::FixedWindow,
            Algorithm::SlidingWindow,
            Algorithm::TokenBucket,
            Algorithm::InFlight,
        ] {
            let rule = Rule::new()
                .prefix(format!("inspected:{algorithm:?}:"))
                .algorithm(algorithm)
                .max(10)
                .window(Duration::from_secs(3_600))
                .reserve(Priority::Critical, 20);
            let mut held = Vec::new();
            for priority in [[Priority::Normal; 8].as_slice(), &[Priority::Critical]].concat() {
                let permit = a.acquire(&rule, "k").priority(priority).await;
                held.push(permit.unwrap_or_else(|refused| panic!("{algorithm:?}: {refused:?}")));
            }
            let inspected = b.inspect(&rule, "k").await.unwrap();
            let parts: Vec<_> = inspected
                .ceilings
                .iter()
                .map(|c| (c.priority, c.ceiling, c.remaining))
                .collect();
            assert_eq!(
                (inspected.used, inspected.remaining, parts),
                (
                    9,
                    1,
                    vec![
                        (Priority::Critical, 10, 1),
                        (Priority::High, 8, 0),
                        (Priority::Normal, 8, 0),
                        (Priority::Low, 8, 0),
                    ]
                ),
                "{algorithm:?}"
            );
            assert_eq!(b.usage(&rule, "k").await.unwrap().used, 9, "{algorithm:?}");
            for permit in held {
                permit.settle(limiter_runtime::AsCharged).await;
            }
        }
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
                .check(&rule, "k")
                .priority(Priority::Critical)
                .await
                .allowed
        );
    }
    assert!(
        !limiter
            .check(&rule, "k")
            .priority(Priority::Critical)
            .await
            .allowed
    );
}

/// With Redis unreachable and `on_error = local`, each of three live nodes decides with its share of the limit
/// and of each share kept, so that the proportions hold: `ceil(max / 3)` and `ceil(kept / 3)` (a node's share
/// of a reserve is its share of the reserve). Of 100 keeping 10% for `Critical` and 30% for `High`: each node
/// may fill `ceil(100 / 3)` = 34; `Normal` and `Low` calls must leave `ceil(30 / 3)` = 10 of it free, so fill
/// 24; `High` calls `ceil(10 / 3)` = 4, so fill 30; `Critical` calls all 34.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_of_three_nodes_keeps_its_share_of_each_reserve() {
    let mut server = RedisServer::start();
    // Counted by being there: none of them has decided anything yet.
    let nodes: Vec<Limiter> = (0..3)
        .map(|_| {
            server
                .builder()
                .deadline(Duration::from_millis(100))
                .on_error(OnError::Local)
                .heartbeat_every(Duration::from_millis(100))
                .build()
                .unwrap()
        })
        .collect();
    let started = std::time::Instant::now();
    while nodes.iter().any(|node| node.stats().instances != 3) {
        let seen: Vec<_> = nodes.iter().map(|node| node.stats().instances).collect();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "heartbeats: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill();
    let rule = Rule::new()
        .prefix("shares:")
        .max(100)
        .window(Duration::from_secs(3_600))
        .reserve(Priority::Critical, 10)
        .reserve(Priority::High, 30);
    for (n, node) in nodes.iter().enumerate() {
        // What each priority in turn is admitted, calling far past it; and each admission's (limit, remaining).
        let mut admitted = Vec::new();
        for (priority, ceiling) in [
            (Priority::Low, 24),
            (Priority::Normal, 24),
            (Priority::High, 30),
            (Priority::Critical, 34),
        ] {
            let mut count = 0;
            for _ in 0..40 {
                let decision = node.check(&rule, "k").priority(priority).await;
                assert_eq!(decision.verdict, Verdict::DegradedLocal, "{decision:?}");
                if decision.allowed {
                    count += 1;
                    assert_eq!(decision.limit, ceiling, "node {n} {priority}: {decision:?}");
                }
            }
            admitted.push(count);
        }
        assert_eq!(
            admitted,
            [24, 0, 6, 4],
            "node {n}: low, normal, high, critical"
        );
    }
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
        .policy("api")
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
    // A request that names no priority we know is normal (the layer's function parses the name, and takes
    // the default, `Normal`, for one it cannot): its ceiling of 8, whose last unit it takes (8 used)...
    let unknown = get("urgent").await;
    assert_eq!(unknown.status, 200, "{unknown:?}");
    let (policy, state) = fields::quota(&unknown);
    assert_eq!(
        (
            fields::member(&policy, "api").get("q"),
            fields::member(&state, "api").get("r")
        ),
        (8, 0),
        "{unknown:?}"
    );
    // ...so the next is refused for the critical share, as is one that names no priority at all, though 2 units
    // are left to a critical request.
    for headers in [
        &[("x-client", "acme"), ("x-priority", "urgent")][..],
        &[("x-client", "acme")],
    ] {
        let refused = request_with(address, "GET", "/hello", headers).await;
        assert_eq!(refused.status, 429, "{headers:?}: {refused:?}");
        let (policy, state) = fields::quota(&refused);
        assert_eq!(
            (
                fields::member(&policy, "api").get("q"),
                fields::member(&state, "api").get("r")
            ),
            (8, 0),
            "{headers:?}: {refused:?}"
        );
    }
    let critical = get("critical").await;
    assert_eq!(critical.status, 200, "{critical:?}");
    assert_eq!(
        fields::member(&fields::quota(&critical).1, "api").get("r"),
        1
    );
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
    a.set_override(Override::policy("overridden:").reserve(Priority::Critical, 50))
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
