use limiter_runtime::{rate_limit, RateLimited};

// Without a key every call shares one bucket, named after the function.
#[rate_limit(max = 1)]
async fn health(probe: u32) -> Result<u32, RateLimited> {
    Ok(probe)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(health(1).await.unwrap(), 1);
    let rejected = health(2).await.unwrap_err();
    assert!(rejected.key().ends_with("%3A%3Ahealth"), "{}", rejected.key());
}
