use std::fmt::Display;

use limiter_runtime::{rate_limit, RateLimited};

#[rate_limit(key = t, max = 1)]
async fn describe<T: Display>(t: T) -> Result<String, RateLimited> {
    Ok(t.to_string())
}

#[rate_limit(key = item, max = 1)]
async fn with_where<K>(item: K) -> Result<K, RateLimited>
where
    K: Display + Send,
{
    Ok(item)
}

#[rate_limit(key = item, max = 1)]
async fn impl_trait(item: impl Display) -> Result<String, RateLimited> {
    Ok(item.to_string())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(describe(1u8).await.unwrap(), "1");
    // One bucket per key, whatever the type: `1u64` formats as the same key as `1u8`.
    assert!(describe(1u64).await.is_err());
    assert_eq!(describe("two").await.unwrap(), "two");
    assert_eq!(with_where('x').await.unwrap(), 'x');
    assert_eq!(impl_trait(3.5).await.unwrap(), "3.5");
}
