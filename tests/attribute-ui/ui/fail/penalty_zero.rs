use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, window = 60, penalty = "0s")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
