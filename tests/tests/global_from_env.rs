//! With no limiter installed and `LIMITER_REDIS_URL` set, the first annotated call builds a Redis limiter
//! from the environment and says so once. (A test binary of its own: the global runtime is built once.)

use limiter_runtime::{rate_limit, Limiter, RateLimited, REDIS_URL_ENV};
use tests::logs::Captured;
use tests::RedisServer;
use tracing::instrument::WithSubscriber;

#[rate_limit(key = id, max = 2)]
async fn fetch(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::test]
async fn the_environment_names_the_redis_of_the_shared_runtime() {
    let server = RedisServer::start();
    // Safety: this binary's only test sets the variable before anything reads the environment.
    std::env::set_var(REDIS_URL_ENV, server.url());
    let logs = Captured::default();
    async {
        assert!(fetch(7).await.is_ok());
        assert!(fetch(7).await.is_ok());
        assert!(fetch(7).await.is_err());
    }
    .with_subscriber(logs.subscriber())
    .await;

    let members = tests::logged_calls(&mut server.connection(), "rate_limit:7");
    assert_eq!(members, 2, "the count is in Redis");
    let logs = logs.text();
    assert_eq!(logs.matches("WARN").count(), 1, "said once: {logs}");
    assert!(
        logs.contains("using Redis from LIMITER_REDIS_URL"),
        "{logs}"
    );

    // Installing after the fact is refused: the runtime is already fixed.
    assert!(Limiter::in_memory().install().is_err());
}
