use limiter_runtime::{rate_limit, Priority, RateLimited};

#[rate_limit(key = user, max = 10, priority = level, reserve = "critical 120%")]
async fn f(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
