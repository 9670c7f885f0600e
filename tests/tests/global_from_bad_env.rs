//! With no limiter installed, a bad `LIMITER_*` variable beside a usable `LIMITER_REDIS_URL` is refused with
//! its name and ignored: the shared runtime still counts in that Redis, never in memory, and no line says
//! the URL is missing. (A test binary of its own: the global runtime is built once.)

use limiter_runtime::{rate_limit, RateLimited, REDIS_URL_ENV};
use tests::logs::Captured;
use tests::RedisServer;
use tracing::instrument::WithSubscriber;

#[rate_limit(key = id, max = 2)]
async fn fetch(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::test]
async fn a_bad_variable_never_throws_away_the_redis_url() {
    let server = RedisServer::start();
    // Safety: this binary's only test sets the variables before anything reads the environment.
    std::env::set_var(REDIS_URL_ENV, server.url());
    std::env::set_var("LIMITER_MAX", "abc");
    std::env::set_var("LIMITER_DEADLINE", "soon");
    let logs = Captured::default();
    async {
        assert!(fetch(7).await.is_ok());
        assert!(fetch(7).await.is_ok());
        let refused = fetch(7).await.unwrap_err();
        assert_eq!(
            refused.reason(),
            limiter_runtime::Reason::Limited,
            "decided by Redis"
        );
    }
    .with_subscriber(logs.subscriber())
    .await;

    let members = tests::logged_calls(&mut server.connection(), "rate_limit:7");
    assert_eq!(members, 2, "the count is in Redis");
    let logs = logs.text();
    let errors: Vec<&str> = logs.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 2, "{logs}");
    assert!(
        errors[0].contains("LIMITER_MAX") && errors[0].contains("abc"),
        "{logs}"
    );
    assert!(errors[1].contains("LIMITER_DEADLINE"), "{logs}");
    assert!(
        logs.contains("using Redis from LIMITER_REDIS_URL"),
        "{logs}"
    );
    assert!(!logs.contains("memory"), "{logs}");
    assert!(!logs.contains("is not set"), "{logs}");
}
