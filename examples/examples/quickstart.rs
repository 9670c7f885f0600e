//! The sources' employee service: `get_by_id` admits 5 calls per employee per 10 s; call it seven times.
//!
//! ```sh
//! cargo run -p examples --example quickstart                                   # in memory
//! LIMITER_REDIS_URL=redis://127.0.0.1:6379/ cargo run -p examples --example quickstart   # one count in Redis
//! ```

use limiter_runtime::{rate_limit, Limiter, RateLimited, REDIS_URL_ENV};

#[derive(Debug)]
struct Employee {
    id: String,
    name: &'static str,
}

#[derive(Debug)]
enum AppError {
    TooManyRequests(RateLimited),
}

impl From<RateLimited> for AppError {
    fn from(e: RateLimited) -> Self {
        AppError::TooManyRequests(e)
    }
}

/// Looks an employee up; at most 5 lookups of one employee per 10 seconds, across every process sharing
/// the Redis.
#[rate_limit(prefix = "rate_limit:emp:", key = id, window = 10, max = 5, message = "slow down, have a cup of tea")]
async fn get_by_id(id: &str) -> Result<Employee, AppError> {
    Ok(Employee {
        id: id.to_owned(),
        name: "Ada Lovelace",
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_target(false).init();

    match std::env::var(REDIS_URL_ENV) {
        Ok(url) => println!("counting in Redis at {url}: one count for every process"),
        Err(_) => {
            println!("counting in memory ({REDIS_URL_ENV} is not set): this process counts alone")
        }
    }
    // Connected and checked now (with Redis): a Redis that cannot be used is an error here, not degraded
    // calls later.
    Limiter::builder().env()?.connect().await?.install()?;

    for call in 1..=7 {
        match get_by_id("1001").await {
            Ok(employee) => println!(
                "call {call}: ok, employee {} is {}",
                employee.id, employee.name
            ),
            Err(AppError::TooManyRequests(limited)) => println!(
                "call {call}: rejected: {limited} (key {}, limit {}, retry after {:.1?})",
                limited.key(),
                limited.limit(),
                limited.retry_after()
            ),
        }
    }
    Ok(())
}
