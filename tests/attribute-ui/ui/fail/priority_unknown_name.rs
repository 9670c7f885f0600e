use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(key = user, max = 10, priority = "urgent", reserve = "critical 20%")]
async fn named(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 10, priority = 3)]
async fn number(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
