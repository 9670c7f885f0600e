//! Keys never collide: a key list writes each part escaped, so distinct lists are distinct keys whatever text
//! they hold (an IPv6 address beside an id too), in memory and in Redis, short or bounded; a single key reads
//! as it always did.

use limiter_runtime::{rate_limit, Limiter, RateLimited};
use tests::RedisServer;

#[rate_limit(prefix = "pair:", key = (tenant, user), max = 1, window = 3600)]
async fn call(tenant: &str, user: &str) -> Result<(), RateLimited> {
    Ok(())
}

async fn lists_never_share_a_bucket(limiter: &Limiter) {
    let long = "x".repeat(200);
    let pairs: Vec<(String, String)> = vec![
        ("a".into(), "b:c".into()),
        ("a:b".into(), "c".into()),
        ("a%3Ab".into(), "c".into()),
        ("2001:db8::1".into(), "7".into()),
        ("2001:db8:".into(), ":1:7".into()),
        ("".into(), ":".into()),
        (":".into(), "".into()),
        (format!("{long}:"), "y".into()),
        (long.clone(), ":y".into()),
    ];
    limiter
        .scope(async {
            for (tenant, user) in &pairs {
                assert!(
                    call(tenant, user).await.is_ok(),
                    "({tenant:?}, {user:?}) shares a bucket"
                );
            }
            for (tenant, user) in &pairs {
                let refused = call(tenant, user).await.unwrap_err();
                assert!(refused.key().len() <= "pair:".len() + 128 + 41);
            }
        })
        .await;
}

#[tokio::test]
async fn key_lists_never_share_a_bucket_in_memory() {
    lists_never_share_a_bucket(&Limiter::in_memory()).await;
}

#[tokio::test]
async fn key_lists_never_share_a_bucket_on_redis() {
    let server = RedisServer::start();
    lists_never_share_a_bucket(&server.limiter()).await;
    // A list of plain parts reads as it did: joined with `:`.
    let limiter = server.limiter();
    limiter.scope(call("acme", "42")).await.unwrap();
    assert!(server.limit_keys().contains(&"pair:acme:42".to_owned()));
}
