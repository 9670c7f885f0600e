use std::fmt::Display;

use limiter_runtime::{rate_limit, RateLimited};

#[derive(Debug)]
enum AppError {
    Limited(RateLimited),
}

impl From<RateLimited> for AppError {
    fn from(e: RateLimited) -> Self {
        AppError::Limited(e)
    }
}

type AppResult<T> = Result<T, AppError>;

// The return type may be an alias, fully qualified, or hold `impl Trait` and references.
#[rate_limit(prefix = "alias:", max = 1)]
async fn aliased() -> AppResult<u8> {
    Ok(1)
}

#[rate_limit(prefix = "qualified:", max = 1)]
async fn qualified() -> ::std::result::Result<u8, Box<AppError>> {
    Ok(2)
}

#[rate_limit(prefix = "opaque:", max = 1)]
async fn opaque() -> Result<impl Display, RateLimited> {
    Ok(3)
}

#[rate_limit(prefix = "borrowed:", key = text, max = 1)]
async fn borrowed(text: &str) -> Result<&str, RateLimited> {
    Ok(text.trim())
}

impl From<RateLimited> for Box<AppError> {
    fn from(e: RateLimited) -> Self {
        Box::new(AppError::from(e))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(aliased().await.unwrap(), 1);
    assert!(matches!(aliased().await, Err(AppError::Limited(_))));
    assert_eq!(qualified().await.unwrap(), 2);
    assert!(qualified().await.is_err());
    assert_eq!(opaque().await.unwrap().to_string(), "3");
    assert!(opaque().await.is_err());
    assert_eq!(borrowed(" x ").await.unwrap(), "x");
    assert!(borrowed(" x ").await.is_err());
}
