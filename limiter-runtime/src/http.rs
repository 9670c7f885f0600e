//! `RateLimited` as an HTTP response (feature `axum`): a handler returns `Result<T, RateLimited>` and a
//! rejection answers for itself.
//!
//! - A reached limit is `429 Too Many Requests` with `Retry-After` (seconds) and the IETF fields of
//!   draft-ietf-httpapi-ratelimit-headers-09: `RateLimit-Policy: "<name>";q=<limit>;w=<window s>` and
//!   `RateLimit: "<name>";r=<remaining>;t=<reset s>`, the policy named by the limit's `name` (by default,
//!   `limit-` and a digest of its prefix, which does not show it). A call over this node's share while Redis is down (`on_error = local`) is a reached
//!   limit too.
//! - An unavailable limiter (`on_error = closed` while Redis is down) is `503 Service Unavailable` with
//!   `Retry-After`: not the client's fault.
//!
//! The body is the limit's message, as plain text.
//!
//! ```
//! use axum::{routing::get, Json, Router};
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! #[rate_limit(key = id, max = 5, window = 10)]
//! async fn employee(axum::extract::Path(id): axum::extract::Path<String>) -> Result<Json<String>, RateLimited> {
//!     Ok(Json(id))
//! }
//!
//! let app: Router = Router::new().route("/employees/{id}", get(employee));
//! ```

use axum_core::response::{IntoResponse, Response};
use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::StatusCode;

use crate::clock::ceil_secs;
use crate::{RateLimited, Reason};

/// `RateLimit-Policy`: the quota policy of the limit that answered.
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`: what is left of that quota, and when it resets.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

impl RateLimited {
    /// `429 Too Many Requests` for a reached limit, `503 Service Unavailable` when the limiter could not decide.
    pub fn status(&self) -> StatusCode {
        match self.reason() {
            Reason::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// `Retry-After`, and for a reached limit `RateLimit-Policy` and `RateLimit`.
    pub fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from(ceil_secs(self.retry_after()).max(1)),
        );
        if self.reason() == Reason::Limited {
            let name = policy_name(self.policy());
            let policy = format!(
                "{name};q={};w={}",
                self.limit(),
                ceil_secs(self.decision().window)
            );
            let state = format!(
                "{name};r={};t={}",
                self.remaining(),
                ceil_secs(self.reset_after())
            );
            for (header, value) in [(RATELIMIT_POLICY, policy), (RATELIMIT, state)] {
                if let Ok(value) = HeaderValue::try_from(value) {
                    headers.insert(header, value);
                }
            }
        }
        headers
    }
}

impl IntoResponse for RateLimited {
    fn into_response(self) -> Response {
        let mut headers = self.headers();
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        (self.status(), headers, self.message().to_owned()).into_response()
    }
}

/// The limit's prefix as a structured-field string: printable ASCII, `"` and `\` escaped.
fn policy_name(prefix: &str) -> String {
    let prefix = if prefix.is_empty() { "default" } else { prefix };
    let mut name = String::with_capacity(prefix.len() + 2);
    name.push('"');
    for c in prefix.chars() {
        match c {
            '"' | '\\' => {
                name.push('\\');
                name.push(c);
            }
            ' '..='~' => name.push(c),
            _ => name.push('_'),
        }
    }
    name.push('"');
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_structured_field_strings() {
        assert_eq!(policy_name("rate_limit:emp:"), "\"rate_limit:emp:\"");
        assert_eq!(policy_name("a\"b\\c é"), "\"a\\\"b\\\\c _\"");
        assert_eq!(policy_name(""), "\"default\"");
    }
}
