//! Start-up: `Limiter::ready` (and `LimiterBuilder::connect`) find a Redis that cannot be used before the first
//! request does, each with an error naming the cause; and making the connection never spends a decision's
//! deadline, so the first call over TLS, with a deadline shorter than making the connection, is still decided
//! by Redis; only the connection's own timeout bounds it.

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

/// Forwards each connection on a loopback port to `upstream`, after holding it for `delay`: a connection
/// (and the TLS handshake over it) that takes at least `delay` to make, however fast the machine.
async fn slow_to_connect(upstream: u16, delay: Duration) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let mut server = tokio::net::TcpStream::connect(("127.0.0.1", upstream))
                    .await
                    .unwrap();
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    port
}

/// The first call of a process over TLS waits for the connection and its handshake outside its deadline:
/// with a connection held 400 ms and a deadline of 200 ms, it is decided by Redis, not degraded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn making_the_connection_spends_no_decisions_deadline() {
    let tls = Tls::new();
    let server = RedisServer::start_tls(&tls);
    let port = slow_to_connect(server.port(), Duration::from_millis(400)).await;
    let url = server
        .url()
        .replace(&format!(":{}/", server.port()), &format!(":{port}/"));
    let limiter = tls
        .configure(Limiter::builder().redis(&url))
        .deadline(Duration::from_millis(200))
        .connect_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let decision = limiter.check(&Rule::new().max(3), "k").await;
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "the connection was held: {:?}",
        started.elapsed()
    );
    assert!(!decision.degraded, "{decision:?}");
    assert_eq!(decision.remaining, 2);

    // A connection that takes longer than its own timeout is a failure, decided by `on_error`.
    let impatient = tls
        .configure(Limiter::builder().redis(url))
        .deadline(Duration::from_millis(200))
        .connect_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let decision = impatient.check(&Rule::new().max(3), "k").await;
    assert!(decision.degraded, "{decision:?}");
}
