use limiter_runtime::{rate_limit, RateLimited};

struct UserId(u64);

#[rate_limit(key = user, max = 5)]
async fn get(user: UserId) -> Result<u64, RateLimited> {
    Ok(user.0)
}

fn main() {}
