//! Plans per tenant ([`Plan`]): a call names its plan and is limited by the plan's values, in the same script
//! call as any other; a key's override wins over its plan, a pattern's over its policy's; a refusal, its quota
//! fields (read with a Structured Fields parser) and the metrics say which plan or override applied. On real
//! Redis from two runtimes, and in memory; through the plain API, the attribute (a policy the builder
//! defines, `plan = tenant.plan`) and the tower layer.

use crate::fields;

use std::net::SocketAddr;
use std::time::Duration;

use axum::routing::get;
use axum::Router;
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{
    rate_limit, Algorithm, Limiter, Override, Penalty, Plan, Priority, RateLimited, Rule, Verdict,
};
use tests::http::request_with;
use tests::RedisServer;

/// A policy of 3 a minute; 6 for `pro`, 10 for `enterprise` (2 of them kept for critical calls).
fn search(prefix: &str) -> Rule {
    Rule::new()
        .prefix(prefix.to_owned())
        .policy("search")
        .max(3)
        .window(Duration::from_secs(60))
        .plan("pro", Plan::new().max(6))
        .plan(
            "enterprise",
            Plan::new().max(10).reserve(Priority::Critical, 20),
        )
}

/// Counts how many of `calls` calls of `key` on `plan` are admitted.
async fn admitted(
    limiter: &Limiter,
    rule: &Rule,
    key: &str,
    plan: Option<&str>,
    calls: u32,
) -> u32 {
    let mut admitted = 0;
    for _ in 0..calls {
        let request = limiter.check(rule, key);
        let decision = match plan {
            Some(plan) => request.plan(plan).await,
            None => request.await,
        };
        admitted += u32::from(decision.allowed);
    }
    admitted
}

/// Each plan's `max` is the one a call on it meets, exactly, and a plan's reserve keeps its share; a call on no
/// plan, or on one the policy lacks, meets the policy's own. Two runtimes share one count per key on Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_plan_limits_its_calls_by_its_own_values() {
    let server = RedisServer::start();
    let memory = Limiter::in_memory();
    for (i, (a, b)) in [
        (server.limiter(), server.limiter()),
        (memory.clone(), memory),
    ]
    .iter()
    .enumerate()
    {
        let rule = search(&format!("plans:{i}:"));
        assert_eq!(admitted(a, &rule, "free", None, 5).await, 3);
        assert_eq!(admitted(a, &rule, "pro", Some("pro"), 4).await, 4);
        assert_eq!(
            admitted(b, &rule, "pro", Some("pro"), 4).await,
            2,
            "6 in all, on two nodes"
        );
        assert_eq!(
            admitted(a, &rule, "gold", Some("gold"), 5).await,
            3,
            "no such plan: the policy's"
        );
        // Enterprise: 8 for normal calls, the last 2 kept for critical ones.
        assert_eq!(admitted(b, &rule, "big", Some("enterprise"), 10).await, 8);
        let critical = a
            .check(&rule, "big")
            .plan("enterprise")
            .priority(Priority::Critical)
            .await;
        assert!(critical.allowed);
        assert_eq!((critical.limit, critical.remaining), (10, 1));
        // A tenant that moves to another plan keeps what it spent: 6 spent of pro's 6, 3 of free's.
        assert_eq!(admitted(a, &rule, "pro", None, 1).await, 0);
        assert_eq!(admitted(a, &rule, "free", Some("pro"), 5).await, 3);
    }
}

/// A plan's window, burst and penalty are its own: a token bucket on `pro` holds 5, not 2; a refusal on `strict`
/// blocks the key, on the policy's own plan it does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plan_sets_the_window_the_burst_and_the_penalty() {
    let server = RedisServer::start();
    for (i, limiter) in [server.limiter(), Limiter::in_memory()].iter().enumerate() {
        let bucket = Rule::new()
            .prefix(format!("burst:{i}:"))
            .algorithm(Algorithm::TokenBucket)
            .max(2)
            .window(Duration::from_secs(3_600))
            .plan("pro", Plan::new().burst(5).window(Duration::from_secs(60)));
        assert_eq!(admitted(limiter, &bucket, "a", None, 6).await, 2);
        assert_eq!(admitted(limiter, &bucket, "b", Some("pro"), 6).await, 5);
        let pro = limiter.check(&bucket, "b").plan("pro").await;
        assert_eq!(pro.window, Duration::from_secs(60));
        let strict = Rule::new().prefix(format!("penalty:{i}:")).max(1).plan(
            "strict",
            Plan::new().penalty(Penalty::fixed(Duration::from_secs(600))),
        );
        for key in ["lenient", "strict"] {
            let plan = (key == "strict").then_some("strict");
            assert_eq!(admitted(limiter, &strict, key, plan, 2).await, 1);
        }
        let lenient = limiter.check(&strict, "lenient").await;
        let blocked = limiter.check(&strict, "strict").plan("strict").await;
        assert_eq!(lenient.verdict, Verdict::Limited);
        assert_eq!(blocked.verdict, Verdict::Blocked, "{blocked:?}");
    }
}

/// A key's own override wins over its plan; a pattern's over the plan and the policy's; the longest pattern
/// over a shorter one. Set on one runtime, each reaches the other through Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overrides_of_keys_and_patterns_win_over_plans() {
    let server = RedisServer::start();
    let (a, b) = (server.limiter(), server.limiter());
    let rule = search("patterns:");
    a.set_override(Override::pattern("patterns:", "acme*").max(4))
        .await
        .unwrap();
    a.set_override(Override::pattern("patterns:", "acme-eu*").max(5))
        .await
        .unwrap();
    a.set_override(Override::key("patterns:", "acme-eu-1").max(1))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        while b.overrides().len() < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the overrides reach the other runtime");
    assert_eq!(admitted(&b, &rule, "acme-us", Some("pro"), 7).await, 4);
    assert_eq!(admitted(&b, &rule, "acme-eu-2", Some("pro"), 7).await, 5);
    assert_eq!(admitted(&b, &rule, "acme-eu-1", Some("pro"), 7).await, 1);
    assert_eq!(admitted(&b, &rule, "initech", Some("pro"), 7).await, 6);
    // A pattern without its `*`, or with one inside, is refused.
    for bad in ["acme", "ac*me*"] {
        let error = a
            .set_override(Override::pattern("patterns:", bad).max(1))
            .await
            .unwrap_err();
        assert!(error.to_string().contains("one `*`"), "{error}");
    }
    // Cleared, the pattern's keys are on their plans again.
    a.clear_override(&Override::pattern("patterns:", "acme*"))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), async {
        while b.overrides().len() > 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the clear reaches the other runtime");
    assert_eq!(admitted(&b, &rule, "acme-us-2", Some("pro"), 7).await, 6);
}

/// A refusal names its policy and plan, or says an override set the limit.
#[tokio::test]
async fn a_refusal_names_the_plan_or_the_override() {
    let server = RedisServer::start();
    for limiter in [server.limiter(), Limiter::in_memory()] {
        let rule = search("named:");
        limiter.enforce(&rule, "t").plan("pro").await.unwrap();
        for _ in 0..5 {
            let _ = limiter.enforce(&rule, "t").plan("pro").await;
        }
        let refused = limiter.enforce(&rule, "t").plan("pro").await.unwrap_err();
        assert_eq!((refused.policy(), refused.plan()), ("search", Some("pro")));
        assert!(!refused.overridden());
        limiter
            .set_override(Override::key("named:", "o").max(1))
            .await
            .unwrap();
        limiter.enforce(&rule, "o").await.unwrap();
        let refused = limiter.enforce(&rule, "o").await.unwrap_err();
        assert_eq!(refused.plan(), None);
        assert!(refused.overridden());
        assert_eq!(refused.decision().limit, 1);
    }
}

struct Tenant {
    id: u64,
    plan: String,
}

#[rate_limit(policy = "reports", key = tenant.id, plan = tenant.plan)]
async fn report(tenant: &Tenant) -> Result<u64, RateLimited> {
    Ok(tenant.id)
}

/// The attribute names a policy the builder defines, and each call's plan from its arguments: the policy's
/// values and plans apply, counted under a prefix of the policy's own.
#[tokio::test]
async fn the_attribute_takes_its_policy_and_each_calls_plan() {
    let server = RedisServer::start();
    let limiter = server
        .builder()
        .policy(
            "reports",
            Rule::new()
                .max(2)
                .window(Duration::from_secs(60))
                .plan("pro", Plan::new().max(4)),
        )
        .build()
        .unwrap();
    limiter
        .scope(async {
            let free = Tenant {
                id: 1,
                plan: "free".into(),
            };
            let pro = Tenant {
                id: 2,
                plan: "pro".into(),
            };
            let mut admitted = [0, 0];
            for _ in 0..6 {
                admitted[0] += u32::from(report(&free).await.is_ok());
                admitted[1] += u32::from(report(&pro).await.is_ok());
            }
            assert_eq!(admitted, [2, 4]);
            let refused = report(&pro).await.unwrap_err();
            assert_eq!((refused.policy(), refused.plan()), ("reports", Some("pro")));
            assert_eq!(refused.prefix(), "rate_limit:reports:");
        })
        .await;
}

async fn hello() -> &'static str {
    "hello"
}

/// The tower layer names each request's plan from a header; the quota fields name the plan (`plan="pro"`) and
/// the limit it set, and an override (`override`).
#[tokio::test]
async fn the_layer_names_the_plan_in_the_quota_fields() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new()
        .prefix("layer:")
        .policy("api")
        .max(2)
        .window(Duration::from_secs(60))
        .plan("pro", Plan::new().max(5));
    let layer = RateLimitLayer::new(&limiter, [rule], Key::header("x-client")).plan(|request| {
        let plan = request.headers.get("x-plan")?;
        plan.to_str().ok().map(str::to_owned)
    });
    let app = Router::new().route("/hello", get(hello)).layer(layer);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let get = |client: &'static str, plan: &'static str| async move {
        let headers = [("x-client", client), ("x-plan", plan)];
        request_with(address, "GET", "/hello", &headers).await
    };
    let pro = get("acme", "pro").await;
    assert_eq!(pro.status, 200);
    let (policy, state) = fields::quota(&pro);
    let (policy, state) = (
        fields::member(&policy, "api"),
        fields::member(&state, "api"),
    );
    assert_eq!((policy.get("q"), state.get("r")), (5, 4), "{pro:?}");
    assert_eq!(policy.texts.get("plan").map(String::as_str), Some("pro"));
    assert!(!policy.params.contains_key("override"));
    let free = get("initech", "").await;
    let (policy, _) = fields::quota(&free);
    let policy = fields::member(&policy, "api");
    assert_eq!(
        (policy.get("q"), policy.texts.get("plan")),
        (2, None),
        "{free:?}"
    );
    limiter
        .set_override(Override::key("layer:", "acme").max(3))
        .await
        .unwrap();
    let overridden = get("acme", "pro").await;
    let (policy, state) = fields::quota(&overridden);
    let (policy, state) = (
        fields::member(&policy, "api"),
        fields::member(&state, "api"),
    );
    assert_eq!((policy.get("q"), state.get("r")), (3, 1), "{overridden:?}");
    assert_eq!(policy.get("override"), 1);
    assert_eq!(policy.texts.get("plan").map(String::as_str), Some("pro"));
}
