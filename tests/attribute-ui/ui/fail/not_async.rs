use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5)]
fn get(id: &str) -> Result<String, RateLimited> {
    Ok(id.to_owned())
}

fn main() {}
