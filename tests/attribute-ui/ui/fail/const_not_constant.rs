use limiter_runtime::{rate_limit, RateLimited};

struct Limits;

impl Limits {
    const MAX: u32 = 5;

    #[rate_limit(max = Self::MAX)]
    async fn associated(&self) -> Result<(), RateLimited> {
        Ok(())
    }

    #[rate_limit(key = n, max = n)]
    async fn argument(&self, n: u32) -> Result<(), RateLimited> {
        Ok(())
    }
}

fn main() {}
