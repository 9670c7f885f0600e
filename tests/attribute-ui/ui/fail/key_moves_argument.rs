use limiter_runtime::{rate_limit, RateLimited};

fn consume(s: String) -> String {
    s
}

#[rate_limit(key = consume(id), max = 5)]
async fn get(id: String) -> Result<String, RateLimited> {
    Ok(id)
}

fn main() {}
