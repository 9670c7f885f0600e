use limiter_runtime::{rate_limit, RateLimited};

const MAX: i64 = -5;
const HOUR: i32 = 3600;

#[rate_limit(max = MAX)]
async fn max(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(window = -HOUR)]
async fn window(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
