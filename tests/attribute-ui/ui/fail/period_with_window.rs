use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 100, window = "1d", period = day)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
