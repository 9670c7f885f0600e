//! `skip_if` over the arguments (also `self` under `#[async_trait]`) and `shadow = true`.
use limiter_runtime::{rate_limit, Limiter, RateLimited};

struct User {
    admin: bool,
}

#[rate_limit(max = 1, skip_if = user.admin, prefix = "skip:")]
async fn act(user: &User) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(max = 1, shadow = true, prefix = "shadow:")]
async fn watched() -> Result<(), RateLimited> {
    Ok(())
}

#[async_trait::async_trait]
trait Service {
    async fn serve(&self) -> Result<(), RateLimited>;
}

struct Internal {
    trusted: bool,
}

#[async_trait::async_trait]
impl Service for Internal {
    #[rate_limit(max = 1, skip_if = self.trusted, prefix = "svc:")]
    async fn serve(&self) -> Result<(), RateLimited> {
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let limiter = Limiter::in_memory();
    limiter
        .scope(async {
            let admin = User { admin: true };
            for _ in 0..3 {
                assert!(act(&admin).await.is_ok());
            }
            let user = User { admin: false };
            assert!(act(&user).await.is_ok() && act(&user).await.is_err());
            for _ in 0..3 {
                assert!(watched().await.is_ok());
            }
            let trusted = Internal { trusted: true };
            assert!(trusted.serve().await.is_ok() && trusted.serve().await.is_ok());
        })
        .await;
    assert_eq!(limiter.stats().shadowed, 2);
}
