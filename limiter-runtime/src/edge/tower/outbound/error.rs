//! [`OutboundError`]: a request through an [`OutboundLayer`](super::OutboundLayer) refused its turn, or
//! failed upstream.

use std::fmt;

use crate::RateLimited;

/// What a request through an [`OutboundLayer`](super::OutboundLayer) fails with.
#[derive(Debug)]
pub enum OutboundError<E> {
    /// Its turn did not come within its deadline; nothing was sent. [`RateLimited::retry_after`] says how
    /// long it would have waited.
    Limited(RateLimited),
    /// The service behind the layer failed (the request was sent, or tried).
    Upstream(E),
}

impl<E: fmt::Display> fmt::Display for OutboundError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutboundError::Limited(limited) => write!(f, "the upstream's limit: {limited}"),
            OutboundError::Upstream(error) => write!(f, "the upstream call failed: {error}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for OutboundError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OutboundError::Limited(limited) => Some(limited),
            OutboundError::Upstream(error) => Some(error),
        }
    }
}
