use limiter_runtime::{rate_limit, Priority, RateLimited};

#[rate_limit(key = user, max = 10, priority = level, reserve = "critical 20")]
async fn no_sign(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 10, priority = level, reserve = "high 30%, critical 2.5%")]
async fn fraction(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 10, priority = level, reserve = "critical x%")]
async fn not_a_number(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
