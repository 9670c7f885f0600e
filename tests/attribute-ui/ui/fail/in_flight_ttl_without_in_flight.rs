use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, in_flight_ttl = "30s")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
