use std::time::Duration;

use limiter_runtime::{rate_limit, RateLimited};

const MAX: f64 = 100.0;
const NAME: &str = "100";
const WINDOW: Duration = Duration::from_secs(60);

#[rate_limit(max = MAX)]
async fn float(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(algorithm = token_bucket, max = 5, burst = NAME)]
async fn text(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(window = WINDOW)]
async fn duration(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
