//! An installed limiter is the one every annotated function uses; it is installed once.

use limiter_runtime::{rate_limit, Limiter, RateLimited};
use tests::RedisServer;

#[rate_limit(key = id, max = 1, prefix = "installed:")]
async fn fetch(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::test]
async fn the_installed_limiter_is_used_and_a_second_install_is_refused() {
    let server = RedisServer::start();
    server.limiter().install().unwrap();
    assert!(matches!(
        Limiter::in_memory().install(),
        Err(limiter_runtime::Error::AlreadyInstalled)
    ));
    assert!(fetch(1).await.is_ok());
    assert!(fetch(1).await.is_err());
    let mut redis = server.connection();
    let members: usize = redis::Commands::zcard(&mut redis, "installed:1").unwrap();
    assert_eq!(members, 1);
}
