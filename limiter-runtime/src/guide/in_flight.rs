//! # Calls in flight
//!
//! A rate says how many calls of a key may *start* per window. Some things need a different bound: how many
//! calls of a key may *run at once* — a tenant's concurrent uploads, a user's parallel LLM streams, the
//! connections a fragile backend takes. `in_flight = N` is that limit, counted across every node like a rate.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! // At most 4 uploads of a tenant running at once, on every node together.
//! #[rate_limit(prefix = "uploads:", key = tenant, in_flight = 4)]
//! async fn upload(tenant: &str, bytes: &[u8]) -> Result<usize, RateLimited> {
//!     Ok(bytes.len())
//! }
//!
//! // At most 3 streams of a user at once, and 100 an hour: both hold, decided as one.
//! #[rate_limit(prefix = "streams:", key = user, max = 100, window = "1h", in_flight = 3)]
//! async fn stream(user: &str) -> Result<(), RateLimited> {
//!     Ok(())
//! }
//! ```
//!
//! A permit is taken before the body runs and given back when the body's future ends, however it ends: it
//! returns, returns an error, is dropped (cancelled, a client gone) or panics. The function's end, not the
//! end of what it returned: for a handler whose response streams on, see [below](#handlers-that-stream).
//! `in_flight` is an integer of at least 1, a literal or a constant expression as for `max`. Beside `max` or
//! `window` it adds a second limit to the same call, stacked with the rate: the call is admitted by both or by
//! neither, and a refused call holds no permit and is charged nothing. `mode = wait` and `lease` do not
//! combine with it (a compile error says so); `cost` applies to the rate, while a call always takes one
//! permit.
//!
//! ## Handlers that stream
//!
//! An axum handler often returns before its response has been sent: a streamed body (a download, server-sent
//! events, an LLM's tokens) runs long after. A permit that ended with the function would let any number of
//! those bodies stream at once. So, with the `axum` feature, a function whose *written* return type is an
//! HTTP response hands its permits to the response's body, which holds them until its last frame has been
//! sent, or it fails, or it is dropped (a client gone): the permit ends with the body, not the function.
//!
//! ```
//! # #[cfg(feature = "axum")] {
//! use axum::body::{Body, Bytes};
//! use axum::extract::Path;
//! use axum::response::Response;
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! // At most 2 exports of a tenant streaming at once, until their last byte.
//! #[rate_limit(prefix = "exports:", key = tenant, in_flight = 2)]
//! async fn export(Path(tenant): Path<String>) -> Result<Response, RateLimited> {
//!     let rows = futures_util::stream::iter(["a,b\n", "c,d\n"]);
//!     let chunks = futures_util::StreamExt::map(rows, |row| Ok::<_, std::io::Error>(Bytes::from(row)));
//!     Ok(Response::new(Body::from_stream(chunks)))
//! }
//! # }
//! ```
//!
//! What is read is the return type as written, not what it resolves to:
//!
//! | written | the permits are held |
//! |---|---|
//! | `Response`, `axum::response::Response`, `http::Response<Body>` | until the body ends (a refusal is then `RateLimited`'s response) |
//! | `Result<Response, E>`, `axum::response::Result<Response>` | until the body of an `Ok` ends; an `Err` gives them back when the function returns |
//! | anything else: `impl IntoResponse`, `Json<T>`, `Result<String, E>`, an alias such as `AppResult<Response>` | until the function returns |
//! | `tonic::Response<T>` (feature `tonic`) | until the method returns |
//!
//! A type written as a response that cannot hold them is a compile error at the return type: without the
//! `axum` feature, an `http::Response` of another body, or a type of your own named `Response` (return that
//! one through an alias named otherwise). What a limit beside it charges by outcome (`count = failures`) is
//! settled when the function returns, as always.
//!
//! Whatever a handler returns, the [tower layer](super::http) holds the permits of its own in-flight rules
//! until the response body ends:
//!
//! ```
//! # #[cfg(feature = "tower")] {
//! use limiter_runtime::tower::{Key, RateLimitLayer};
//! use limiter_runtime::{Limiter, Rule};
//!
//! let limiter = Limiter::in_memory();
//! // At most 4 responses being sent to each client at once, whatever the handler returns.
//! let streams = Rule::new().prefix("streams:").policy("streams").in_flight(4);
//! let layer = RateLimitLayer::new(&limiter, [streams], Key::peer_ip());
//! # }
//! ```
//!
//! ## Without the attribute
//!
//! [`Rule::in_flight`](crate::Rule::in_flight) makes the rule, and
//! [`Limiter::acquire`](crate::Limiter::acquire) takes a permit; the [`Permit`](crate::Permit) gives it
//! back when dropped, or when [`settle`](crate::Permit::settle)d (which returns once Redis has it back).
//! [`Limiter::all`](crate::Limiter::all)`(..).acquire()` takes permits and rates together, as one decision.
//!
//! ```
//! use limiter_runtime::{Limiter, RateLimited, Rule};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), RateLimited> {
//! let limiter = Limiter::in_memory();
//! let uploads = Rule::new().prefix("uploads:").in_flight(4);
//! let permit = limiter.acquire(&uploads, "acme").await?;
//! assert_eq!(permit.decision().remaining, 3);
//! // ... the upload runs ...
//! permit.settle(limiter_runtime::AsCharged).await;
//! # Ok(()) }
//! ```
//!
//! A permit dropped rather than settled (a body cancelled or panicking, a `Permit` going out of scope) is
//! given back at once in memory; with Redis, by a task of the limiter's, one round trip later: a call made
//! right after the drop may still find it taken. `settle(AsCharged).await` returns once Redis has it back.
//!
//! The plain API's other calls keep nothing of a call but its decision: [`check`](crate::Limiter::check),
//! [`enforce`](crate::Limiter::enforce), their `_all` forms and [`Limit`](crate::Limit) on an in-flight rule
//! take a permit and give it back before they return, so they say whether a permit is free and hold none. A
//! [`Estimate`](crate::Estimate) holds its permit until it is settled, cancelled or dropped.
//!
//! ## Across nodes, and after a crash
//!
//! On Redis a limit's permits are one sorted set: each permit is named by its call's nonce and scored by when
//! it expires on Redis's clock, [`in_flight_ttl`](crate::Rule::in_flight_ttl) (`in_flight_ttl = "30s"`,
//! the default) after it was taken or last renewed.
//!
//! - **Taking** is part of the call's one script call, with its rate limits: no extra round trip.
//! - **Giving back** removes the call's own permit, by its name: no node can give back, or take away, a
//!   permit of another's. Releases are queued and sent by one task per node, so releases that happen
//!   together share one round trip: at most one more per call, fewer under load.
//! - **Renewing**: while a node holds permits, one task renews all of them every third of the shortest ttl,
//!   one command per key, not per permit.
//! - **A node killed** (`kill -9`, a lost machine) stops renewing: its permits expire within one ttl, and
//!   until then they stay taken. Fewer calls can run meanwhile, never more.
//! - **A node cut off from Redis** for longer than the ttl loses its permits while its bodies may still be
//!   running. That is the one case in which more than `N` calls can run at once, for as long as those bodies
//!   run. Choose a ttl longer than the outages you want to ride out, and shorter than you can afford to
//!   wait for a crashed node's permits.
//! - **Cluster**: the key lives on one slot, as any limit's; a call whose limits span slots takes them slot
//!   by slot, giving back what it took when a later slot refuses, as for rates.
//!
//! In memory the semantics are the same, per process: a permit lives until it is given back.
//!
//! ## When Redis fails
//!
//! `on_error` decides as for rates ([failures](super::failures)): `open` lets the body run uncounted,
//! `closed` refuses it, `local` holds this node's share of the permits (`ceil(N / live instances)`) in memory.
//! A permit Redis took after the call's deadline had passed is given back when its answer arrives, whatever
//! the call was told: a permit is never charged later.
//!
//! ## What a client is told
//!
//! A refusal is [`RateLimited`](crate::RateLimited) with [`Reason::Limited`](crate::Reason::Limited) and a
//! `retry_after` of zero: when a permit comes back is its holder's to say. Over HTTP that is `429 Too Many
//! Requests` with `Retry-After: 1`; over gRPC `RESOURCE_EXHAUSTED` with `grpc-retry-pushback-ms: 0`. The quota
//! fields describe the limit in draft-11's unit for it, with no window (here for a rule named `uploads`):
//!
//! ```text
//! RateLimit-Policy: "uploads";q=4;qu="concurrent-requests"
//! RateLimit: "uploads";r=3
//! ```
