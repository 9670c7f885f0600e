//! Handlers written to return an HTTP response (feature `axum`): the response's body holds the permit in
//! flight until it ends.

use axum::response::{IntoResponse, Response};
use limiter_runtime::{rate_limit, RateLimited};

use crate::AppError;

/// A bare `Response`, with a limit in flight: a refusal is a response too.
#[rate_limit(prefix = "bare:", key = tenant, in_flight = 2)]
pub async fn bare(tenant: &str) -> Response {
    tenant.to_owned().into_response()
}

/// A `Result` of one, beside a rate that counts failures, with statements and `?`.
#[rate_limit(prefix = "counted:", key = tenant, max = 10, in_flight = 2, count = failures)]
pub async fn counted(tenant: &str) -> Result<axum::response::Response, AppError> {
    if tenant.is_empty() {
        return Err(AppError::Failed);
    }
    let length: Result<usize, AppError> = Ok(tenant.len());
    Ok(length?.to_string().into_response())
}

/// A bare `Response` with a rate alone.
#[rate_limit(prefix = "rated:", max = 5)]
pub async fn rated() -> Response {
    "rated".into_response()
}

/// Through an alias named otherwise: the permit ends with the function.
pub type Reply = Result<Response, RateLimited>;

/// See [`Reply`].
#[rate_limit(prefix = "aliased:", in_flight = 2)]
pub async fn aliased() -> Reply {
    Ok("aliased".into_response())
}
