//! What a rejection says over gRPC, in one place: a tonic `Status` (feature `tonic`), and the same status as
//! the tower layer answers a gRPC request it refuses (feature `tower`).
//!
//! - A reached limit is `RESOURCE_EXHAUSTED`; an unavailable limiter (`on_error = closed` while Redis is
//!   down) is `UNAVAILABLE`: not the client's fault. A misconfigured limit, one of zero
//!   ([`Reason::Misconfigured`](crate::Reason::Misconfigured)), is `INTERNAL`, as HTTP's 500: the server's
//!   own mistake, which no retry mends until the rule is fixed (`FAILED_PRECONDITION` would tell the client
//!   to change the state of the system first, and maps to HTTP 400, the client's fault).
//! - The message is the limit's message. The metadata says when to come back, as gRPC clients read it:
//!   `grpc-retry-pushback-ms` (milliseconds, what gRPC's own retry policy obeys) and `retry-after` (whole
//!   seconds, rounded up, as over HTTP). A call that weighs more than its limit can ever admit
//!   ([`Reason::TooLarge`](crate::Reason::TooLarge)), or of a misconfigured limit, says
//!   `grpc-retry-pushback-ms: -1`: do not retry.
//!
//! ```
//! # #[cfg(feature = "tonic")] {
//! use limiter_runtime::{Limiter, Rule};
//!
//! async fn say_hello(limiter: &Limiter, caller: &str) -> Result<String, tonic::Status> {
//!     limiter.enforce(&Rule::new().prefix("hello:").max(5), caller).await?;
//!     Ok(format!("hello, {caller}"))
//! }
//! # }
//! ```

#[cfg(feature = "tonic")]
use crate::__private::Streamed;
use crate::clock::{ceil_millis, ceil_secs};
#[cfg(feature = "tonic")]
use crate::Permit;
use crate::{RateLimited, Reason};

/// gRPC's `RESOURCE_EXHAUSTED`, `INTERNAL` and `UNAVAILABLE` codes.
const RESOURCE_EXHAUSTED: i32 = 8;
const INTERNAL: i32 = 13;
const UNAVAILABLE: i32 = 14;

/// Returns the status code of `rejection`.
fn code(rejection: &RateLimited) -> i32 {
    match rejection.reason() {
        Reason::Unavailable => UNAVAILABLE,
        Reason::Misconfigured => INTERNAL,
        _ => RESOURCE_EXHAUSTED,
    }
}

/// Returns the metadata saying when to come back; for a call no wait admits (or a misconfigured limit's), a
/// negative pushback, which gRPC reads as "do not retry", and no `retry-after`.
fn retry_metadata(rejection: &RateLimited) -> Vec<(&'static str, i64)> {
    if matches!(rejection.reason(), Reason::TooLarge | Reason::Misconfigured) {
        return vec![("grpc-retry-pushback-ms", -1)];
    }
    let wait = rejection.retry_after();
    let whole = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    vec![
        ("grpc-retry-pushback-ms", whole(ceil_millis(wait))),
        ("retry-after", whole(ceil_secs(wait).max(1))),
    ]
}

/// A method with a limit in flight written to return a `tonic::Response`: its permits are given back when it
/// returns (its message or stream cannot be wrapped without changing its type). The tower layer in front holds
/// its own permits until a streamed response ends.
#[cfg(feature = "tonic")]
impl<T> Streamed for tonic::Response<T> {
    fn hold(&mut self, permit: Permit) -> Option<Permit> {
        Some(permit)
    }
}

#[cfg(feature = "tonic")]
impl From<RateLimited> for tonic::Status {
    fn from(rejection: RateLimited) -> tonic::Status {
        let code = tonic::Code::from_i32(code(&rejection));
        let mut status = tonic::Status::new(code, rejection.message());
        for (name, value) in retry_metadata(&rejection) {
            status
                .metadata_mut()
                .insert(name, tonic::metadata::MetadataValue::from(value));
        }
        status
    }
}

/// Writes `rejection` as the headers of a gRPC "trailers-only" response (HTTP 200, the status in the
/// headers): what a gRPC client reads as the call's status and metadata.
#[cfg(feature = "tower")]
pub(crate) fn write_status(rejection: &RateLimited, headers: &mut http::HeaderMap) {
    use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(
        HeaderName::from_static("grpc-status"),
        HeaderValue::from(code(rejection)),
    );
    if let Ok(message) = HeaderValue::try_from(percent_encoded(rejection.message())) {
        headers.insert(HeaderName::from_static("grpc-message"), message);
    }
    for (name, value) in retry_metadata(rejection) {
        headers.insert(HeaderName::from_static(name), HeaderValue::from(value));
    }
}

/// Encodes `message` as `grpc-message` carries it: bytes outside printable ASCII, and `%`, percent-encoded.
#[cfg(feature = "tower")]
fn percent_encoded(message: &str) -> String {
    use std::fmt::Write as _;
    let mut encoded = String::with_capacity(message.len());
    for byte in message.bytes() {
        match byte {
            b' '..=b'~' if byte != b'%' => encoded.push(char::from(byte)),
            // Writing into a String cannot fail.
            _ => drop(write!(encoded, "%{byte:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::algorithm::{Outcome, Terms};
    use crate::key::StoreKey;
    use crate::policy::PolicyName;
    use crate::Decision;

    fn rejection(reason: Reason) -> RateLimited {
        let charge = Terms {
            window: 10_000_000,
            max: 5,
            cost: 9,
            burst: 5,
            max_wait: 0,
            ends: [0; 3],
            kept: 0,
        };
        let decision = Decision::new(&charge, Outcome::denied(5, 2_500_000, 0), 0, false);
        let policy = PolicyName::named("p".into());
        let key = StoreKey::of_str("p:", "k");
        RateLimited::new(
            "no".into(),
            (policy, Default::default()),
            key,
            decision,
            true,
            Vec::new(),
            reason,
        )
    }

    /// Checks that a reached limit says when to come back; a call no wait admits says not to retry at all.
    #[test]
    fn the_metadata_says_when_to_come_back_or_not_to() {
        assert_eq!(
            retry_metadata(&rejection(Reason::Limited)),
            [("grpc-retry-pushback-ms", 2_500), ("retry-after", 3)]
        );
        assert_eq!(
            retry_metadata(&rejection(Reason::TooLarge)),
            [("grpc-retry-pushback-ms", -1)]
        );
        let misconfigured = rejection(Reason::Misconfigured);
        assert_eq!(
            retry_metadata(&misconfigured),
            [("grpc-retry-pushback-ms", -1)]
        );
        assert_eq!(code(&misconfigured), INTERNAL);
    }

    #[cfg(feature = "tower")]
    #[test]
    fn messages_are_percent_encoded_as_grpc_reads_them() {
        assert_eq!(percent_encoded("slow down"), "slow down");
        assert_eq!(percent_encoded("100% é"), "100%25 %C3%A9");
        assert_eq!(percent_encoded("a\nb"), "a%0Ab");
    }
}
