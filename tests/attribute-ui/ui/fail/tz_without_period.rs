use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 100, window = "1d", tz = "Europe/Berlin")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
