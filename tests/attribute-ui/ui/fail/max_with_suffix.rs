use limiter_runtime::{rate_limit, RateLimited};

// `5k` lexes as the integer 5 with a suffix: it must not be read as 5.
#[rate_limit(max = 5k)]
async fn get(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
