use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, skip_if = role)]
async fn f(role: &str) -> Result<(), RateLimited> {
    let _ = role;
    Ok(())
}

fn main() {}
