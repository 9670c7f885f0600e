use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, on_error = retry)]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
