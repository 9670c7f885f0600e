//! Distributed rate limiting for async Rust, written as one attribute.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! #[derive(Debug)]
//! struct AppError(String);
//!
//! impl From<RateLimited> for AppError {
//!     fn from(e: RateLimited) -> Self {
//!         AppError(e.to_string())
//!     }
//! }
//!
//! #[rate_limit(prefix = "rate_limit:emp:", key = id, window = 10, max = 5, message = "slow down")]
//! async fn get_by_id(id: &str) -> Result<String, AppError> {
//!     Ok(format!("employee {id}"))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! for _ in 0..5 {
//!     assert!(get_by_id("1001").await.is_ok());
//! }
//! assert_eq!(get_by_id("1001").await.unwrap_err().0, "slow down");
//! # }
//! ```
//!
//! Every node asks one [`Limiter`]: in memory by default (each process counts alone), or Redis, where every
//! decision is one atomic script (one round trip, time from Redis itself) and so one global count is shared by
//! every node. Install one at start-up:
//!
//! ```no_run
//! # fn main() -> Result<(), limiter_runtime::Error> {
//! limiter_runtime::Limiter::builder().redis("redis://127.0.0.1/").build()?.install()?;
//! # Ok(()) }
//! ```
//!
//! If none is installed when the first annotated function runs, one is built from the environment:
//! Redis at `LIMITER_REDIS_URL` when it is set, else in memory (said once, at warn level).
//!
//! When Redis fails or does not answer within the deadline (50 ms by default), the call is let through
//! ("fail open"; [`OnError`] can say reject, or decide in-process instead), and a warn-level `tracing` event
//! names the key and the cause. After repeated failures a breaker stops calling Redis, so a dead Redis costs
//! no latency, and probes it until it answers again.
//!
//! Store keys are the prefix followed by the key's `Display`; a key longer than 128 bytes is stored as its
//! first 128 bytes, `#` and its SHA-1, so any key text maps to a bounded key and distinct keys never share a
//! count.
//!
//! # The guide
//!
//! The [`guide`] explains everything in full, one page per topic: [the attribute](guide::attribute), [the
//! plain API](guide::plain_api), [the algorithms](guide::algorithms), [HTTP and gRPC](guide::http),
//! [Redis](guide::redis) (Cluster, Sentinel, TLS), [failures](guide::failures),
//! [operations](guide::operations) (overrides, switches, what operators see, metrics),
//! [calls in flight](guide::in_flight), [hot keys](guide::hot_keys) and [testing](guide::testing).

// The layers, bottom up: keys, algorithms, the clock, policy names, decisions and errors; then rules, the
// overrides, the call; the backends, the observers and the operators' watch; the pipeline; the public API
// (the limiter, its builder, a resolved limit, an estimate); and, on top, the service edges.
// `tests/tests/suite/layers/` holds them to it.
mod algorithm;
mod budget;
mod calendar;
mod clock;
mod clock_gate;
mod decision;
mod error;
mod key;
mod parse;
mod penalty;
mod policy;
mod priority;
mod sharded;

mod call;
mod limits;
mod overrides;
mod registry;
mod rule;

mod backend;
mod observe;
mod pipeline;
mod watch;

mod limiter;
mod outbound;

mod edge;

// Documentation only: the guide, and the README's Rust examples, compiled as doc tests.
pub mod guide;
#[cfg(all(doctest, feature = "axum", feature = "tower"))]
#[doc = include_str!("../../README.md")]
mod readme {}

#[cfg(feature = "admin")]
pub use crate::edge::admin;
#[cfg(any(feature = "axum", feature = "tower"))]
pub use crate::edge::http;
#[cfg(feature = "tower")]
pub use crate::edge::tower;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use crate::algorithm::Algorithm;
pub use crate::calendar::{Period, Usage, Zone};
pub use crate::clock::{Clock, FakeClock, SystemClock};
pub use crate::decision::{Decision, Verdict};
pub use crate::error::limits::LimitsError;
pub use crate::error::{Error, RateLimited, Reason};
pub use crate::limiter::request::{self, All, Request};
pub use crate::limiter::{
    AsCharged, Estimate, Limit, LimitList, Limiter, LimiterBuilder, ListedLimit, Permit, Stats,
    Turn, Used, DEFAULT_DEADLINE, REDIS_URL_ENV,
};
pub use crate::overrides::Override;
pub use crate::parse::ParseError;
pub use crate::penalty::{Penalty, PenaltyError};
pub use crate::priority::Priority;
pub use crate::rule::{Carry, OnError, Plan, Rule};
pub use crate::watch::{Ban, Ceiling, Inspection, NodeView, Overview, PolicyView, TopKey};

/// Rate-limits an `async fn`: see the [crate documentation](crate) and the attribute's own.
#[cfg(feature = "macros")]
#[doc(inline)]
pub use limiter_macros::rate_limit;
