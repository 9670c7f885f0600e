use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(window = 1.5)]
async fn fractional(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(window = true)]
async fn boolean(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
