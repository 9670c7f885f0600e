use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(key = user.)]
async fn f(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
