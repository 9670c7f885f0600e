use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(algorithm = token_bucket, max = 5, mode = wait)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
