//! The source articles' own tests of the annotated employee service, against a real Redis.

use std::time::{Duration, Instant};

use limiter_runtime::{rate_limit, Limiter, RateLimited};
use tests::RedisServer;

#[derive(Debug, Clone, PartialEq)]
struct Employee {
    id: String,
}

#[derive(Debug)]
enum AppError {
    Limited(RateLimited),
}

impl From<RateLimited> for AppError {
    fn from(e: RateLimited) -> Self {
        AppError::Limited(e)
    }
}

#[rate_limit(prefix = "rate_limit:emp:", key = id, window = 10, max = 5, message = "查询太快啦,喝杯茶再来")]
async fn get_by_id(id: &str) -> Result<Employee, AppError> {
    Ok(Employee { id: id.to_owned() })
}

/// The sources key this one on the caller's IP and leave window and max to the defaults (60 s, 100).
#[rate_limit(key = ip)]
async fn get_by_id2(ip: &str, id: &str) -> Result<Employee, AppError> {
    Ok(Employee { id: id.to_owned() })
}

#[tokio::test]
async fn five_calls_pass_and_the_sixth_returns_the_custom_message() {
    let server = RedisServer::start();
    server
        .limiter()
        .scope(async {
            for _ in 1..=5 {
                assert_eq!(get_by_id("1001").await.unwrap().id, "1001");
            }
            let AppError::Limited(error) = get_by_id("1001").await.unwrap_err();
            assert_eq!(error.to_string(), "查询太快啦,喝杯茶再来");
            assert_eq!(error.key(), "rate_limit:emp:1001");
            assert_eq!((error.limit(), error.remaining()), (5, 0));
            assert!(
                error.retry_after() > Duration::ZERO
                    && error.retry_after() <= Duration::from_secs(10)
            );
            // Another employee has a limit of its own.
            assert!(get_by_id("1002").await.is_ok());
        })
        .await;
}

#[tokio::test]
async fn an_ip_with_the_default_max_is_rejected_on_its_101st_call() {
    let server = RedisServer::start();
    server
        .limiter()
        .scope(async {
            for i in 0..100 {
                assert!(
                    get_by_id2("192.168.1.224", &i.to_string()).await.is_ok(),
                    "call {}",
                    i + 1
                );
            }
            let AppError::Limited(error) = get_by_id2("192.168.1.224", "any-id").await.unwrap_err();
            assert_eq!(error.key(), "rate_limit:192.168.1.224");
            assert_eq!(
                error.to_string(),
                "too many requests, please try again later"
            );
            assert!(get_by_id2("10.0.0.1", "any-id").await.is_ok());
        })
        .await;
}

#[tokio::test]
async fn with_redis_killed_the_call_still_returns_its_value() {
    let mut server = RedisServer::start();
    let limiter = Limiter::builder().redis(server.url()).build().unwrap();
    limiter
        .scope(async {
            assert!(get_by_id("1001").await.is_ok());
            server.kill();
            for _ in 0..10 {
                let started = Instant::now();
                assert_eq!(get_by_id("1001").await.unwrap().id, "1001");
                assert!(
                    started.elapsed() < Duration::from_secs(1),
                    "{:?}",
                    started.elapsed()
                );
            }
        })
        .await;
}
