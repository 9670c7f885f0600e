use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(count = errors)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
