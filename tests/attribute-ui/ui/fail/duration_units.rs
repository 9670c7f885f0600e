use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(window = "30s1m")]
async fn smaller_first() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "1m1m")]
async fn twice() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "1h30")]
async fn last_without_unit() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(window = "213503982334602d")]
async fn too_long() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
