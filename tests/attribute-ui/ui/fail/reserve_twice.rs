use limiter_runtime::{rate_limit, Priority, RateLimited};

#[rate_limit(key = user, max = 10, priority = level, reserve = "critical 10%, high 30%, critical 20%")]
async fn f(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
