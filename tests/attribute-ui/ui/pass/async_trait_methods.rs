use limiter_runtime::{rate_limit, RateLimited};

struct Path<T>(T);

#[async_trait::async_trait]
trait Service {
    async fn call(&self, req: u32) -> Result<u32, RateLimited>;
    async fn route(&self, path: Path<String>) -> Result<String, RateLimited>;
    async fn bump(&mut self) -> Result<u32, RateLimited>;
    async fn stateless(n: u32) -> Result<u32, RateLimited>
    where
        Self: Sized;
    async fn into_x(self) -> Result<u32, RateLimited>
    where
        Self: Sized;
}

struct Handler {
    x: u32,
}

#[async_trait::async_trait]
impl Service for Handler {
    /// Documented, and keyed on a field of `self`.
    #[rate_limit(prefix = "call:", key = self.x, max = 1)]
    async fn call(&self, req: u32) -> Result<u32, RateLimited> {
        Ok(self.x + req)
    }

    #[rate_limit(prefix = "route:", key = id, max = 1)]
    async fn route(&self, Path(id): Path<String>) -> Result<String, RateLimited> {
        Ok(format!("{}:{id}", self.x))
    }

    #[rate_limit(prefix = "bump:", key = self.x, max = 1)]
    async fn bump(&mut self) -> Result<u32, RateLimited> {
        self.x += 1;
        Ok(self.x)
    }

    #[rate_limit(prefix = "stateless:", key = n, max = 1)]
    async fn stateless(n: u32) -> Result<u32, RateLimited>
    where
        Self: Sized,
    {
        Ok(n)
    }

    #[rate_limit(prefix = "into_x:", key = self.x, max = 1)]
    async fn into_x(self) -> Result<u32, RateLimited>
    where
        Self: Sized,
    {
        Ok(self.x)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut handler = Handler { x: 1 };
    assert_eq!(handler.call(2).await.unwrap(), 3);
    assert!(handler.call(2).await.is_err());
    assert_eq!(handler.route(Path("r".to_owned())).await.unwrap(), "1:r");
    assert!(handler.route(Path("r".to_owned())).await.is_err());
    assert_eq!(handler.bump().await.unwrap(), 2);
    assert!(
        handler.bump().await.is_ok(),
        "the key is `self.x` before the body: 2 now"
    );
    assert_eq!(Handler::stateless(9).await.unwrap(), 9);
    assert!(Handler::stateless(9).await.is_err());
    assert_eq!(Handler { x: 5 }.into_x().await.unwrap(), 5);
    assert!(Handler { x: 5 }.into_x().await.is_err());

    // The boxed future is `Send`, as `#[async_trait]` requires.
    let dyn_handler: Box<dyn Service + Send + Sync> = Box::new(Handler { x: 100 });
    tokio::spawn(async move { dyn_handler.call(1).await })
        .await
        .unwrap()
        .unwrap();
}
