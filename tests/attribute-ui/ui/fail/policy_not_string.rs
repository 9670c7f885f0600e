use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(policy = employees)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
