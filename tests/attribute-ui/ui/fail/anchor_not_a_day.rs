use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 100, period = month, anchor = day)]
async fn f(day: &str) -> Result<(), RateLimited> {
    let _ = day;
    Ok(())
}

fn main() {}
