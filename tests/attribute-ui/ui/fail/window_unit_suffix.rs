use limiter_runtime::{rate_limit, RateLimited};

// `500ms` lexes as the integer 500 with a suffix: it must not be read as 500 seconds.
#[rate_limit(window = 500ms)]
async fn get(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

fn main() {}
