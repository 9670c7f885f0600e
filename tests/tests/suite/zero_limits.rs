//! A limit of zero (`Rule::max(0)`, `Rule::in_flight(0)`, a token bucket's `Rule::burst(0)`) is the server's
//! mistake, as the attribute (a compile error) and `LIMITER_MAX=0` (refused at start) say: every verb refuses
//! each call of it as misconfigured ([`Reason::Misconfigured`], HTTP 500 without `Retry-After`, gRPC
//! `INTERNAL`), in memory and on Redis alike, before any store is asked, and charges nothing to the other
//! limits of the call; it is never decided, and its prefix is told once in the log.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use http::{header, StatusCode};
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{
    Algorithm, Error, FakeClock, Limiter, Override, RateLimited, Reason, Rule, Verdict,
};
use tests::logs::Captured;
use tests::{Monitor, RedisServer, ALGORITHMS};
use tracing::instrument::WithSubscriber;

/// A limit of zero: its rule, its prefix, and the fault its message names.
struct Zero {
    rule: Rule,
    prefix: String,
    fault: &'static str,
}

/// Every way of writing a limit of zero, each under its own prefix (after `prefix`): each algorithm's
/// `max(0)`, no permit in flight, a calendar quota of zero, and a token bucket of no burst.
fn zeros(prefix: &str) -> Vec<Zero> {
    let zero = |name: String, fault, rule: fn(Rule) -> Rule| Zero {
        rule: rule(Rule::new().prefix(name.clone())),
        prefix: name,
        fault,
    };
    let mut rules: Vec<Zero> = ALGORITHMS
        .into_iter()
        .map(|algorithm| Zero {
            rule: Rule::new()
                .prefix(format!("{prefix}{algorithm:?}:"))
                .algorithm(algorithm)
                .max(0)
                .window(Duration::from_secs(10)),
            prefix: format!("{prefix}{algorithm:?}:"),
            fault: "has a max of 0",
        })
        .collect();
    rules.push(zero(
        format!("{prefix}flight:"),
        "has an in_flight of 0",
        |r| r.in_flight(0),
    ));
    rules.push(zero(format!("{prefix}calendar:"), "has a max of 0", |r| {
        r.period(limiter_runtime::Period::Day).max(0)
    }));
    rules.push(zero(format!("{prefix}burst:"), "has a burst of 0", |r| {
        r.algorithm(Algorithm::TokenBucket).max(5).burst(0)
    }));
    rules
}

/// A limit that admits plenty, beside a limit of zero in one call.
fn beside(prefix: &str) -> Rule {
    Rule::new()
        .prefix(format!("{prefix}beside:"))
        .policy("beside")
        .max(100)
        .window(Duration::from_secs(60))
}

/// Checks that `refused` is the refusal of the misconfigured limit `zero`: no time to retry after, a message
/// naming its policy and its fault, and its answer as HTTP and gRPC.
fn assert_misconfigured(refused: &RateLimited, zero: &Zero, what: &str) {
    let fault = zero.fault;
    assert_eq!(
        refused.reason(),
        Reason::Misconfigured,
        "{what}: {refused:?}"
    );
    assert_eq!(refused.retry_after(), Duration::ZERO, "{what}");
    assert_eq!(refused.decision().verdict, Verdict::Misconfigured, "{what}");
    assert_eq!(refused.prefix(), zero.prefix, "{what}");
    let named = format!("the limit `{}` {fault}: a limit", refused.policy());
    let bucket = format!("the limit `{}` {fault}: a token bucket", refused.policy());
    let message = refused.message();
    assert!(
        message.starts_with(&named) || message.starts_with(&bucket),
        "{what}: {message}"
    );
    assert!(message.ends_with(" 0 too)"), "{what}: {message}");
    // As HTTP: 500, no Retry-After, no quota fields; the body is the message.
    let response = refused.clone().into_response();
    assert_eq!(
        response.status(),
        StatusCode::INTERNAL_SERVER_ERROR,
        "{what}"
    );
    let headers = response.headers();
    assert!(headers.get(header::RETRY_AFTER).is_none(), "{what}");
    assert!(headers.get("ratelimit-policy").is_none(), "{what}");
    assert_eq!(refused.text(), format!("{message}."), "{what}");
    // As gRPC: INTERNAL, and do not retry.
    #[cfg(feature = "tonic")]
    {
        let status = tonic::Status::from(refused.clone());
        assert_eq!(status.code(), tonic::Code::Internal, "{what}");
        assert_eq!(status.message(), message, "{what}");
        let pushback = status.metadata().get("grpc-retry-pushback-ms");
        assert_eq!(pushback.map(|v| v.to_str().unwrap()), Some("-1"), "{what}");
        assert!(status.metadata().get("retry-after").is_none(), "{what}");
    }
}

/// Every verb refuses each limit of zero as misconfigured: `check` (any cost) answers a refusal with the
/// verdict, `enforce`, a resolved `Limit`, `acquire`, `estimate` and `turn` return the refusal (a turn at
/// once, not at the end of its patience), and a list of it and a limit that admits is refused too, its
/// other limit skipped and charged nothing.
async fn every_verb_refuses(limiter: &Limiter, prefix: &str) {
    let other = beside(prefix);
    for zero in zeros(prefix) {
        let rule = &zero.rule;
        let what = zero.prefix.clone();
        for cost in [0, 1, 5] {
            let decision = limiter.check(rule, "k").cost(cost).await;
            assert!(!decision.allowed, "{what}, cost {cost}: {decision:?}");
            assert_eq!(decision.verdict, Verdict::Misconfigured, "{what}");
            assert_eq!(decision.retry_after, Duration::ZERO, "{what}, cost {cost}");
            assert!(!decision.degraded, "{what}");
        }
        let refused = limiter.enforce(rule, "k").await.unwrap_err();
        assert_misconfigured(&refused, &zero, &what);
        let refused = limiter
            .resolve(rule)
            .enforce("k")
            .cost(0)
            .await
            .unwrap_err();
        assert_misconfigured(&refused, &zero, &what);
        let decision = limiter.resolve(rule).check("k").await;
        assert_eq!(decision.verdict, Verdict::Misconfigured, "{what}");
        let refused = limiter.acquire(rule, "k").await.unwrap_err();
        assert_misconfigured(&refused, &zero, &what);
        let refused = limiter.estimate(rule, "k").cost(1).await.unwrap_err();
        assert_misconfigured(&refused, &zero, &what);
        let started = Instant::now();
        let refused = limiter.turn(rule, "k").await.unwrap_err();
        assert_misconfigured(&refused, &zero, &what);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{what}: a turn that never comes is refused at once, not after {:?}",
            started.elapsed()
        );

        // An operator's read of it reads nothing, and says why, naming its prefix (never a panic).
        for error in [
            limiter.inspect(rule, "k").await.unwrap_err(),
            limiter.usage(rule, "k").await.unwrap_err(),
        ] {
            assert!(
                matches!(error, Error::Misconfigured(_)),
                "{what}: {error:?}"
            );
            let said = format!("the limit `{}` {}", zero.prefix, zero.fault);
            assert!(error.to_string().starts_with(&said), "{what}: {error}");
        }

        // In a list, before or after a limit that would admit: refused, and the other is not asked.
        let [first, second] = limiter.all([(&other, "k"), (rule, "k")]).check().await;
        assert_eq!(
            (first.allowed, first.verdict),
            (true, Verdict::Skipped),
            "{what}"
        );
        assert_eq!(
            (second.allowed, second.verdict),
            (false, Verdict::Misconfigured),
            "{what}"
        );
        let refused = limiter
            .all([(rule, "k"), (&other, "k")])
            .enforce()
            .await
            .unwrap_err();
        assert_misconfigured(&refused, &zero, &what);
        let states: Vec<Verdict> = refused.limits().map(|(_, d)| d.verdict).collect();
        assert_eq!(states, [Verdict::Misconfigured, Verdict::Skipped], "{what}");
        let refused = limiter
            .all([(&other, "k"), (rule, "k")])
            .acquire()
            .await
            .unwrap_err();
        assert_eq!(refused.reason(), Reason::Misconfigured, "{what}");
        let refused = limiter
            .all([(&other, "k"), (rule, "k")])
            .turn()
            .await
            .unwrap_err();
        assert_eq!(refused.reason(), Reason::Misconfigured, "{what}");
    }
    // The limit beside was never charged by any of those calls.
    let probe = limiter.check(&other, "k").cost(0).await;
    assert_eq!(probe.remaining, 100, "{probe:?}");
}

#[tokio::test]
async fn every_verb_refuses_a_limit_of_zero_as_misconfigured_in_memory() {
    every_verb_refuses(&Limiter::in_memory(), "zero:").await;
}

/// On Redis: the same refusals, and not one command reaches Redis for them (`MONITOR` shows none), so
/// nothing is counted there either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_refuses_a_limit_of_zero_as_misconfigured_on_redis_without_asking_it() {
    let server = RedisServer::start();
    let monitor = Monitor::start(server.port());
    let warm = beside("warm:");
    let limiter = tests::quiet_limiter(&server, &monitor, &warm).await;
    monitor.take();
    every_verb_refuses(&limiter, "zero:").await;
    // The last probe of the limit beside (cost 0) is the only command: one script call.
    assert_eq!(monitor.take(), ["EVALSHA"]);
    let keys = server.limit_keys();
    assert!(keys.iter().all(|key| !key.starts_with("zero:")), "{keys:?}");
}

/// The misconfiguration is told once per prefix, at error level, in the sentence its refusals say with the
/// prefix for the policy; a call of another misconfigured prefix is told once too.
#[tokio::test]
async fn a_misconfigured_limit_is_told_once_per_prefix() {
    let logs = Captured::default();
    async {
        let limiter = Limiter::in_memory();
        let zero = Rule::new().prefix("told:zero:").max(0);
        let flight = Rule::new().prefix("told:flight:").in_flight(0);
        for _ in 0..5 {
            limiter.check(&zero, "a").await;
            limiter.check(&zero, "b").await;
            let _ = limiter.acquire(&flight, "c").await;
        }
    }
    .with_subscriber(logs.subscriber())
    .await;
    let text = logs.text();
    let zero = "the limit `told:zero:` has a max of 0: a limit admits at least one call (the attribute and \
                LIMITER_MAX refuse 0 too)";
    assert_eq!(text.matches(zero).count(), 1, "{text}");
    let flight = "the limit `told:flight:` has an in_flight of 0";
    assert_eq!(text.matches(flight).count(), 1, "{text}");
    let told = text.lines().find(|line| line.contains(zero)).unwrap();
    assert!(told.contains("ERROR"), "{told}");
}

/// A shadow limit of zero never refuses (a shadow limit only reports): its verdict says it is
/// misconfigured, and the limit beside it decides and counts the call as ever. Switched off, a limit of zero
/// lets every call through, as every limit does. An override of `max` 0 is still refused; one of 1 on its
/// prefix makes it a limit again.
#[tokio::test]
async fn a_shadow_limit_of_zero_reports_and_the_switch_and_overrides_apply() {
    let limiter = Limiter::in_memory();
    let shadow = Rule::new().prefix("shadow:zero:").max(0).shadow(true);
    let other = beside("shadow:");
    let [zero, counted] = limiter.all([(&shadow, "k"), (&other, "k")]).check().await;
    assert_eq!(
        (zero.allowed, zero.verdict),
        (false, Verdict::Misconfigured)
    );
    assert_eq!((counted.allowed, counted.remaining), (true, 99));
    assert!(limiter
        .all([(&shadow, "k"), (&other, "k")])
        .enforce()
        .await
        .is_ok());

    let rule = Rule::new().prefix("off:zero:").max(0);
    limiter.set_enabled_here(false);
    let off = limiter.check(&rule, "k").await;
    assert_eq!((off.allowed, off.verdict), (true, Verdict::SwitchedOff));
    limiter.set_enabled_here(true);

    let error = limiter
        .set_override(Override::policy("off:zero:").max(0))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::InvalidOverride { .. }), "{error:?}");
    limiter
        .set_override(Override::policy("off:zero:").max(1))
        .await
        .unwrap();
    assert_eq!(limiter.check(&rule, "k").await.verdict, Verdict::Admitted);
    assert_eq!(limiter.check(&rule, "k").await.verdict, Verdict::Limited);
}

/// An annotated function that leaves `max` to the limiter's defaults.
#[limiter_runtime::rate_limit(prefix = "attribute:zero:", policy = "defaulted", key = id)]
async fn defaulted(id: &str) -> Result<(), RateLimited> {
    let _ = id;
    Ok(())
}

/// The attribute refuses `max = 0`, but a crate-wide default of zero (`LimiterBuilder::max(0)`) reaches an
/// annotated function that leaves `max` out: its body never runs, each call refused as misconfigured.
#[tokio::test]
async fn an_annotated_function_under_a_default_of_zero_is_refused_as_misconfigured() {
    let limiter = Limiter::builder().max(0).build().unwrap();
    for _ in 0..3 {
        let refused = limiter.scope(defaulted("k")).await.unwrap_err();
        assert_eq!(refused.reason(), Reason::Misconfigured, "{refused:?}");
        assert_eq!(
            refused.message(),
            "the limit `defaulted` has a max of 0: a limit admits at least one call (the attribute and \
             LIMITER_MAX refuse 0 too)"
        );
    }
}

async fn hello() -> &'static str {
    "hello"
}

/// Behind the tower layer, a rule of zero beside one that admits refuses every request with a 500 whose
/// plain-text body names its policy (a gRPC request: `INTERNAL`), with no `Retry-After` and no quota fields
/// of a limit that was not asked; the rule beside is charged nothing.
#[tokio::test]
async fn the_layer_answers_a_limit_of_zero_with_a_500() {
    let limiter = Limiter::in_memory();
    let zero = Rule::new().prefix("layer:zero:").policy("zero").max(0);
    let other = beside("layer:");
    let app = Router::new()
        .route("/hello", get(hello))
        .layer(RateLimitLayer::new(
            &limiter,
            [other.clone(), zero],
            Key::peer_ip(),
        ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let accept = [("accept", "application/problem+json, text/plain;q=0.5")];
    for headers in [&[][..], &accept[..]] {
        let refused = tests::http::request_with(address, "GET", "/hello", headers).await;
        assert_eq!(refused.status, 500, "{refused:?}");
        assert_eq!(
            refused.header("content-type"),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(
            refused.body,
            "the limit `zero` has a max of 0: a limit admits at least one call (the attribute and \
             LIMITER_MAX refuse 0 too)."
        );
        assert!(refused.header("retry-after").is_none(), "{refused:?}");
        assert!(refused.header("ratelimit").is_none(), "{refused:?}");
    }
    let grpc = [("content-type", "application/grpc")];
    let refused = tests::http::request_with(address, "POST", "/hello", &grpc).await;
    assert_eq!(refused.header("grpc-status"), Some("13"), "{refused:?}");
    assert_eq!(refused.header("grpc-retry-pushback-ms"), Some("-1"));
    let probe = limiter.check(&other, "127.0.0.1").cost(0).await;
    assert_eq!(probe.remaining, 100, "{probe:?}");
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
