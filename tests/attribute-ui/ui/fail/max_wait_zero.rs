use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(algorithm = leaky_bucket, max = 5, mode = wait, max_wait = "0ms")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
