//! The `metrics` feature: decisions counted by limit (prefix) and outcome, Redis latency recorded, batch sizes
//! and lease units reported, and no label ever carries a user's key. Built with the tests crate's `metrics` feature (`scripts/test` runs the
//! suite once more with every feature).
#![cfg(feature = "metrics")]

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use limiter_runtime::{rate_limit, Limiter, OnError, Priority, RateLimited, Rule};
use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use tests::RedisServer;

/// Every counter's total, every gauge's value, and every histogram's count (and its largest value, under
/// `<name>#max`), by metric name and labels.
#[derive(Debug, Default, Clone)]
struct Recorded(Arc<Mutex<BTreeMap<String, u64>>>);

struct Handle(Recorded, String);

impl CounterFn for Handle {
    fn increment(&self, value: u64) {
        *self.0 .0.lock().unwrap().entry(self.1.clone()).or_default() += value;
    }
    fn absolute(&self, value: u64) {
        self.0 .0.lock().unwrap().insert(self.1.clone(), value);
    }
}

impl HistogramFn for Handle {
    fn record(&self, value: f64) {
        let mut recorded = self.0 .0.lock().unwrap();
        *recorded.entry(self.1.clone()).or_default() += 1;
        let max = recorded.entry(format!("{}#max", self.1)).or_default();
        *max = (*max).max(value as u64);
    }
}

impl GaugeFn for Handle {
    fn increment(&self, _: f64) {}
    fn decrement(&self, _: f64) {}
    fn set(&self, value: f64) {
        self.0
             .0
            .lock()
            .unwrap()
            .insert(self.1.clone(), value as u64);
    }
}

fn name(key: &Key) -> String {
    let labels: Vec<String> = key
        .labels()
        .map(|l| format!("{}={}", l.key(), l.value()))
        .collect();
    format!("{}{{{}}}", key.name(), labels.join(","))
}

impl Recorder for Recorded {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Handle(self.clone(), name(key))))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(Handle(self.clone(), name(key))))
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(Handle(self.clone(), name(key))))
    }
}

#[rate_limit(key = user, max = 2, prefix = "api:", shadow = false)]
async fn call(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 1, prefix = "trial:", shadow = true)]
async fn trial(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 1, prefix = "login:", penalty = "10m")]
async fn login(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 1, prefix = "staff:", skip_if = user.starts_with("admin"))]
#[rate_limit(key = user, max = 10, prefix = "everyone:")]
async fn staff(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[test]
fn decisions_are_counted_by_prefix_and_outcome_never_by_key() {
    let recorded = Recorded::default();
    let mut server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorded, || {
        runtime.block_on(async {
            let limiter = Limiter::builder()
                .redis(server.url())
                .on_error(OnError::Open)
                .deadline(Duration::from_secs(5))
                .build()
                .unwrap();
            limiter
                .scope(async {
                    for user in ["alice", "bob"] {
                        for _ in 0..3 {
                            let _ = call(user).await;
                        }
                    }
                    for _ in 0..3 {
                        trial("carol").await.unwrap();
                    }
                    for _ in 0..2 {
                        staff("admin-erin").await.unwrap();
                    }
                    // Admitted, then the offence and a refusal during the block: both blocked.
                    for _ in 0..3 {
                        let _ = login("mallory").await;
                    }
                })
                .await;
            // A limit that keeps half for critical calls: a normal call admitted, one refused for the share,
            // a critical one admitted.
            let tiered = Rule::new()
                .prefix("tiered:")
                .max(2)
                .reserve(Priority::Critical, 50);
            for priority in [Priority::Normal, Priority::Normal, Priority::Critical] {
                limiter.check(&tiered, "x").priority(priority).await;
            }
            server.kill();
            limiter.check(&Rule::new().prefix("api:"), "dave").await;
        })
    });
    let recorded = recorded.0.lock().unwrap().clone();
    let get = |key: &str| recorded.get(key).copied().unwrap_or(0);
    assert_eq!(
        get("limiter_decisions_total{prefix=api:,outcome=allowed,reason=admitted}"),
        4,
        "{recorded:#?}"
    );
    assert_eq!(
        get("limiter_decisions_total{prefix=api:,outcome=limited,reason=limited}"),
        2,
        "{recorded:#?}"
    );
    assert_eq!(
        get("limiter_decisions_total{prefix=api:,outcome=degraded,reason=degraded_open}"),
        1,
        "{recorded:#?}"
    );
    // A refusal for a share kept for the higher priorities is named so; and those limits count by priority.
    assert_eq!(
        get("limiter_decisions_total{prefix=tiered:,outcome=limited,reason=reserved}"),
        1,
        "{recorded:#?}"
    );
    for (priority, reason) in [
        ("normal", "admitted"),
        ("normal", "reserved"),
        ("critical", "admitted"),
    ] {
        let key = format!("limiter_priority_decisions_total{{prefix=tiered:,priority={priority},reason={reason}}}");
        assert_eq!(get(&key), 1, "{key}: {recorded:#?}");
    }
    assert_eq!(
        get("limiter_priority_decisions_total{prefix=api:,priority=normal,reason=admitted}"),
        0,
        "a limit without reserves counts by priority nothing"
    );
    // A key blocked by its penalty is named so.
    assert_eq!(
        get("limiter_decisions_total{prefix=login:,outcome=limited,reason=blocked}"),
        2,
        "{recorded:#?}"
    );
    // A limit a call skips (beside one it does not) is named so.
    assert_eq!(
        get("limiter_decisions_total{prefix=staff:,outcome=allowed,reason=skipped}"),
        2,
        "{recorded:#?}"
    );
    // The shadow limit's refusals, which let the calls through, are named for it.
    assert_eq!(
        get("limiter_decisions_total{prefix=trial:,outcome=limited,reason=shadow}"),
        2,
        "{recorded:#?}"
    );
    assert_eq!(
        get("limiter_shadow_rejections_total{prefix=trial:}"),
        2,
        "{recorded:#?}"
    );
    assert_eq!(
        get("limiter_redis_duration_seconds{prefix=api:}"),
        7,
        "every Redis decision timed: {recorded:#?}"
    );
    for key in recorded.keys() {
        for user in ["alice", "bob", "carol", "dave"] {
            assert!(!key.contains(user), "a user's key in a label: {key}");
        }
    }
}

#[test]
fn batch_sizes_and_lease_units_are_reported() {
    let recorded = Recorded::default();
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorded, || {
        runtime.block_on(async {
            let limiter = server.limiter();
            // Calls on one key at once: the first four go at once (four script calls of a line in flight at
            // most), the other twelve wait for a round trip and go together.
            let hot = Rule::new().prefix("hot:").max(1_000);
            let calls = (0..16).map(|_| limiter.check(&hot, "k").into_future());
            futures::future::join_all(calls).await;
            // A lease of 100, of which 10 are spent: 90 held, reported by the sweep.
            let leased = Rule::new()
                .prefix("leased:")
                .algorithm(limiter_runtime::Algorithm::TokenBucket)
                .max(1_000)
                .lease(100)
                .lease_ttl(Duration::from_secs(30));
            for _ in 0..10 {
                assert!(limiter.check(&leased, "k").await.allowed);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        })
    });
    let recorded = recorded.0.lock().unwrap().clone();
    let get = |key: &str| recorded.get(key).copied().unwrap_or(0);
    assert_eq!(get("limiter_redis_batch_calls{}"), 5, "{recorded:#?}");
    assert_eq!(get("limiter_redis_batch_calls{}#max"), 12, "{recorded:#?}");
    assert_eq!(
        get("limiter_lease_units_taken_total{}"),
        100,
        "{recorded:#?}"
    );
    assert_eq!(get("limiter_lease_units{}"), 90, "{recorded:#?}");
}

/// Requests a tower layer's key finds nothing in are counted by what became of them: counted under the peer's
/// address, under the fallback key, or let through.
#[test]
fn requests_a_layers_key_finds_nothing_in_are_counted() {
    use axum::routing::get;
    use limiter_runtime::tower::{Key, RateLimitLayer};
    use tower_service::Service;

    let recorded = Recorded::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorded, || {
        runtime.block_on(async {
            let limiter = Limiter::in_memory();
            let rule = |name: &'static str| Rule::new().prefix(format!("{name}:")).policy(name);
            let layers = [
                RateLimitLayer::new(&limiter, [rule("peer")], Key::x_forwarded_for(1)),
                RateLimitLayer::new(&limiter, [rule("shared")], Key::x_forwarded_for(1))
                    .fallback("unidentified"),
                RateLimitLayer::new(&limiter, [rule("passing")], Key::x_forwarded_for(1))
                    .pass_unidentified(),
            ];
            for layer in layers {
                let mut app = axum::Router::new()
                    .route("/", get(|| async { "hi" }))
                    .layer(layer);
                for forwarded in [None, Some("garbage"), Some("203.0.113.7")] {
                    let mut request = http::Request::builder().uri("/");
                    if let Some(forwarded) = forwarded {
                        request = request.header("x-forwarded-for", forwarded);
                    }
                    let mut request = request.body(axum::body::Body::empty()).unwrap();
                    request
                        .extensions_mut()
                        .insert("192.0.2.1:4000".parse::<std::net::SocketAddr>().unwrap());
                    let response = app.call(request).await.unwrap();
                    assert_eq!(response.status(), 200);
                }
            }
        })
    });
    let recorded = recorded.0.lock().unwrap().clone();
    let get = |key: &str| recorded.get(key).copied().unwrap_or(0);
    for (policy, outcome) in [
        ("peer", "peer"),
        ("shared", "fallback"),
        ("passing", "passed"),
    ] {
        assert_eq!(
            get(&format!(
                "limiter_unidentified_requests_total{{policy={policy},outcome={outcome}}}"
            )),
            2,
            "{recorded:#?}"
        );
    }
}

/// An upstream's refusals a turn was told of are counted by prefix and status: a 429 and a 503, not a 200.
#[test]
fn upstream_refusals_are_counted_by_prefix_and_status() {
    let recorded = Recorded::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    metrics::with_local_recorder(&recorded, || {
        runtime.block_on(async {
            let limiter = Limiter::in_memory();
            let rule = Rule::new()
                .prefix("partner:")
                .algorithm(limiter_runtime::Algorithm::LeakyBucket)
                .max(1_000)
                .max_wait(Duration::from_secs(1));
            for (key, status) in [("a", 429), ("b", 503), ("c", 200), ("d", 429)] {
                let turn = limiter.turn(&rule, key).await.unwrap();
                turn.answered(status, [("retry-after", "1")]).await.unwrap();
            }
        })
    });
    let recorded = recorded.0.lock().unwrap().clone();
    let get = |key: &str| recorded.get(key).copied().unwrap_or(0);
    let refusals =
        |status| format!("limiter_upstream_refusals_total{{prefix=partner:,status={status}}}");
    assert_eq!(get(&refusals(429)), 2, "{recorded:#?}");
    assert_eq!(get(&refusals(503)), 1, "{recorded:#?}");
    assert_eq!(get(&refusals(200)), 0, "{recorded:#?}");
}
