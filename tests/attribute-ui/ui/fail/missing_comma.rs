use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5 window = 10)]
async fn get(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
