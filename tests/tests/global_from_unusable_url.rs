//! With no limiter installed, an unusable `LIMITER_REDIS_URL` is refused with its name, and the shared runtime
//! does not count in memory instead (per process, N processes allowing N times each limit): every call meets
//! a Redis that cannot be used, and is decided by its `on_error`, as in an outage, flagged degraded. (A test
//! binary of its own: the global runtime is built once.)

use limiter_runtime::{rate_limit, Limiter, RateLimited, Reason, REDIS_URL_ENV};
use tests::logs::Captured;
use tracing::instrument::WithSubscriber;

#[rate_limit(prefix = "open:", key = id, max = 1)]
async fn open(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(prefix = "closed:", key = id, max = 1, on_error = closed)]
async fn closed(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::test]
async fn an_unusable_redis_url_fails_every_call_by_its_on_error() {
    // Safety: this binary's only test sets the variable before anything reads the environment.
    std::env::set_var(REDIS_URL_ENV, "redis://[::1:6379/");
    let logs = Captured::default();
    async {
        for _ in 0..3 {
            // In memory, the second call would be refused: here each goes ahead, degraded (open).
            assert!(open(7).await.is_ok());
            let refused = closed(7).await.unwrap_err();
            assert_eq!(refused.reason(), Reason::Unavailable);
        }
    }
    .with_subscriber(logs.subscriber())
    .await;
    assert_eq!(Limiter::current().stats().degraded, 6);
    let logs = logs.text();
    let errors: Vec<&str> = logs.lines().filter(|l| l.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "{logs}");
    assert!(errors[0].contains("LIMITER_REDIS_URL"), "{logs}");
    assert!(!logs.contains("counting in memory"), "{logs}");
    assert!(!logs.contains("is not set"), "{logs}");
    assert!(!logs.contains("using Redis"), "{logs}");
}
