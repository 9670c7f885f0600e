use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(algorithm = gcra, max = 5)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
