//! With no limiter installed and no `LIMITER_REDIS_URL`, the first annotated call counts in memory and warns
//! once that limits are per process. (A test binary of its own: the global runtime is built once.)

use limiter_runtime::{rate_limit, RateLimited, REDIS_URL_ENV};
use tests::logs::Captured;
use tracing::instrument::WithSubscriber;

#[rate_limit(max = 3)]
async fn ping() -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::test]
async fn without_redis_the_shared_runtime_counts_in_memory_and_says_so_once() {
    // Safety: this binary's only test clears the variable before anything reads the environment.
    std::env::remove_var(REDIS_URL_ENV);
    let logs = Captured::default();
    let admitted = async {
        let mut admitted = 0;
        for _ in 0..5 {
            admitted += usize::from(ping().await.is_ok());
        }
        admitted
    }
    .with_subscriber(logs.subscriber())
    .await;
    assert_eq!(admitted, 3);
    let logs = logs.text();
    assert_eq!(logs.matches("WARN").count(), 1, "said once: {logs}");
    assert!(logs.contains("counting in memory"), "{logs}");
    assert!(logs.contains("LIMITER_REDIS_URL is not set"), "{logs}");
}
