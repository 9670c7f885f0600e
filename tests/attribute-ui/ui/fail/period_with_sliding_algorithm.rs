use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 100, period = day, algorithm = sliding_log)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
