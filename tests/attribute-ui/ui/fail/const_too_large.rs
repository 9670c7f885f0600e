use limiter_runtime::{rate_limit, RateLimited};

const MAX: u128 = u64::MAX as u128 + 1;
const FOREVER: u64 = u64::MAX;

#[rate_limit(max = MAX)]
async fn max(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(window = FOREVER)]
async fn window(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
