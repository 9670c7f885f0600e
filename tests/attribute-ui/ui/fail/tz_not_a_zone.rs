use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(key = tenant, max = 100, period = day, tz = zone)]
async fn f(tenant: &str, zone: String) -> Result<(), RateLimited> {
    let _ = zone;
    Ok(())
}

fn main() {}
