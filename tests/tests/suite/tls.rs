//! Redis over TLS, as an ACL user: one server, a Redis Cluster and Sentinel, each listening on TLS alone with
//! certificates the test makes (a CA of its own) and its `default` user off, so nothing reaches them in the
//! clear or without the password. Each behaves as one plain server does. A cluster's nodes, found from the
//! seeds, are all reached over TLS; the Sentinels have a user of their own, not the master's; with mutual TLS
//! the client presents its certificate. A setup that cannot work is refused when the limiter is built.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use limiter_runtime::{Error, Limiter, Rule};
use test_support::tls::{Tls, PASSWORD, SENTINEL_PASSWORD};
use tests::deployment::{behaves_like_one_server, evalsha_calls, with_heartbeats, KEYS};
use tests::{RedisCluster, RedisSentinel, RedisServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_over_tls_as_an_acl_user_behaves_like_one_server() {
    let tls = Tls::new();
    let server = RedisServer::start_tls(&tls);
    assert!(server.url().starts_with("rediss://limiter:"));
    let runtime = || with_heartbeats(server.builder());
    let count = || evalsha_calls(&mut server.connection());
    behaves_like_one_server(&runtime(), &runtime(), count).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_mutual_tls_the_limiter_presents_its_client_certificate() {
    let tls = Tls::mutual();
    let server = RedisServer::start_tls(&tls);
    let limiter = server.limiter();
    let rule = Rule::new().max(2).prefix("mutual:");
    let decisions = [(); 3].map(|_| limiter.check(&rule, "k"));
    let mut admitted = 0;
    for decision in decisions {
        let decision = decision.await;
        assert!(!decision.degraded);
        admitted += usize::from(decision.allowed);
    }
    assert_eq!(admitted, 2);
    assert_eq!(server.limit_keys(), ["mutual:k"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_over_tls_reaches_every_node_it_finds_over_tls() {
    let tls = Tls::new();
    let cluster = RedisCluster::start_tls(&tls);
    let runtime = || with_heartbeats(cluster.builder());
    let count = || cluster.calls_everywhere("evalsha");
    behaves_like_one_server(&runtime(), &runtime(), count).await;

    // The nodes listen on TLS alone: limits on every master mean every master was reached over TLS, though
    // the client learnt most of them from the cluster, not from the seeds.
    let keys = cluster.limit_keys();
    let masters: BTreeSet<u16> = keys.iter().map(|(port, _)| *port).collect();
    assert_eq!(masters.len(), 3, "limits live on every master: {keys:?}");
    assert_eq!(keys.len(), 5 * KEYS + 2, "one key per limit");
    let one_seed = with_heartbeats(cluster.builder().redis_cluster([&cluster.seeds()[0]]));
    for key in 0..30 {
        let decision = one_seed.check(&Rule::new().prefix("seed:"), key).await;
        assert!(!decision.degraded, "from one seed, every master answers");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_over_tls_has_its_own_user_and_the_master_another_even_after_a_failover() {
    let tls = Tls::mutual();
    let mut sentinel = RedisSentinel::start_tls(&tls);
    // Each side knows one user: the Sentinels `sentinel`, the servers `limiter`.
    assert!(sentinel.sentinel_urls()[0].contains(SENTINEL_PASSWORD));
    assert!(sentinel.master().contains(PASSWORD));
    let runtime = || with_heartbeats(sentinel.builder());
    let master = sentinel.master_port();
    let count = || evalsha_calls(&mut sentinel.server(master));
    behaves_like_one_server(&runtime(), &runtime(), count).await;

    // The master the Sentinels name after a failover is reached as the first was: TLS, its own user.
    let limiter = sentinel
        .builder()
        .deadline(Duration::from_millis(250))
        .breaker(3, Duration::from_millis(100))
        .build()
        .unwrap();
    let rule = Rule::new().max(1_000).prefix("failover:");
    // Three TLS handshakes (a Sentinel, the master's role, the master) may take longer than one deadline.
    tests::until_redis_decides(&limiter, &rule).await;
    sentinel.kill(master);
    let started = Instant::now();
    while limiter.check(&rule, "k").await.degraded {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still degraded 20 s after the master was killed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_ne!(sentinel.master_port(), master, "the replica took over");
}

#[test]
fn a_tls_setup_that_cannot_work_is_an_error_when_built_and_never_shows_a_password() {
    let tls = Tls::new();
    let pem = |name: &str| tls.certificates.pem(name);
    let url = "rediss://limiter:s3cret@127.0.0.1:6380/";
    let setup_error = |result: Result<Limiter, Error>| match result {
        Err(Error::InvalidRedisSetup(why)) => why,
        other => panic!("expected InvalidRedisSetup, got {other:?}"),
    };

    let why = setup_error(
        Limiter::builder()
            .redis(url)
            .redis_ca(pem("server.key"))
            .build(),
    );
    assert_eq!(
        why,
        "the Redis CA certificate cannot be used: it holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
    );
    let why = setup_error(
        Limiter::builder()
            .redis(url)
            .redis_client_certificate(pem("client.pem"), pem("client.pem"))
            .build(),
    );
    assert!(
        why.starts_with(
            "the Redis client key cannot be used: it holds no readable PEM private key"
        ),
        "{why}"
    );
    // A URL missing its second `s` would send the password in the clear.
    let why = setup_error(
        Limiter::builder()
            .redis("redis://limiter:s3cret@10.0.0.1:6379/")
            .redis_ca(pem("ca.pem"))
            .build(),
    );
    assert_eq!(
        why,
        "a CA certificate is set for Redis, but no Redis URL uses TLS (rediss://), so it would never be \
         used: write redis://limiter:***@10.0.0.1:6379/ with rediss://"
    );
    let why = setup_error(
        Limiter::builder()
            .redis_sentinel(
                "rediss://limiter:s3cret@mymaster/",
                [
                    "rediss://sentinel:a@10.0.0.1:26379/",
                    "rediss://sentinel:b@10.0.0.2:26379/",
                ],
            )
            .build(),
    );
    assert!(
        why.starts_with("the Sentinels' URLs name different users or passwords"),
        "{why}"
    );

    let error = Limiter::builder()
        .redis("rediss://limiter:s3cret@127.0.0.1:notaport/")
        .build()
        .unwrap_err();
    assert!(matches!(error, Error::InvalidRedisUrl { .. }));
    assert!(!error.to_string().contains("s3cret"), "{error}");

    // The CA may serve the master alone: the Sentinels in the clear, the master over TLS.
    assert!(Limiter::builder()
        .redis_sentinel(
            "rediss://limiter:s3cret@mymaster/",
            ["redis://10.0.0.1:26379/"]
        )
        .redis_ca(pem("ca.pem"))
        .build()
        .is_ok());

    // Building connects to nothing; its Debug never shows a password either.
    let builder = Limiter::builder()
        .redis_sentinel(
            "rediss://limiter:s3cret@mymaster/",
            ["rediss://sentinel:s3cret@10.0.0.1:26379/"],
        )
        .redis_ca(pem("ca.pem"));
    assert!(!format!("{builder:?}").contains("s3cret"), "{builder:?}");
    let limiter = builder.build().unwrap();
    assert!(!format!("{limiter:?}").contains("s3cret"), "{limiter:?}");
    let limiter = Limiter::builder()
        .redis_cluster([url])
        .redis_ca(pem("ca.pem"))
        .build()
        .unwrap();
    assert!(!format!("{limiter:?}").contains("s3cret"), "{limiter:?}");
}
