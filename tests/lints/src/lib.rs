#![deny(warnings)]
//! Every shape `#[rate_limit]` accepts, under `#![deny(warnings)]` (and, in CI, `cargo clippy -- -D warnings`):
//! a warning the expansion adds to a user's crate fails the build here.
//!
//! Each function is public, so that none is dead code, and small: what is checked is that it compiles
//! without a warning. The test at the end runs a few, to show the expansions also work.

pub mod arguments;
pub mod constants;
#[rustfmt::skip]
pub mod one_line;
pub mod responses;
pub mod shapes;

use limiter_runtime::RateLimited;

/// An application's error, which a rejection converts into.
#[derive(Debug)]
pub enum AppError {
    /// The body failed.
    Failed,
    /// A limit rejected the call.
    Limited(RateLimited),
}

impl From<RateLimited> for AppError {
    fn from(rejection: RateLimited) -> Self {
        AppError::Limited(rejection)
    }
}

#[cfg(test)]
mod tests {
    use limiter_runtime::{Limiter, Zone};

    use crate::{arguments, constants, one_line, responses, shapes};

    /// A few of the expansions, run: each admits its first call, and one with `max = 5` rejects its sixth.
    #[tokio::test(flavor = "current_thread")]
    async fn expansions_run() {
        Limiter::in_memory()
            .scope(async {
                assert!(one_line::key("ada").await.is_ok());
                assert_eq!(shapes::statements("21").await.unwrap(), 42);
                assert!(shapes::statements("").await.is_err());
                let mut account = shapes::Account::open(7).await.unwrap();
                assert_eq!(account.deposit(5).await.unwrap(), 5);
                assert!(arguments::count_failures("ada", "hunter2").await.is_ok());
                // Each body's permit comes back when it ends: more calls than permits, one after another.
                for _ in 0..3 {
                    assert_eq!(arguments::in_flight("t").await.unwrap(), 1);
                }
                assert!(arguments::in_flight_beside_rate("").await.is_err());
                assert!(constants::in_flight().await.is_ok());
                // A response's body holds the permit: dropped, it gives it back.
                for _ in 0..3 {
                    assert_eq!(responses::bare("t").await.status(), 200);
                }
                assert!(responses::counted("t").await.is_ok());
                // Calendar quotas: a zone named when compiled, a billing day, and each call's own zone.
                assert_eq!(
                    arguments::period_day("acme", vec![String::new(); 3])
                        .await
                        .unwrap(),
                    3
                );
                assert!(arguments::period_month("acme").await.is_ok());
                let tokyo = Zone::get("Asia/Tokyo").unwrap();
                let tenant = arguments::Tenant {
                    id: 7,
                    zone: &tokyo,
                };
                assert_eq!(arguments::tz_field(&tenant).await.unwrap(), 7);
                assert_eq!(arguments::tz_argument(tokyo.clone()).await.unwrap(), tokyo);
                for _ in 0..5 {
                    assert!(shapes::no_arguments().await.is_ok());
                }
                assert!(shapes::no_arguments().await.is_err());
                for _ in 0..10 {
                    assert!(constants::login("ada").await.is_ok());
                }
                assert!(
                    constants::login("ada").await.is_err(),
                    "`max = limits::LOGIN * 2` is 10"
                );
            })
            .await;
    }
}
