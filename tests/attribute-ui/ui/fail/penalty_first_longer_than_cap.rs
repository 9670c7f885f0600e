use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, penalty = "1h..1m")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
