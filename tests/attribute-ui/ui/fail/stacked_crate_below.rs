use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(prefix = "a:", max = 10)]
#[rate_limit(prefix = "b:", max = 100, crate = "limiter_runtime")]
async fn f() -> Result<(), RateLimited> {
    Ok(())
}

fn main() {}
