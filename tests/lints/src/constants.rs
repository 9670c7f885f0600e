//! `max`, `burst`, `lease` and the duration arguments' whole seconds as constants: items of every integer type,
//! paths to them, and constant expressions.

use limiter_runtime::{rate_limit, RateLimited};

/// Admissions per window, `u64`.
pub const MAX: u64 = 100;
/// An hour, in seconds, `u32`.
pub const HOUR: u32 = 3600;

/// Limits kept together, of several integer types.
pub mod limits {
    /// `u32`.
    pub const LOGIN: u32 = 5;
    /// `usize`.
    pub const UPLOADS: usize = 10;
    /// `i64`, positive.
    pub const SIGNED: i64 = 7;
    /// `u8`.
    pub const SMALL: u8 = 3;
    /// `u128`, within `u64`.
    pub const WIDE: u128 = 1_000_000;
    /// `i128`.
    pub const WIDE_SIGNED: i128 = 2;
    /// `isize`, `i8`, `i16`, `u16`.
    pub const SIZES: (isize, i8, i16, u16) = (1, 2, 3, 4);
    /// Units of a lease.
    pub const LEASE: u16 = 50;
}

/// `max = MAX`.
#[rate_limit(prefix = "const_max:", max = MAX)]
pub async fn max() -> Result<(), RateLimited> {
    Ok(())
}

/// A path and an expression: `max = limits::LOGIN * 2`, `window = HOUR`.
#[rate_limit(prefix = "const_login:", key = user, max = limits::LOGIN * 2, window = HOUR)]
pub async fn login(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

/// Every integer type.
#[rate_limit(prefix = "const_usize:", max = limits::UPLOADS)]
#[rate_limit(prefix = "const_i64:", max = limits::SIGNED)]
#[rate_limit(prefix = "const_u8:", max = limits::SMALL)]
#[rate_limit(prefix = "const_u128:", max = limits::WIDE)]
#[rate_limit(prefix = "const_i128:", max = limits::WIDE_SIGNED)]
#[rate_limit(prefix = "const_isize:", max = limits::SIZES.0)]
#[rate_limit(prefix = "const_i8:", max = limits::SIZES.1)]
#[rate_limit(prefix = "const_i16:", max = limits::SIZES.2)]
#[rate_limit(prefix = "const_u16:", max = limits::SIZES.3)]
pub async fn every_type() -> Result<(), RateLimited> {
    Ok(())
}

/// `burst = 2 * MAX`, `lease = limits::LEASE`.
#[rate_limit(prefix = "const_bucket:", algorithm = token_bucket, max = MAX, burst = 2 * MAX, lease = limits::LEASE)]
pub async fn bucket() -> Result<(), RateLimited> {
    Ok(())
}

/// The other duration arguments in whole seconds: `max_wait = ...`, `lease_ttl = ...`.
#[rate_limit(prefix = "const_wait:", algorithm = leaky_bucket, max = MAX, window = HOUR / 60, mode = wait, max_wait = HOUR / 1800)]
#[rate_limit(prefix = "const_ttl:", algorithm = fixed_window, max = MAX, lease = 10, lease_ttl = limits::SMALL)]
pub async fn durations() -> Result<(), RateLimited> {
    Ok(())
}

/// A constant block and a `const fn`.
#[rate_limit(prefix = "const_block:", max = const { MAX + 1 }, window = seconds(2))]
pub async fn block() -> Result<(), RateLimited> {
    Ok(())
}

/// Minutes as seconds, in a `const fn`.
pub const fn seconds(minutes: u64) -> u64 {
    minutes * 60
}

/// `in_flight = ...` from a constant.
#[rate_limit(prefix = "const_in_flight:", in_flight = limits::SMALL, in_flight_ttl = HOUR / 120)]
pub async fn in_flight() -> Result<(), RateLimited> {
    Ok(())
}
