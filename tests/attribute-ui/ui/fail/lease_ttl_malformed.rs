use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(algorithm = fixed_window, max = 5, lease = 10, lease_ttl = "100 ms")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
