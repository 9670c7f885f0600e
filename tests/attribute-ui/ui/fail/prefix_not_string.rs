use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(prefix = 5)]
async fn get(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
