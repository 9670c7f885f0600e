//! The service edges: what a decision says over HTTP (the quota fields, a rejection as a response) and gRPC
//! (a status), the tower layer in front of a service, the record of the quotas a response advertises, and the
//! operators' admin router.
//! Each builds on the public API and the pipeline's report of decisions; nothing below depends on them.

#[cfg(feature = "admin")]
pub mod admin;
#[cfg(any(feature = "axum", feature = "tower"))]
pub(crate) mod body;
#[cfg(any(feature = "tonic", feature = "tower"))]
pub(crate) mod grpc;
#[cfg(any(feature = "axum", feature = "tower"))]
pub mod http;
#[cfg(feature = "tower")]
pub(crate) mod quota;
#[cfg(feature = "tower")]
pub mod tower;
