use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(in_flight = 0)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
