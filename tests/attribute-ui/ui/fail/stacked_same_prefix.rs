use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(prefix = "user:", key = user, max = 10, window = 1)]
#[rate_limit(prefix = "user:", key = user, max = 1000, window = 3600)]
async fn f(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
