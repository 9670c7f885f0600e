//! The HTTP quota fields, written in one place, and `RateLimited` as an HTTP response (features `axum`,
//! `tower`).
//!
//! The fields follow draft-ietf-httpapi-ratelimit-headers-11, one list member per policy that applies to the
//! call, each named by the limit's policy name (its `policy`, else a digest of its prefix: see
//! [`RateLimited::policy`]):
//!
//! ```text
//! RateLimit-Policy: "per-client";q=100;w=60, "employee";q=5;w=10
//! RateLimit: "per-client";r=99;t=60, "employee";r=4;t=10
//! ```
//!
//! - `q` is the limit (admissions per window) and `w` its window in seconds, rounded up; a limit of calls in
//!   flight ([`Rule::in_flight`](crate::Rule::in_flight)) is `q` calls at once, `qu="concurrent-requests"`,
//!   with no `w` (and no `t` in `RateLimit`);
//! - `r` is what remains of it, and `t` the seconds, rounded up, within which no more than `r` can be used:
//!   for a limit that refused the call, until it would admit it (its `retry_after`); for one that admitted
//!   it, until it is whole again (its `reset_after`).
//!
//! A reached limit answers `429 Too Many Requests` with `Retry-After`: the seconds until every limit that
//! refused the call would admit it, so never earlier than the `t` of a policy that refused it. A call over this
//! node's share while Redis is down (`on_error = local`) is a reached limit too. An unavailable limiter
//! (`on_error = closed` while Redis is down) is `503 Service Unavailable` with `Retry-After`: not the client's
//! fault. A call that weighs more than its limit can ever admit ([`Reason::TooLarge`]) is `413 Content Too
//! Large`, with no `Retry-After`: no wait admits it. A misconfigured limit, one of zero
//! ([`Reason::Misconfigured`]), is `500 Internal Server Error`, with no `Retry-After` and no quota fields: the
//! server's mistake. Shadow limits, skipped limits and decisions made without a count (`on_error = open |
//! closed` while Redis fails) are not advertised.
//!
//! With the `axum` feature a handler returns `Result<T, RateLimited>` (or an axum `Response`) and a rejection
//! answers for itself, its body as plain text: the limit's message, then the policy that refused the call
//! (`slow down. Refused by the policy "employee".`; `Banned by the policy "logins" for 3600 seconds.` while
//! its key is blocked: [`RateLimited::text`]); the tower layer ([`crate::tower`]) writes
//! the same fields on every response, 2xx included, for every limit decided while serving it, and answers a
//! handler's rejection in the format it answers its own (a problem document for a client that accepts one).
//! A handler with `in_flight` written to return a `Response` holds its permit until the response body ends.
//!
//! ```
//! # #[cfg(feature = "axum")] {
//! use axum::{routing::get, Json, Router};
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! #[rate_limit(key = id, max = 5, window = 10, policy = "employee")]
//! async fn employee(axum::extract::Path(id): axum::extract::Path<String>) -> Result<Json<String>, RateLimited> {
//!     Ok(Json(id))
//! }
//!
//! let app: Router = Router::new().route("/employees/{id}", get(employee));
//! # }
//! ```

use std::fmt::Write as _;
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use http::StatusCode;

#[cfg(feature = "axum")]
use crate::__private::{Rejection, Streamed};
use crate::clock::ceil_secs;
#[cfg(feature = "axum")]
use crate::edge::body::HoldingBody;
use crate::policy::Applied;
#[cfg(feature = "axum")]
use crate::Permit;
use crate::{Decision, RateLimited, Reason};

/// `RateLimit-Policy`: the quota policies that applied to the request.
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit`: what is left of each of those quotas, and for how long.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");

impl RateLimited {
    /// Returns `429 Too Many Requests` for a reached limit, `503 Service Unavailable` when the limiter could not
    /// decide, `413 Content Too Large` for a call that weighs more than its limit can ever admit, `500 Internal
    /// Server Error` for a misconfigured limit.
    pub fn status(&self) -> StatusCode {
        match self.reason() {
            Reason::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Reason::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Reason::Misconfigured => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::TOO_MANY_REQUESTS,
        }
    }

    /// Returns `Retry-After` (none for a call no wait admits, nor for a misconfigured limit), and `RateLimit-Policy`
    /// and `RateLimit` for every limit of the call that is advertised (none when the limiter could not decide,
    /// nor for a misconfigured limit).
    pub fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if !matches!(self.reason(), Reason::TooLarge | Reason::Misconfigured) {
            headers.insert(RETRY_AFTER, HeaderValue::from(self.retry_after_secs()));
        }
        write_quota_fields(&mut headers, self.advertised());
        headers
    }

    /// Returns the body of its plain-text response: the limit's message first, then a short sentence naming the
    /// policy that refused the call, as the quota fields name it (`Refused by the policy "per-client".`), or,
    /// when its key is blocked (a penalty's block, an operator's ban, an upstream's pause:
    /// [`Verdict::Blocked`](crate::Verdict::Blocked)), saying it is banned and for how long (`Banned by the
    /// policy "logins" for 3600 seconds.`). A misconfigured limit's message names its policy already.
    pub fn text(&self) -> String {
        let message = self.message().trim_end();
        let policy = self.policy();
        let sentence = match self.reason() {
            Reason::Misconfigured => return format!("{message}."),
            Reason::Unavailable => format!("The policy \"{policy}\" could not be checked."),
            Reason::TooLarge => {
                format!("Refused by the policy \"{policy}\": no wait admits a call this large.")
            }
            _ if self.decision().verdict == crate::Verdict::Blocked => {
                match ceil_secs(self.retry_after()) {
                    0 => format!("Banned by the policy \"{policy}\"."),
                    1 => format!("Banned by the policy \"{policy}\" for 1 second."),
                    secs => format!("Banned by the policy \"{policy}\" for {secs} seconds."),
                }
            }
            _ => format!("Refused by the policy \"{policy}\"."),
        };
        let separator = match message.chars().last() {
            None => "",
            Some('.' | '!' | '?') => " ",
            Some(_) => ". ",
        };
        format!("{message}{separator}{sentence}")
    }

    /// Returns whole seconds until every limit that refused the call would admit it (at least 1): `Retry-After`.
    pub(crate) fn retry_after_secs(&self) -> u64 {
        let refused = self
            .advertised()
            .filter(|(_, decision, _)| !decision.allowed)
            .map(|(_, decision, _)| decision.retry_after);
        let wait = refused.fold(self.retry_after(), Duration::max);
        ceil_secs(wait).max(1)
    }
}

/// The answer to a refused call: its status, `Retry-After` and the quota fields, and its
/// [`text`](RateLimited::text) (the limit's message, and the policy that refused it) as plain text. The
/// response carries the `RateLimited` in its extensions, so that a tower layer in front answers it in the
/// request's format, as it answers its own refusals (a `quota-exceeded` problem document for a client that
/// accepts `application/problem+json`).
#[cfg(feature = "axum")]
impl axum::response::IntoResponse for RateLimited {
    fn into_response(self) -> axum::response::Response {
        let mut headers = self.headers();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        let (status, text) = (self.status(), self.text());
        (status, headers, axum::Extension(self), text).into_response()
    }
}

/// A handler written to return an axum `Response` answers a rejection as one.
#[cfg(feature = "axum")]
impl Rejection for axum::response::Response {
    fn rejected(error: RateLimited) -> Self {
        axum::response::IntoResponse::into_response(error)
    }
}

/// A handler with a limit in flight written to return an axum `Response`: its body holds the permits until it
/// ends or is dropped, as the tower layer's responses do.
#[cfg(feature = "axum")]
impl Streamed for axum::response::Response {
    fn hold(&mut self, permit: Permit) -> Option<Permit> {
        let body = std::mem::take(self.body_mut());
        let held = HoldingBody::new(body, Some(permit));
        *self.body_mut() = axum::body::Body::new(held);
        None
    }
}

/// Writes the quota fields of `quotas` (policy name, decision) into `headers`, replacing any there: one
/// `RateLimit-Policy` and one `RateLimit` field, one list member per policy. Nothing when `quotas` is empty.
pub(crate) fn write_quota_fields<'a>(
    headers: &mut HeaderMap,
    quotas: impl IntoIterator<Item = (&'a str, &'a Decision, &'a Applied)>,
) {
    let (mut policies, mut states) = (String::new(), String::new());
    for (name, decision, applied) in quotas {
        let separator = if policies.is_empty() { "" } else { ", " };
        let window = ceil_secs(decision.window).max(1);
        let until = if decision.allowed {
            decision.reset_after
        } else {
            decision.retry_after
        };
        // Writing into a String cannot fail.
        let _ = write!(policies, "{separator}");
        write_name(&mut policies, name);
        // The plan the call was on, and whether an override set the limit (parameters a client that does not
        // know them skips).
        if let Some(plan) = &applied.plan {
            policies.push_str(";plan=");
            write_name(&mut policies, plan);
        }
        if applied.overridden {
            policies.push_str(";override");
        }
        let _ = write!(states, "{separator}");
        write_name(&mut states, name);
        if decision.in_flight {
            // Calls at once: no window, and no time within which a permit comes back.
            let _ = write!(policies, ";q={};qu=\"concurrent-requests\"", decision.limit);
            let _ = write!(states, ";r={}", decision.remaining);
            continue;
        }
        let _ = write!(policies, ";q={};w={window}", decision.limit);
        let _ = write!(states, ";r={};t={}", decision.remaining, ceil_secs(until));
    }
    if policies.is_empty() {
        return;
    }
    for (field, value) in [(RATELIMIT_POLICY, policies), (RATELIMIT, states)] {
        // Only printable ASCII was written: always a valid field value.
        if let Ok(value) = HeaderValue::try_from(value) {
            headers.insert(field, value);
        }
    }
}

/// Writes a policy name as a structured-field string: printable ASCII, `"` and `\` escaped, anything else `_`, and
/// `default` when empty.
fn write_name(out: &mut String, name: &str) {
    let name = if name.is_empty() { "default" } else { name };
    out.push('"');
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => out.push('_'),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(name: &str) -> String {
        let mut out = String::new();
        write_name(&mut out, name);
        out
    }

    /// Returns the rejection of a call by the policy `per-client`, with `message`, for `reason`, of `verdict`, `wait` µs
    /// to retry after.
    fn refused(
        message: &'static str,
        reason: Reason,
        verdict: crate::Verdict,
        wait: u64,
    ) -> RateLimited {
        use crate::algorithm::{Outcome, Terms};
        let charge = Terms {
            window: 10_000_000,
            max: 5,
            cost: 1,
            burst: 5,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        };
        let mut decision = Decision::new(&charge, Outcome::denied(0, wait, wait), 0, false);
        decision.verdict = verdict;
        let policy = crate::policy::PolicyName::named("per-client".into());
        let key = crate::key::StoreKey::of_str("p:", "k");
        RateLimited::new(
            message.into(),
            (policy, Default::default()),
            key,
            decision,
            true,
            Vec::new(),
            reason,
        )
    }

    /// Checks that the plain text is the message, then one sentence naming the policy: banned (for how long, when
    /// known) for a blocked key, too large, unavailable; the message's own full stop is not doubled.
    #[test]
    fn the_text_names_the_policy_after_the_message() {
        use crate::Verdict::{Blocked, Limited, Unavailable};
        let text = |message, reason, verdict, wait| refused(message, reason, verdict, wait).text();
        let cases = [
            (
                text("slow down", Reason::Limited, Limited, 2_500_000),
                "slow down. Refused by the policy \"per-client\".",
            ),
            (
                text("Slow down!", Reason::Limited, Limited, 1),
                "Slow down! Refused by the policy \"per-client\".",
            ),
            (
                text("", Reason::Limited, Limited, 1),
                "Refused by the policy \"per-client\".",
            ),
            (
                text("go away.", Reason::Limited, Blocked, 3_599_000_001),
                "go away. Banned by the policy \"per-client\" for 3600 seconds.",
            ),
            (
                text("go away", Reason::Limited, Blocked, 1),
                "go away. Banned by the policy \"per-client\" for 1 second.",
            ),
            (
                text("go away", Reason::Limited, Blocked, 0),
                "go away. Banned by the policy \"per-client\".",
            ),
            (
                text("heavy", Reason::TooLarge, Limited, 0),
                "heavy. Refused by the policy \"per-client\": no wait admits a call this large.",
            ),
            (
                text("x", Reason::Unavailable, Unavailable, 1),
                "rate limiting is unavailable; please try again later. The policy \"per-client\" could not \
                 be checked.",
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(text, expected);
        }
    }

    #[test]
    fn names_are_structured_field_strings() {
        assert_eq!(name("rate_limit:emp:"), "\"rate_limit:emp:\"");
        assert_eq!(name("a\"b\\c é"), "\"a\\\"b\\\\c _\"");
        assert_eq!(name(""), "\"default\"");
    }
}
