//! An installed limiter is the one every annotated function uses; it is installed once; a tower layer given
//! another is told of. (A test binary of its own: it installs the global limiter.)

use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{rate_limit, Limiter, RateLimited, Rule};
use tests::logs::Captured;
use tests::RedisServer;

#[rate_limit(key = id, max = 1, prefix = "installed:")]
async fn fetch(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[tokio::test]
async fn the_installed_limiter_is_used_once_installed_and_a_layer_given_another_is_told_of() {
    let server = RedisServer::start();
    server.limiter().install().unwrap();
    assert!(matches!(
        Limiter::in_memory().install(),
        Err(limiter_runtime::Error::AlreadyInstalled)
    ));
    assert!(fetch(1).await.is_ok());
    assert!(fetch(1).await.is_err());
    let mut redis = server.connection();
    let members = tests::logged_calls(&mut redis, "installed:1");
    assert_eq!(members, 1);

    // A tower layer given a limiter other than the installed one is told of: the service would count in two.
    let logs = Captured::default();
    let _guard = tracing::subscriber::set_default(logs.subscriber());
    let installed = Limiter::current();
    let _same = RateLimitLayer::new(&installed, [Rule::new()], Key::peer_ip());
    assert!(!logs.text().contains("WARN"), "{}", logs.text());
    let other = Limiter::in_memory();
    let _other = RateLimitLayer::new(&other, [Rule::new()], Key::peer_ip());
    let told = logs.text();
    assert_eq!(told.matches(" WARN ").count(), 1, "{told}");
    assert!(
        told.contains("a RateLimitLayer decides in limiter #"),
        "{told}"
    );
    assert!(told.contains("(in memory)"), "{told}");
    assert!(
        told.contains("but the installed limiter is limiter #"),
        "{told}"
    );
}
