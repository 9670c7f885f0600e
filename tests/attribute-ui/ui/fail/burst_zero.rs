use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(algorithm = token_bucket, max = 5, burst = 0)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
