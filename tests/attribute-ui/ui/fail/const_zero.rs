use limiter_runtime::{rate_limit, RateLimited};

const MAX: u32 = 0;

mod limits {
    pub const LOGIN: usize = 0;
    pub const LEASE: u8 = 0;
}

#[rate_limit(max = MAX)]
async fn item(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(max = limits::LOGIN * 2)]
async fn expression(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(algorithm = token_bucket, max = 5, lease = limits::LEASE)]
async fn lease(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(window = limits::LOGIN)]
async fn window(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
