use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(key = id, max = 5, plan = id)]
async fn f(id: u64) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
