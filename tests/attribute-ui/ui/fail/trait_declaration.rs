use limiter_runtime::{rate_limit, RateLimited};

trait Store {
    #[rate_limit(max = 5)]
    async fn get(&self, id: u32) -> Result<u32, RateLimited>;
}

fn main() {}
