use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(algorithm = leaky_bucket, max = 5, mode = wait, penalty = "10m")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
