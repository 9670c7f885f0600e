//! Every way TLS or ACL auth to Redis can be wrong is an error of `Limiter::ready` at start-up naming the
//! cause, then a degraded decision (by `on_error`) with one warn-level log naming it, and never a wait past
//! the deadline: a CA that did not sign the server's certificate,
//! no CA (the system's roots do not know the test's), a wrong password, a client certificate missing where
//! the server asks for one, a TLS port spoken to in the clear, and a plain Redis spoken to with `rediss://`
//! (it never answers the handshake: the cause is the deadline). A cluster's and Sentinel's failures are named
//! as well.

use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, LimiterBuilder, OnError, Reason, Rule};
use test_support::tls::{Tls, PASSWORD};
use tests::logs::Captured;
use tests::{RedisCluster, RedisSentinel, RedisServer};
use tracing::instrument::WithSubscriber;

/// Long enough for a TLS handshake in a debug build on a busy machine, so that a failure is known before the
/// first call's deadline.
const DEADLINE: Duration = Duration::from_secs(1);
/// What a call may take beyond its deadline on a busy machine.
const SLACK: Duration = Duration::from_millis(500);

fn quick(builder: LimiterBuilder, on_error: OnError) -> Limiter {
    builder
        .deadline(DEADLINE)
        .on_error(on_error)
        .build()
        .unwrap()
}

/// Checks `limiter` at start-up: `ready` fails naming the cause (one of `causes`). Then calls it 10 times:
/// every call is degraded (let through under `open`, refused as unavailable under `closed`) and within the
/// deadline, and the one warning names the cause.
async fn fails_named(case: &str, builder: LimiterBuilder, on_error: OnError, causes: &[&str]) {
    let limiter = quick(builder, on_error);
    let not_ready = limiter.ready().await.expect_err(case).to_string();
    assert!(
        causes.iter().any(|cause| not_ready.contains(cause)),
        "{case}: ready names the cause, one of {causes:?}: {not_ready}"
    );
    let logs = Captured::default();
    let on_error_closed = async {
        let rule = Rule::new().max(3);
        let mut closed = false;
        for call in 0..10 {
            let started = Instant::now();
            let decision = limiter.check(&rule, "k").await;
            let took = started.elapsed();
            assert!(took < DEADLINE + SLACK, "{case}: call {call} took {took:?}");
            assert!(
                decision.degraded,
                "{case}: call {call} was decided by Redis"
            );
            closed = !decision.allowed;
        }
        closed
    }
    .with_subscriber(logs.subscriber())
    .await;
    assert_eq!(
        on_error_closed,
        on_error == OnError::Closed,
        "{case}: {on_error} decides"
    );
    if on_error_closed {
        let refused = limiter.enforce(&Rule::new().max(3), "k").await.unwrap_err();
        assert_eq!(
            refused.reason(),
            Reason::Unavailable,
            "{case}: closed refuses"
        );
    }
    let text = logs.text();
    let warnings: Vec<&str> = text
        .lines()
        .filter(|line| line.contains(" WARN "))
        .collect();
    assert_eq!(warnings.len(), 1, "{case}: one warning\n{text}");
    assert!(
        causes.iter().any(|cause| warnings[0].contains(cause)),
        "{case}: the warning names the cause, one of {causes:?}:\n{}",
        warnings[0]
    );
    eprintln!(
        "{case} ({}): {}",
        if on_error_closed { "closed" } else { "open" },
        warnings[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_misconfiguration_is_a_degraded_decision_logged_once_with_its_cause_within_the_deadline(
) {
    let tls = Tls::new();
    let server = RedisServer::start_tls(&tls);
    let plain = RedisServer::start();
    let other_ca = tls.certificates.pem("other-ca.pem");
    let builder = || Limiter::builder().redis(server.url());
    let unknown_issuer = ["invalid peer certificate: UnknownIssuer"];
    let open = OnError::Open;

    let another_ca = builder().redis_ca(other_ca.clone());
    fails_named("another CA", another_ca, open, &unknown_issuer).await;
    fails_named("the system's CAs", builder(), open, &unknown_issuer).await;

    let wrong = server.url().replace(PASSWORD, "not-the-password");
    fails_named(
        "a wrong password",
        tls.configure(Limiter::builder().redis(wrong)),
        OnError::Closed,
        &["Password authentication failed"],
    )
    .await;

    let in_the_clear = server.url().replace("rediss://", "redis://");
    let dropped = [
        "Connection reset by peer",
        "broken pipe",
        "Broken pipe",
        "closed",
        "EOF",
        "eof",
    ];
    let clear = Limiter::builder().redis(in_the_clear);
    fails_named("a TLS port in the clear", clear, open, &dropped).await;

    let over_tls = plain.url().replace("redis://", "rediss://");
    fails_named(
        "a plain Redis over TLS",
        tls.configure(Limiter::builder().redis(over_tls)),
        open,
        &["connected to within", "timed out"],
    )
    .await;

    let mutual = Tls::mutual();
    let server = RedisServer::start_tls(&mutual);
    let without_certificate = Limiter::builder()
        .redis(server.url())
        .redis_ca(mutual.certificates.pem("ca.pem"));
    let no_certificate = ["CertificateRequired"];
    fails_named(
        "no client certificate",
        without_certificate,
        open,
        &no_certificate,
    )
    .await;

    let cluster = RedisCluster::start_tls(&tls);
    let another_ca = cluster.builder().redis_ca(other_ca.clone());
    fails_named(
        "a cluster, another CA",
        another_ca,
        open,
        &["UnknownIssuer"],
    )
    .await;
    let seeds: Vec<String> = cluster
        .seeds()
        .iter()
        .map(|s| s.replace(PASSWORD, "nope"))
        .collect();
    fails_named(
        "a cluster, a wrong password",
        cluster.builder().redis_cluster(seeds),
        open,
        &["Password authentication failed"],
    )
    .await;

    let sentinel = RedisSentinel::start_tls(&tls);
    let another_ca = sentinel.builder().redis_ca(other_ca);
    fails_named("Sentinel, another CA", another_ca, open, &["UnknownIssuer"]).await;
    let master = sentinel.master().replace(PASSWORD, "nope");
    fails_named(
        "Sentinel, the master's password wrong",
        sentinel
            .builder()
            .redis_sentinel(master, sentinel.sentinel_urls()),
        open,
        &["Password authentication failed"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_the_server_accepts_later_heals_by_itself() {
    let tls = Tls::new();
    let server = RedisServer::start_tls(&tls);
    let early = server.url().replace(PASSWORD, "rotated-password");
    let limiter = tls
        .configure(Limiter::builder().redis(early))
        .deadline(DEADLINE)
        .breaker(3, Duration::from_millis(50))
        .build()
        .unwrap();
    let rule = Rule::new().max(3);
    let logs = Captured::default();
    async {
        assert!(
            limiter.check(&rule, "k").await.degraded,
            "the server does not know the password yet"
        );
        let _: () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg(test_support::tls::USER)
            .arg(">rotated-password")
            .query(&mut server.connection())
            .unwrap();
        tests::until_redis_decides(&limiter, &rule).await;
    }
    .with_subscriber(logs.subscriber())
    .await;
    let text = logs.text();
    assert_eq!(text.matches(" WARN ").count(), 2, "{text}");
    assert!(text.contains("Redis answers again"), "{text}");
}
