use limiter_runtime::{rate_limit, Priority, RateLimited};

#[rate_limit(key = user, max = 10, priority = level, reserve = "")]
async fn empty(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 10, priority = level, reserve = "critical")]
async fn no_share(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 10, priority = level, reserve = "critical 10% high 30%")]
async fn no_comma(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 10, priority = level, reserve = "critical 10%,")]
async fn trailing_comma(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(key = user, max = 10, priority = level, reserve = 20)]
async fn not_a_string(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
