//! `RateLimited` as a gRPC status (feature `tonic`): a service method returning `Result<_, tonic::Status>`
//! answers a rejection with `?`.
//!
//! - A reached limit is `RESOURCE_EXHAUSTED`; an unavailable limiter (`on_error = closed` while Redis is
//!   down) is `UNAVAILABLE`: not the client's fault.
//! - The message is the limit's message. The metadata says when to come back, as gRPC clients read it:
//!   `grpc-retry-pushback-ms` (milliseconds, what gRPC's own retry policy obeys) and `retry-after` (whole
//!   seconds, rounded up, as over HTTP).
//!
//! ```
//! use limiter_runtime::{Limiter, Rule};
//!
//! async fn say_hello(limiter: &Limiter, caller: &str) -> Result<String, tonic::Status> {
//!     limiter.enforce(&Rule::new().prefix("hello:").max(5), caller).await?;
//!     Ok(format!("hello, {caller}"))
//! }
//! ```

use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

use crate::clock::{ceil_millis, ceil_secs};
use crate::{RateLimited, Reason};

impl From<RateLimited> for Status {
    fn from(rejection: RateLimited) -> Status {
        let code = match rejection.reason() {
            Reason::Unavailable => Code::Unavailable,
            _ => Code::ResourceExhausted,
        };
        let mut status = Status::new(code, rejection.message());
        let wait = rejection.retry_after();
        let metadata = status.metadata_mut();
        metadata.insert(
            "grpc-retry-pushback-ms",
            MetadataValue::from(ceil_millis(wait)),
        );
        metadata.insert("retry-after", MetadataValue::from(ceil_secs(wait).max(1)));
        status
    }
}
