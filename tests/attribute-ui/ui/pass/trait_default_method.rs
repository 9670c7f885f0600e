use limiter_runtime::{rate_limit, RateLimited};

trait Named {
    fn name(&self) -> String;

    #[rate_limit(prefix = "greet:", key = self.name(), max = 1)]
    async fn greet(&self) -> Result<String, RateLimited> {
        Ok(format!("hello {}", self.name()))
    }
}

#[async_trait::async_trait]
trait Boxed: Sync {
    fn id(&self) -> u32;

    #[rate_limit(prefix = "boxed:", key = self.id(), max = 1)]
    async fn fetch(&self) -> Result<u32, RateLimited> {
        Ok(self.id())
    }
}

struct Ada;

impl Named for Ada {
    fn name(&self) -> String {
        "ada".to_owned()
    }
}

impl Boxed for Ada {
    fn id(&self) -> u32 {
        7
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(Ada.greet().await.unwrap(), "hello ada");
    assert!(Ada.greet().await.is_err());
    assert_eq!(Ada.fetch().await.unwrap(), 7);
    assert!(Ada.fetch().await.is_err());
}
