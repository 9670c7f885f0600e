use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 100, period = month, anchor = 0)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(max = 100, period = month, anchor = 32)]
async fn g() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
