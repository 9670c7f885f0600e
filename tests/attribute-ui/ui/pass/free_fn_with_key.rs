use limiter_runtime::{rate_limit, RateLimited};

#[derive(Debug)]
struct AppError(String);

impl From<RateLimited> for AppError {
    fn from(e: RateLimited) -> Self {
        AppError(e.to_string())
    }
}

#[rate_limit(prefix = "rate_limit:emp:", key = id, window = 10, max = 2, message = "slow down")]
async fn get_by_id(id: &str) -> Result<String, AppError> {
    Ok(format!("employee {id}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(get_by_id("1001").await.unwrap(), "employee 1001");
    assert!(get_by_id("1001").await.is_ok());
    assert_eq!(get_by_id("1001").await.unwrap_err().0, "slow down");
    // Another key has its own count.
    assert!(get_by_id("1002").await.is_ok());
}
