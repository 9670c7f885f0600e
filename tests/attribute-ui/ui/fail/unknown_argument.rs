use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(maximum = 5)]
async fn get(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
