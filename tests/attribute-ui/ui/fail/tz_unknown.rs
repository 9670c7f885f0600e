use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 10_000, period = day, tz = "Europe/Berln")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(max = 10_000, period = day, tz = "Mars/Olympus_Mons")]
async fn g() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
