use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(key = id, in_flight = 2, cost = 3)]
async fn f(id: &str) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
