//! Every algorithm, `burst`, `cost`, `mode = wait` (with or without `algorithm`), `max_wait`, `lease` and
//! `lease_ttl`.
use limiter_runtime::{rate_limit, Limiter, RateLimited};

#[rate_limit(algorithm = sliding_log, max = 2, prefix = "log:")]
async fn log() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(algorithm = fixed_window, max = 2, window = "1h", prefix = "fixed:")]
async fn fixed() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(algorithm = sliding_window, max = 2, prefix = "sliding:")]
async fn sliding() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(algorithm = token_bucket, max = 1, window = "1h", burst = 2, prefix = "bucket:")]
async fn bucket() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(algorithm = leaky_bucket, max = 1, window = "1h", mode = reject, prefix = "leaky:")]
async fn leaky() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(algorithm = leaky_bucket, max = 100, window = "1s", mode = wait, max_wait = "15ms", prefix = "shaped:")]
async fn shaped() -> Result<(), RateLimited> {
    Ok(())
}

// `mode = wait` is the leaky bucket's: without `algorithm`, it is the one.
#[rate_limit(max = 100, window = "1s", mode = wait, max_wait = "15ms", prefix = "waits:")]
async fn waits() -> Result<(), RateLimited> {
    Ok(())
}

// A lease applies on Redis; in memory the limit counts as written.
#[rate_limit(algorithm = token_bucket, max = 2, window = "1h", lease = 50, lease_ttl = "250ms", prefix = "leased:")]
async fn leased() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 10, cost = items.len(), prefix = "cost:")]
async fn upload(user: &str, items: Vec<u8>) -> Result<usize, RateLimited> {
    Ok(items.len())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    Limiter::in_memory()
        .scope(async {
            assert!(log().await.is_ok() && log().await.is_ok() && log().await.is_err());
            assert!(fixed().await.is_ok() && fixed().await.is_ok() && fixed().await.is_err());
            assert!(sliding().await.is_ok() && sliding().await.is_ok() && sliding().await.is_err());
            assert!(bucket().await.is_ok() && bucket().await.is_ok() && bucket().await.is_err());
            assert!(leaky().await.is_ok() && leaky().await.is_err());
            assert!(leased().await.is_ok() && leased().await.is_ok() && leased().await.is_err());
            // Slots every 10 ms: of three concurrent calls the first runs now, the second waits 10 ms, the third
            // would wait 20 ms, past `max_wait`.
            let (a, b, c) = tokio::join!(shaped(), shaped(), shaped());
            assert!(a.is_ok() && b.is_ok() && c.is_err());
            let (a, b, c) = tokio::join!(waits(), waits(), waits());
            assert!(a.is_ok() && b.is_ok() && c.is_err());
            assert_eq!(upload("ada", vec![0; 7]).await.unwrap(), 7);
            assert!(upload("ada", vec![0; 4]).await.is_err());
            assert_eq!(upload("ada", vec![0; 3]).await.unwrap(), 3);
        })
        .await;
}
