use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(key = user, max = 10, algorithm = leaky_bucket, reserve = "critical 20%", priority = "normal")]
async fn shaped(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
