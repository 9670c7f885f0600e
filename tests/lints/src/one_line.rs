//! Bodies on one line, as rustfmt would not write them: `unused_braces` fires only on one-line blocks.

use limiter_runtime::{rate_limit, RateLimited, Zone};

use crate::AppError;

/// The shape of the README.
#[rate_limit(prefix = "one_line:", key = id, max = 5)]
pub async fn key(id: &str) -> Result<(), AppError> { Ok(()) }

/// No argument.
#[rate_limit(prefix = "one_line_plain:", max = 5)]
pub async fn plain() -> Result<u32, RateLimited> { Ok(1) }

/// `skip_if`.
#[rate_limit(prefix = "one_line_skip:", max = 5, skip_if = free)]
pub async fn skip(free: bool) -> Result<(), RateLimited> { Ok(()) }

/// `count`.
#[rate_limit(prefix = "one_line_count:", max = 5, count = failures)]
pub async fn count() -> Result<(), RateLimited> { Ok(()) }

/// Stacked.
#[rate_limit(prefix = "one_line_a:", max = 5)]
#[rate_limit(prefix = "one_line_b:", max = 5)]
pub async fn stacked() -> Result<(), RateLimited> { Ok(()) }

/// A calendar quota, in each call's zone.
#[rate_limit(prefix = "one_line_calendar:", max = 5, period = day, tz = zone)]
pub async fn calendar(zone: &Zone) -> Result<(), RateLimited> { Ok(()) }

/// A method.
pub struct One;

impl One {
    /// `&self`.
    #[rate_limit(prefix = "one_line_method:", max = 5)]
    pub async fn method(&self) -> Result<(), RateLimited> { Ok(()) }
}

/// An `#[async_trait]` trait.
#[async_trait::async_trait]
pub trait OneLine {
    /// `&self`.
    async fn call(&self) -> Result<(), RateLimited>;
}

#[async_trait::async_trait]
impl OneLine for One {
    #[rate_limit(prefix = "one_line_trait:", max = 5)]
    async fn call(&self) -> Result<(), RateLimited> { Ok(()) }
}
