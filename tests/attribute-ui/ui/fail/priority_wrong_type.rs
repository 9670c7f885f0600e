use limiter_runtime::{rate_limit, Priority, RateLimited};

// A number is no priority.
#[rate_limit(key = user, max = 10, priority = level, reserve = "critical 20%")]
async fn number(user: &str, level: u8) -> Result<(), RateLimited> {
    Ok(())
}

// A string computed at run time is no priority either: parse it where it is read.
#[rate_limit(key = user, max = 10, priority = tier.as_str(), reserve = "critical 20%")]
async fn text(user: &str, tier: String) -> Result<(), RateLimited> {
    Ok(())
}

// A reference to one is dereferenced: `priority = *level`.
#[rate_limit(key = user, max = 10, priority = level, reserve = "critical 20%")]
async fn borrowed(user: &str, level: &Priority) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
