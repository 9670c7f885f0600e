use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 100, period = day, mode = wait)]
async fn wait() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(max = 100, period = month, algorithm = fixed_window, lease = 10)]
async fn lease() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(max = 100, period = week, in_flight = 2)]
async fn in_flight() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(max = 100, period = day, burst = 20)]
async fn burst() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
