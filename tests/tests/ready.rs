//! Start-up: `Limiter::ready` (and `LimiterBuilder::connect`) find a Redis that cannot be used before the first
//! request does, each with an error naming the cause; and making the connection never spends a decision's
//! deadline, so the first call over TLS, with a deadline shorter than the handshake, is still decided by Redis.

use std::time::Duration;

use limiter_runtime::{Error, Limiter, Rule};
use test_support::tls::Tls;
use tests::RedisServer;

/// The error of `connect` on `url`, written out.
async fn not_ready(url: &str) -> String {
    match Limiter::builder().redis(url).connect().await {
        Err(error @ Error::NotReady { .. }) => error.to_string(),
        other => panic!("{url}: expected NotReady, got {other:?}"),
    }
}

#[tokio::test]
async fn a_redis_that_cannot_be_used_is_an_error_at_start_up() {
    let server = RedisServer::start();
    assert!(Limiter::builder()
        .redis(server.url())
        .connect()
        .await
        .is_ok());
    assert!(Limiter::in_memory().ready().await.is_ok());

    // A database that does not exist.
    let db = server.url().replace("/", "").replace("redis:", "redis://") + "/99";
    let error = not_ready(&db).await;
    assert!(error.contains("DB index is out of range"), "{error}");
    assert!(
        error.contains(&format!("127.0.0.1:{}", server.port())),
        "{error}"
    );

    // A password the server refuses.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("requirepass")
        .arg("s3cret")
        .query(&mut server.connection())
        .unwrap();
    let wrong = format!("redis://:wrong@127.0.0.1:{}/", server.port());
    let error = not_ready(&wrong).await;
    assert!(error.contains("Password authentication failed"), "{error}");
    assert!(
        !error.contains(":wrong"),
        "the password is never shown: {error}"
    );
    let right = format!("redis://:s3cret@127.0.0.1:{}/", server.port());
    assert!(Limiter::builder().redis(right).connect().await.is_ok());

    // Nobody listening.
    let port = server.port();
    drop(server);
    let error = not_ready(&format!("redis://127.0.0.1:{port}/")).await;
    assert!(error.contains("refused"), "{error}");
}

/// The first call of a process over TLS waits for the handshake outside its deadline: with a deadline far
/// shorter than a handshake in a debug build, it is decided by Redis, not degraded.
#[tokio::test]
async fn making_the_connection_spends_no_decisions_deadline() {
    let tls = Tls::new();
    let server = RedisServer::start_tls(&tls);
    let limiter = tls
        .configure(Limiter::builder().redis(server.url()))
        .deadline(Duration::from_millis(5))
        .build()
        .unwrap();
    let decision = limiter.check(&Rule::new().max(3), "k").await;
    assert!(!decision.degraded, "{decision:?}");
    assert_eq!(decision.remaining, 2);
}
