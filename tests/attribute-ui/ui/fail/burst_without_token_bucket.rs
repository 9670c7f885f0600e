use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, burst = 10)]
async fn implicit() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(algorithm = fixed_window, max = 5, burst = 10)]
async fn other() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
