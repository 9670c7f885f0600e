use limiter_runtime::rate_limit;

#[async_trait::async_trait]
trait Ping {
    async fn ping(&self);
}

struct Server;

#[async_trait::async_trait]
impl Ping for Server {
    #[rate_limit(max = 5)]
    async fn ping(&self) {}
}

fn main() {}
