use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 100, anchor = 15)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(max = 100, period = week, anchor = 15)]
async fn g() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
