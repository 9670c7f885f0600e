//! A tower layer that rate-limits requests (feature `tower`), for axum, tonic and hyper alike.
//!
//! [`RateLimitLayer`] decides each request under one or more [`Rule`](crate::Rule)s, keyed by a [`Key`]
//! taken from the request (the client's IP address, a header, the route, a closure), through the same
//! pipeline as `#[rate_limit]` and the plain API: several rules are one decision, and a refused request is
//! charged to none. A refused request is answered in its own protocol: `429 Too Many Requests` (or `503` when
//! the limiter cannot decide and fails closed) with `Retry-After`, or for a gRPC request the status
//! `RESOURCE_EXHAUSTED` (or `UNAVAILABLE`) with the retry delay in its metadata. A client that accepts
//! `application/problem+json` gets a `quota-exceeded` problem document. A handler's refusal behind the layer
//! (`RateLimited`'s response) is answered in the same format: one refusal format per service.
//!
//! Every response from behind the layer, 2xx included, carries `RateLimit-Policy` and `RateLimit` for every
//! limit decided while serving it: the layer's own, and those of the annotated handlers (and plain API calls)
//! behind it. See [`crate::http`] for the fields.
//!
//! For a client, [`OutboundLayer`] makes each request wait its turn under an upstream's limit, fleet-wide
//! ([`outbound`]).
//!
//! ```
//! use std::net::SocketAddr;
//! use std::time::Duration;
//!
//! use axum::{routing::get, Router};
//! use limiter_runtime::tower::{Key, RateLimitLayer};
//! use limiter_runtime::{Limiter, Rule};
//!
//! # async fn hello() -> &'static str { "hello" }
//! # async fn serve() -> std::io::Result<()> {
//! let limiter = Limiter::in_memory();
//! let per_client = Rule::new()
//!     .prefix("api:client:")
//!     .policy("per-client")
//!     .max(100)
//!     .window(Duration::from_secs(60));
//! let app = Router::new()
//!     .route("/hello", get(hello))
//!     .layer(RateLimitLayer::new(&limiter, [per_client], Key::peer_ip()));
//!
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await
//! # }
//! ```

mod forwarded;
mod key;
mod layer;
pub mod outbound;
mod response;
mod service;

pub use self::key::Key;
pub use self::layer::RateLimitLayer;
pub use self::outbound::{Outbound, OutboundError, OutboundLayer};
pub use self::response::ResponseBody;
pub use self::service::{RateLimitService, ResponseFuture};
