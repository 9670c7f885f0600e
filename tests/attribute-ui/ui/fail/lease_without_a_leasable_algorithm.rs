use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, lease = 10)]
async fn implicit() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(algorithm = sliding_log, max = 5, lease = 10)]
async fn other() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
