use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, window = 60, in_flight = 2, penalty = "10m")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
