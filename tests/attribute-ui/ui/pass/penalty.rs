//! `penalty = "10m"` (fixed) and `penalty = "1m..1h"` (escalating), with each algorithm, in shadow, on a
//! calendar quota, stacked, and through a runtime re-exported under another path.
use limiter_runtime::{rate_limit, Limiter, RateLimited};

#[rate_limit(prefix = "fixed:", key = user, max = 1, window = 60, penalty = "10m")]
async fn fixed(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(prefix = "escalating:", key = user, max = 5, window = "1m", penalty = "1m..1h",
             algorithm = token_bucket, burst = 10)]
async fn escalating(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(prefix = "shadow:", max = 1, penalty = "500ms..1h30m", shadow = true)]
async fn shadowed() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(prefix = "daily:", key = user, max = 1_000, period = day, tz = "Europe/Berlin", penalty = "1d")]
async fn daily(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(prefix = "logins:", key = user, max = 5, window = "15m", count = failures, penalty = "15m..1d")]
#[rate_limit(prefix = "burst:", key = user, max = 10, window = 1, algorithm = sliding_window)]
async fn login(user: &str, ok: bool) -> Result<(), LoginError> {
    if ok {
        Ok(())
    } else {
        Err(LoginError::WrongPassword)
    }
}

#[derive(Debug)]
enum LoginError {
    WrongPassword,
    Limited(RateLimited),
}

impl From<RateLimited> for LoginError {
    fn from(limited: RateLimited) -> Self {
        LoginError::Limited(limited)
    }
}

mod rt {
    pub use limiter_runtime::*;
}

#[rt::rate_limit(crate = "crate::rt", prefix = "rt:", max = 1, penalty = "1s")]
async fn through_a_reexport() -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let limiter = Limiter::in_memory();
    limiter
        .scope(async {
            assert!(fixed("a").await.is_ok());
            let blocked = fixed("a").await.unwrap_err();
            assert_eq!(blocked.retry_after(), std::time::Duration::from_secs(600));
            assert!(escalating("a").await.is_ok());
            for _ in 0..3 {
                assert!(shadowed().await.is_ok());
            }
            assert!(daily("a").await.is_ok());
            assert!(login("a", true).await.is_ok());
            assert!(matches!(
                login("a", false).await,
                Err(LoginError::WrongPassword)
            ));
            assert!(through_a_reexport().await.is_ok());
            assert!(through_a_reexport().await.is_err());
        })
        .await;
}
