use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(algorithm = token_bucket, max = 5, lease_ttl = "100ms")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
