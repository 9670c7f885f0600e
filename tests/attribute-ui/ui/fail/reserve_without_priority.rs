use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(key = user, max = 10, reserve = "critical 20%")]
async fn f(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
