use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(key = user_id, max = 5)]
async fn get(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
