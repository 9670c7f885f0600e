//! TLS from the environment: `LIMITER_REDIS_URL=rediss://user:password@...` with `LIMITER_REDIS_CA` (and, for
//! mutual TLS, `LIMITER_REDIS_CLIENT_CERT` and `LIMITER_REDIS_CLIENT_KEY`), each a path to a PEM file, through
//! `from_env()`; a file that cannot be used is an error naming its variable. (A test binary of its
//! own: it changes the process's environment.)

use limiter_runtime::{Error, Limiter, Rule, REDIS_URL_ENV};
use test_support::tls::Tls;
use tests::RedisServer;

const CA: &str = "LIMITER_REDIS_CA";
const CERT: &str = "LIMITER_REDIS_CLIENT_CERT";
const KEY: &str = "LIMITER_REDIS_CLIENT_KEY";

/// The variable and the reason of an [`Error::InvalidEnvFile`].
fn env_file_error(result: Result<Limiter, Error>) -> (&'static str, String) {
    match result {
        Err(Error::InvalidEnvFile { name, reason, .. }) => (name, reason),
        other => panic!("expected InvalidEnvFile, got {other:?}"),
    }
}

#[tokio::test]
async fn rediss_with_a_ca_and_a_client_certificate_from_the_environment() {
    let tls = Tls::mutual();
    let server = RedisServer::start_tls(&tls);
    let path = |name: &str| tls.certificates.path(name);
    // Safety: this binary's only test sets the variables before anything else reads the environment.
    std::env::set_var(REDIS_URL_ENV, server.url());
    std::env::set_var(CA, path("ca.pem"));
    std::env::set_var(CERT, path("client.pem"));
    std::env::set_var(KEY, path("client.key"));
    std::env::set_var("LIMITER_DEADLINE", "5s");
    let limiter = from_env().unwrap();
    let rule = Rule::new().max(2).prefix("env:");
    for expected in [true, true, false] {
        let decision = limiter.check(&rule, "k").await;
        assert!(!decision.degraded, "decided by Redis, over TLS");
        assert_eq!(decision.allowed, expected);
    }
    assert_eq!(server.limit_keys(), ["env:k"]);

    std::env::set_var(CA, "/nonexistent/ca.pem");
    let (name, reason) = env_file_error(from_env());
    assert_eq!(name, CA);
    assert!(reason.starts_with("the file cannot be read: "), "{reason}");
    let error = from_env().unwrap_err().to_string();
    assert!(
        error.starts_with(
            r#"LIMITER_REDIS_CA="/nonexistent/ca.pem" cannot be used: the file cannot be read"#
        ),
        "{error}"
    );

    std::env::set_var(CA, path("client.key"));
    let (name, reason) = env_file_error(from_env());
    assert_eq!(
        (name, reason.as_str()),
        (
            CA,
            "it holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
        )
    );

    std::env::set_var(CA, path("ca.pem"));
    std::env::set_var(KEY, path("client.pem"));
    let (name, reason) = env_file_error(from_env());
    assert_eq!(name, KEY);
    assert!(
        reason.starts_with("it holds no readable PEM private key"),
        "{reason}"
    );

    std::env::remove_var(KEY);
    let (name, reason) = env_file_error(from_env());
    assert_eq!(
        (name, reason.as_str()),
        (
            CERT,
            "LIMITER_REDIS_CLIENT_KEY must name the certificate's private key"
        )
    );
    std::env::remove_var(CERT);

    // A CA with a URL that is not rediss:// would never be used: most often a URL missing its `s`.
    std::env::set_var(REDIS_URL_ENV, server.url().replace("rediss://", "redis://"));
    // The error names the variable that gave the URL.
    let error = from_env().unwrap_err();
    let Error::InvalidEnvSetup { name, source } = &error else {
        panic!("{error}");
    };
    assert_eq!(*name, REDIS_URL_ENV);
    assert!(
        matches!(&**source, Error::InvalidRedisSetup(why) if why.contains("no Redis URL uses TLS")),
        "{error}"
    );
}

/// Builds the limiter the environment asks for: `Limiter::builder().env()?.build()`.
fn from_env() -> Result<Limiter, limiter_runtime::Error> {
    Limiter::builder().env()?.build()
}
