use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(name = employees)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
