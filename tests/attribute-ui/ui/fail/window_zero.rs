use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(window = 0)]
async fn zero_seconds(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(window = "0s")]
async fn zero_duration(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
