use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, penalty = 600)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
