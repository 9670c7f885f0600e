use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(algorithm = leaky_bucket, max = 5, window = 1, mode = wait, in_flight = 2)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
