//! `max`, `burst`, `lease` and `window` as constants of any integer type, and constant expressions.
use limiter_runtime::{rate_limit, Limiter, RateLimited};

const MAX: u64 = 2;
const HOUR: u32 = 3600;

mod limits {
    pub const LOGIN: usize = 1;
    pub const LEASE: i64 = 50;
}

#[rate_limit(prefix = "max:", max = MAX, window = HOUR)]
async fn max() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(prefix = "login:", key = user, max = limits::LOGIN * 2, window = "1h")]
async fn login(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(prefix = "bucket:", algorithm = token_bucket, max = 1, window = HOUR, burst = 2 * MAX, lease = limits::LEASE)]
async fn bucket() -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    Limiter::in_memory()
        .scope(async {
            assert!(max().await.is_ok() && max().await.is_ok() && max().await.is_err());
            assert!(login("ada").await.is_ok() && login("ada").await.is_ok());
            assert!(login("ada").await.is_err(), "`max = limits::LOGIN * 2` is 2");
            for _ in 0..4 {
                assert!(bucket().await.is_ok(), "`burst = 2 * MAX` is 4");
            }
            assert!(bucket().await.is_err());
        })
        .await;
}
