//! Every argument of the attribute, each written in every form it takes.

use limiter_runtime::{rate_limit, Priority, RateLimited, Zone};

use crate::AppError;

/// A user, whose fields the arguments read.
pub struct User {
    /// Keys the limits.
    pub id: u64,
    /// Skips them.
    pub admin: bool,
}

/// `prefix`, `key`, `window` in seconds, `max`, `message`, `name`.
#[rate_limit(prefix = "emp:", key = id, window = 10, max = 5, message = "slow down", policy = "employees")]
pub async fn texts(id: &str) -> Result<(), AppError> {
    Ok(())
}

/// A key list over arguments, their fields and method calls.
#[rate_limit(key = (tenant, user.id, region.to_lowercase()), max = 5)]
pub async fn key_list(tenant: &str, user: &User, region: String) -> Result<(), RateLimited> {
    Ok(())
}

/// `cost`, from an argument the body also uses.
#[rate_limit(key = user, max = 1000, window = "1h", cost = rows.len())]
pub async fn cost(user: &str, rows: Vec<String>) -> Result<usize, RateLimited> {
    Ok(rows.len())
}

/// `skip_if` over an argument's field.
#[rate_limit(key = user.id, max = 5, skip_if = user.admin)]
pub async fn skip_if(user: &User) -> Result<(), RateLimited> {
    Ok(())
}

/// `shadow`.
#[rate_limit(max = 5, shadow = true)]
pub async fn shadow() -> Result<(), RateLimited> {
    Ok(())
}

/// `shadow = false`.
#[rate_limit(max = 5, shadow = false)]
pub async fn not_shadow() -> Result<(), RateLimited> {
    Ok(())
}

/// `count = failures`, one expression.
#[rate_limit(prefix = "failed_logins:", key = user, max = 5, window = "15m", count = failures)]
pub async fn count_failures(user: &str, password: &str) -> Result<(), AppError> {
    if password == "hunter2" {
        Ok(())
    } else {
        Err(AppError::Failed)
    }
}

/// `count = successes`, with `return` and `?` in the body.
#[rate_limit(key = input, max = 5, count = successes)]
pub async fn count_successes(input: &str) -> Result<u32, AppError> {
    if input.is_empty() {
        return Err(AppError::Failed);
    }
    let value: u32 = input.parse().map_err(|_| AppError::Failed)?;
    Ok(value)
}

/// `count = all`, as if left out.
#[rate_limit(max = 5, count = all)]
pub async fn count_all() -> Result<(), RateLimited> {
    Ok(())
}

/// `count = successes`, one expression of unit.
#[rate_limit(max = 5, count = successes)]
pub async fn count_unit() -> Result<(), RateLimited> {
    Ok(())
}

/// Every algorithm.
#[rate_limit(prefix = "log:", algorithm = sliding_log, max = 2)]
pub async fn sliding_log() -> Result<(), RateLimited> {
    Ok(())
}

/// `fixed_window`.
#[rate_limit(prefix = "fixed:", algorithm = fixed_window, max = 2)]
pub async fn fixed_window() -> Result<(), RateLimited> {
    Ok(())
}

/// `sliding_window`.
#[rate_limit(prefix = "sliding:", algorithm = sliding_window, max = 2)]
pub async fn sliding_window() -> Result<(), RateLimited> {
    Ok(())
}

/// `token_bucket` with `burst`.
#[rate_limit(prefix = "bucket:", algorithm = token_bucket, max = 1, burst = 2)]
pub async fn token_bucket() -> Result<(), RateLimited> {
    Ok(())
}

/// `leaky_bucket`, `mode = reject`.
#[rate_limit(prefix = "leaky:", algorithm = leaky_bucket, max = 1, mode = reject)]
pub async fn leaky_bucket() -> Result<(), RateLimited> {
    Ok(())
}

/// `mode = wait`.
#[rate_limit(prefix = "shaped:", key = request, algorithm = leaky_bucket, max = 10, window = "1s", mode = wait)]
pub async fn wait(request: &str) -> Result<(), RateLimited> {
    Ok(())
}

/// `mode = wait` with `max_wait`.
#[rate_limit(prefix = "shaped2:", key = request, algorithm = leaky_bucket, max = 10, window = 1, mode = wait, max_wait = "2s")]
pub async fn max_wait(request: &str) -> Result<(), RateLimited> {
    Ok(())
}

/// `lease` and `lease_ttl`.
#[rate_limit(prefix = "leased:", key = event, algorithm = token_bucket, max = 1_000_000, window = 1, lease = 1000, lease_ttl = "250ms")]
pub async fn lease(event: &str) -> Result<(), RateLimited> {
    Ok(())
}

/// Durations of several units, and a day: `window`, `max_wait`, `lease_ttl`.
#[rate_limit(prefix = "units:", algorithm = leaky_bucket, max = 10, window = "1d12h", mode = wait, max_wait = "1m30s")]
#[rate_limit(prefix = "units_leased:", algorithm = token_bucket, max = 10, window = "1d", lease = 5, lease_ttl = "1s500ms")]
pub async fn duration_units() -> Result<(), RateLimited> {
    Ok(())
}

/// `lease` on a fixed window, without `lease_ttl`.
#[rate_limit(prefix = "leased2:", algorithm = fixed_window, max = 100, lease = 10)]
pub async fn lease_fixed() -> Result<(), RateLimited> {
    Ok(())
}

/// `on_error = open`.
#[rate_limit(prefix = "open:", max = 5, on_error = open)]
pub async fn on_error_open() -> Result<(), RateLimited> {
    Ok(())
}

/// `on_error = closed`.
#[rate_limit(prefix = "closed:", max = 5, on_error = closed)]
pub async fn on_error_closed() -> Result<(), RateLimited> {
    Ok(())
}

/// `on_error = local`.
#[rate_limit(prefix = "local:", max = 5, on_error = local)]
pub async fn on_error_local() -> Result<(), RateLimited> {
    Ok(())
}

/// The runtime, re-exported under another path.
pub mod rt {
    pub use limiter_runtime::*;
}

/// `crate = "..."`.
#[rt::rate_limit(crate = "crate::arguments::rt", key = id, max = 5)]
pub async fn krate(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

/// The attribute without arguments.
#[rate_limit]
pub async fn no_arguments() -> Result<(), RateLimited> {
    Ok(())
}

/// The attribute with empty parentheses.
#[rate_limit()]
pub async fn empty_arguments() -> Result<(), RateLimited> {
    Ok(())
}

/// `in_flight = ...` alone: at most two bodies at once per key.
#[rate_limit(prefix = "uploads:", key = tenant, in_flight = 2)]
pub async fn in_flight(tenant: &str) -> Result<usize, RateLimited> {
    Ok(tenant.len())
}

/// `in_flight = ...` beside a rate, with its own time to live and `count = failures`.
#[rate_limit(prefix = "streams:", key = user, max = 10, window = "1m", in_flight = 3, in_flight_ttl = "10s", count = failures)]
pub async fn in_flight_beside_rate(user: &str) -> Result<(), AppError> {
    if user.is_empty() {
        return Err(AppError::Failed);
    }
    Ok(())
}

/// `period = day`, in a zone named when compiled, with a cost.
#[rate_limit(prefix = "daily:", key = tenant, max = 10_000, period = day, tz = "Europe/Berlin", cost = rows.len())]
pub async fn period_day(tenant: &str, rows: Vec<String>) -> Result<usize, RateLimited> {
    Ok(rows.len())
}

/// `period = week`, in UTC, counting failures.
#[rate_limit(prefix = "weekly:", key = user, max = 5, period = week, count = failures)]
pub async fn period_week(user: &str) -> Result<(), AppError> {
    if user.is_empty() {
        return Err(AppError::Failed);
    }
    Ok(())
}

/// `period = month` from a billing day, beside `algorithm = fixed_window`.
#[rate_limit(prefix = "monthly:", key = tenant, max = 1_000_000, period = month, anchor = 31, algorithm = fixed_window)]
pub async fn period_month(tenant: &str) -> Result<(), RateLimited> {
    Ok(())
}

/// A tenant, whose zone a calendar quota counts in.
pub struct Tenant<'a> {
    /// Keys the limit.
    pub id: u64,
    /// Its own time zone.
    pub zone: &'a Zone,
}

/// `tz = <expr>`: each call's zone, a field that is a reference to one.
#[rate_limit(prefix = "tenant_daily:", key = tenant.id, max = 100, period = day, tz = tenant.zone)]
pub async fn tz_field(tenant: &Tenant<'_>) -> Result<u64, RateLimited> {
    Ok(tenant.id)
}

/// `anchor = <expr>`: each call's billing day, with its zone.
#[rate_limit(prefix = "tenant_monthly:", key = tenant.id, max = 100, period = month, tz = tenant.zone, anchor = day)]
pub async fn anchor_argument(tenant: &Tenant<'_>, day: u16) -> Result<u16, RateLimited> {
    Ok(day)
}

/// `tz = <expr>`: a `Zone` argument, borrowed, which the body still owns.
#[rate_limit(prefix = "zone_monthly:", max = 100, period = month, anchor = 15, tz = zone, skip_if = zone == Zone::UTC)]
pub async fn tz_argument(zone: Zone) -> Result<Zone, RateLimited> {
    Ok(zone)
}

/// `priority = <expr>` over an argument's field, with `reserve`'s shares.
#[rate_limit(prefix = "prioritized:", key = user.id, max = 100, priority = if user.admin { Priority::Critical } else { Priority::Normal }, reserve = "critical 10%, high 30%")]
pub async fn priority(user: &User) -> Result<u64, RateLimited> {
    Ok(user.id)
}

/// `priority = <expr>`: a `Priority` argument, copied, which the body still has; skipped, beside `in_flight`.
#[rate_limit(prefix = "prioritized_in_flight:", max = 100, in_flight = 2, priority = level, reserve = "high 50%", skip_if = level == Priority::Low)]
pub async fn priority_argument(level: Priority) -> Result<Priority, RateLimited> {
    Ok(level)
}

/// `priority = "..."`: every call's, named.
#[rate_limit(prefix = "health:", max = 100, priority = "critical")]
pub async fn priority_named() -> Result<(), RateLimited> {
    Ok(())
}
