use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(max = 5, cost = weight)]
async fn f(weight: i32) -> Result<(), RateLimited> {
    let _ = weight;
    Ok(())
}

fn main() {}
