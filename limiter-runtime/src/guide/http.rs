//! # HTTP and gRPC
//!
//! Three features connect the limiter to servers:
//!
//! | feature | what it adds |
//! |---|---|
//! | `axum` | [`RateLimited`](crate::RateLimited) is an axum response: `429`, `503` or `413`, with `Retry-After` and the quota fields |
//! | `tower` | [`RateLimitLayer`](crate::tower::RateLimitLayer), a tower layer for axum, tonic and hyper: it limits requests by client IP, header, route or closure, and writes the quota fields on every response |
//! | `tonic` | `RateLimited` converts into a `tonic::Status`: `RESOURCE_EXHAUSTED` or `UNAVAILABLE`, with the retry delay in its metadata |
//!
//! ## The tower layer
//!
//! [`RateLimitLayer::new`](crate::tower::RateLimitLayer::new) takes a limiter, one or more rules, and a
//! [`Key`](crate::tower::Key) that says what each request is counted under. The layer decides each request
//! through the same pipeline as the attribute and the plain API, so overrides, the switches, `on_error` and
//! the deny cache apply to it. The rules of one layer are one decision, as stacked attributes are: checked in
//! order, a request goes through only when every rule admits it, and a refused request is charged to none of
//! them. Give each rule its own prefix, and a [`policy`](crate::Rule::policy) name for the quota fields.
//!
//! ```no_run
//! # #[cfg(all(feature = "tower", feature = "axum"))]
//! # mod example {
//! use std::net::SocketAddr;
//! use std::time::Duration;
//!
//! use axum::extract::Path;
//! use axum::{routing::get, Router};
//! use limiter_runtime::tower::{Key, RateLimitLayer};
//! use limiter_runtime::{rate_limit, Limiter, RateLimited, Rule};
//!
//! #[rate_limit(prefix = "rate_limit:emp:", policy = "employee", key = id, max = 5, window = 10)]
//! async fn employee(Path(id): Path<String>) -> Result<String, RateLimited> {
//!     Ok(format!("employee {id}"))
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // One limiter for the whole service: installed, and given to the layer.
//!     let limiter = Limiter::builder().env()?.connect().await?;
//!     limiter.clone().install()?;
//!
//!     let burst = Rule::new().prefix("api:burst:").policy("burst").max(10).window(Duration::from_secs(1));
//!     let hourly = Rule::new().prefix("api:hourly:").policy("hourly").max(1_000).window(Duration::from_secs(3_600));
//!     let app = Router::new()
//!         .route("/employees/{id}", get(employee))
//!         .layer(RateLimitLayer::new(&limiter, [burst, hourly], Key::peer_ip()));
//!
//!     // The peer's address comes from axum's ConnectInfo.
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//!     axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await?;
//!     Ok(())
//! }
//! # }
//! # fn main() {}
//! ```
//!
//! ### One limiter per service
//!
//! The handlers behind a layer decide in the layer's limiter: while they serve a request the layer let
//! through, their `#[rate_limit]` functions and [`Limiter::current`](crate::Limiter::current) use it, as
//! [`Limiter::scope`](crate::Limiter::scope) does. The layer and the attributes behind it therefore count in
//! one limiter, with one deadline and one `on_error`, even when no limiter was installed.
//! [`scope_handlers(false)`](crate::tower::RateLimitLayer::scope_handlers) leaves the handlers to the
//! installed limiter instead. Tasks a handler spawns do not inherit the scope: they use the installed limiter.
//!
//! So give the layer the limiter you install, as above, and the whole service counts in one. A layer built
//! with another limiter than the installed one says so at warn level, naming both. When no limiter was
//! installed, the one built later from the environment, for the annotated functions outside the layer's
//! requests, warns that it counts apart from the layer's.
//!
//! ### Keys
//!
//! | key | the request is counted under |
//! |---|---|
//! | [`Key::peer_ip()`](crate::tower::Key::peer_ip) | the peer's IP address: axum's `ConnectInfo<SocketAddr>` (feature `axum`), tonic's `TcpConnectInfo` (feature `tonic`), or a `SocketAddr` extension (what a hyper server inserts itself) |
//! | [`Key::x_forwarded_for(n)`](crate::tower::Key::x_forwarded_for) | behind `n` trusted proxies that append to `X-Forwarded-For`: the entry `n` places from the right, the address the outermost of them received the request from; never the left-most entry, which clients write themselves; `n = 0` is the peer |
//! | [`Key::forwarded(n)`](crate::tower::Key::forwarded) | the same, for proxies that append to `Forwarded` (RFC 7239): the `for` parameter |
//! | [`Key::header(name)`](crate::tower::Key::header) | a header's value (an API key, a tenant); bytes outside printable ASCII, and `%`, are percent-encoded so that distinct values never share a count |
//! | [`Key::route()`](crate::tower::Key::route) | the route axum matched (`/employees/{id}`), else the path (for gRPC, the method) |
//! | [`Key::from_fn(...)`](crate::tower::Key::from_fn) | what a closure makes of the request's head (`http::request::Parts`); `None` finds nothing |
//!
//! IPv6 clients are counted by their /64 network, since one client is given a /64 to choose its addresses
//! from: `2001:db8:1:2::/64`. [`Key::ipv6_prefix`](crate::tower::Key::ipv6_prefix) changes the number of
//! bits (128 counts every address alone). IPv4 addresses, and IPv4-mapped IPv6 addresses, count whole.
//!
//! A request the key finds nothing in (no such header, a forwarding chain that is missing, unreadable or
//! shorter than the proxies trusted, a closure that returns `None`) is not let through unlimited: the layer
//! counts it under its peer's address. When the server records no peer address either (axum's
//! `axum::serve(listener, app)`, without `into_make_service_with_connect_info`), the layer cannot tell clients
//! apart: every such request counts under one shared key, `no-peer-address`, as if all were one client, and
//! an error in the log says how to serve the peers' addresses. A missing address never turns a limit off.
//! Two settings change what happens to a request without a key:
//!
//! - [`.fallback("unidentified")`](crate::tower::RateLimitLayer::fallback) counts all such requests under one
//!   key that they share;
//! - [`.pass_unidentified()`](crate::tower::RateLimitLayer::pass_unidentified) lets them through, unlimited.
//!
//! Either way, each such request is counted in the metric `limiter_unidentified_requests_total` (its
//! `outcome` label is `peer`, `fallback`, `passed`, or `no_peer` when the server recorded no peer address
//! either), and the log says so at most once a minute (a warning; an error for `no_peer`). Finding a key
//! never fails a request and never panics, whatever its headers hold.
//!
//! ```
//! # #[cfg(feature = "tower")] {
//! use limiter_runtime::tower::{Key, RateLimitLayer};
//! use limiter_runtime::{Limiter, Rule};
//!
//! let limiter = Limiter::in_memory();
//! let per_api_key = Rule::new().prefix("api:key:").policy("per-api-key").max(1_000);
//! // Requests without an API key share one count, instead of one per peer address.
//! let layer = RateLimitLayer::new(&limiter, [per_api_key], Key::header("x-api-key")).fallback("anonymous");
//!
//! // Behind one proxy that appends to X-Forwarded-For; each IPv6 address alone.
//! let per_client = Rule::new().prefix("api:client:").policy("per-client").max(60);
//! let layer = RateLimitLayer::new(&limiter, [per_client], Key::x_forwarded_for(1).ipv6_prefix(128));
//!
//! // A tenant from the path; requests outside /tenants/ are not limited.
//! let per_tenant = Rule::new().prefix("api:tenant:").policy("per-tenant").max(600);
//! let key = Key::from_fn(|request| {
//!     request.uri.path().strip_prefix("/tenants/")?.split('/').next().map(str::to_owned)
//! });
//! let layer = RateLimitLayer::new(&limiter, [per_tenant], key).pass_unidentified();
//! # }
//! ```
//!
//! ## The quota fields
//!
//! Every response from behind the layer, `2xx` included, carries the quota fields of
//! draft-ietf-httpapi-ratelimit-headers-11 for every limit decided while serving it: the layer's own, and
//! those of the annotated handlers and plain API calls behind it, one list member per policy.
//!
//! ```text
//! HTTP/1.1 200 OK
//! ratelimit-policy: "per-client";q=60;w=60, "employee";q=5;w=10
//! ratelimit: "per-client";r=59;t=60, "employee";r=4;t=10
//! ```
//!
//! - `RateLimit-Policy` gives each policy's quota: `q` admissions per `w` seconds (rounded up).
//! - `RateLimit` says where each stands: `r` left, within the next `t` seconds (rounded up). For a limit that
//!   refused the call, `t` is when it would admit it (its `retry_after`); for one that admitted it, when it is
//!   whole again (its `reset_after`).
//! - Each member is named by its limit's policy name: its `policy` (on the attribute, or
//!   [`Rule::policy`](crate::Rule::policy)), else `limit-` and the first 8 hex digits of the SHA-1 of its prefix
//!   (`limit-d357682f` for `rate_limit:emp:`). The default is stable across processes and versions, distinct
//!   for the limits of one call, and does not show clients your Redis key namespace; give each limit a `policy` name
//!   to make the fields readable.
//! - Not advertised: a shadow limit, a limit the call skipped (`skip_if`), every limit while the switch is
//!   off, and a decision that `on_error = open | closed` made while Redis failed (the count is unknown). A
//!   decision over this node's share (`on_error = local`) was counted, and is advertised.
//!
//! The layer opens a task-local record around each request, and the pipeline adds each decision to it where
//! it reports decisions to the metrics. Outside a layer nothing is recorded. Nested layers write one set of
//! fields, from the outermost.
//!
//! ## Refusals
//!
//! | why | HTTP | gRPC |
//! |---|---|---|
//! | the limit was reached, or the key is blocked ([`Reason::Limited`](crate::Reason::Limited); [`Verdict::Blocked`](crate::Verdict::Blocked), `Retry-After` the block's remaining time) | `429 Too Many Requests`, `Retry-After`, the quota fields | `RESOURCE_EXHAUSTED`, `grpc-retry-pushback-ms` and `retry-after` |
//! | the limiter could not decide and fails closed ([`Reason::Unavailable`](crate::Reason::Unavailable)) | `503 Service Unavailable`, `Retry-After`, no quota fields | `UNAVAILABLE`, `grpc-retry-pushback-ms` and `retry-after` |
//! | the call weighs more than the limit can ever admit ([`Reason::TooLarge`](crate::Reason::TooLarge)) | `413 Content Too Large`, no `Retry-After`: no wait admits it | `RESOURCE_EXHAUSTED`, `grpc-retry-pushback-ms: -1` (do not retry) |
//! | the limit is misconfigured, one of zero ([`Reason::Misconfigured`](crate::Reason::Misconfigured)): the server's mistake | `500 Internal Server Error`, no `Retry-After`, no quota fields | `INTERNAL`, `grpc-retry-pushback-ms: -1` |
//!
//! `Retry-After` is the whole seconds until every limit that refused the call would admit it, so it is never
//! earlier than the `t` of a refusing policy. The body is plain text
//! ([`RateLimited::text`](crate::RateLimited::text)): the limit's message (an unavailable limiter, or a
//! misconfigured limit, has its own), then a sentence naming the policy that refused the call, as the quota
//! fields name it; while its key is blocked (a penalty, a ban), it says `Banned` and for how long. A call over this node's share while Redis is down (`on_error = local`) is a
//! reached limit: a `429` with its quota fields.
//!
//! With the `axum` feature, handlers return `Result<T, RateLimited>` (or an error type that wraps it), or an
//! axum `Response`, and a rejection answers for itself. [`RateLimited::status`](crate::RateLimited::status),
//! [`RateLimited::headers`](crate::RateLimited::headers) and [`RateLimited::text`](crate::RateLimited::text)
//! give the same answer to other frameworks.
//!
//! ```
//! # #[cfg(feature = "axum")] {
//! use axum::extract::Path;
//! use axum::{routing::get, Json, Router};
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! #[rate_limit(prefix = "rate_limit:emp:", policy = "employee", key = id, max = 5, window = 10)]
//! async fn employee(Path(id): Path<String>) -> Result<Json<String>, RateLimited> {
//!     Ok(Json(id))
//! }
//!
//! let app: Router = Router::new().route("/employees/{id}", get(employee));
//! # }
//! ```
//!
//! A request the layer refuses is answered in its own protocol: over HTTP as above, and a gRPC request
//! (`content-type: application/grpc...`) with the gRPC status and metadata, so tonic clients see a
//! `Status`. A client that sends `Accept: application/problem+json` gets, for a reached limit, a
//! `quota-exceeded` problem document naming the policies that refused it:
//!
//! ```json
//! {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Request cannot be satisfied as assigned quota has been exceeded","status":429,"detail":"too many requests, please try again later","violated-policies":["per-client"]}
//! ```
//!
//! ### One refusal format per service
//!
//! A handler's refusal behind the layer is answered in the same format as the layer's own. `RateLimited`'s
//! response cannot read the request (axum's `IntoResponse` is not given it), so it writes plain text and
//! carries the `RateLimited` in its extensions; the layer, which has read the request's `Accept` and
//! `content-type`, answers such a response as it answers its own refusals: a problem document for a client
//! that accepts one, a gRPC status for a gRPC request, plain text otherwise. The handler's other headers and
//! its extensions stay, and the quota fields are the layer's, as on every response. An error type of your own
//! that answers a rejection with `RateLimited`'s response (`AppError::Limited(e) => e.into_response()`) is
//! answered alike; one that writes a body of its own is left as it is (or remove the extension to opt out).
//! Without a layer in front, every refusal is plain text: one format either way.
//!
//! ## gRPC
//!
//! With the `tonic` feature, a service method returning `Result<Response<T>, Status>` answers a rejection
//! with `?`. The status carries the limit's message, and its metadata says when to come back:
//! `grpc-retry-pushback-ms` (what gRPC's own retry policy obeys) and `retry-after` (whole seconds, rounded
//! up).
//!
//! ```
//! # #[cfg(feature = "tonic")] {
//! use limiter_runtime::{Limiter, Rule};
//!
//! async fn say_hello(limiter: &Limiter, name: &str) -> Result<tonic::Response<String>, tonic::Status> {
//!     let per_caller = Rule::new().prefix("hello:").max(5);
//!     limiter.enforce(&per_caller, name).await?;
//!     Ok(tonic::Response::new(format!("hello, {name}")))
//! }
//! # }
//! ```
//!
//! The tower layer works in front of a tonic server too, and reads the peer's address from tonic's connection
//! info:
//!
//! ```
//! # #[cfg(all(feature = "tower", feature = "tonic"))] {
//! use std::time::Duration;
//!
//! use limiter_runtime::tower::{Key, RateLimitLayer};
//! use limiter_runtime::{Limiter, Rule};
//! use tonic::transport::Server;
//!
//! let limiter = Limiter::in_memory();
//! let per_caller = Rule::new().prefix("grpc:caller:").policy("per-caller").max(100).window(Duration::from_secs(60));
//! let server = Server::builder().layer(RateLimitLayer::new(&limiter, [per_caller], Key::peer_ip()));
//! // server.add_service(GreeterServer::new(greeter)).serve(address).await?;
//! # }
//! ```
//!
//! ## The example service
//!
//! `examples/src/service.rs` is the sources' employee service over axum. Its public routes are limited per
//! client IP by the layer (60 a minute), on top of each route's own limit; its operators' routes set
//! overrides and the switches behind the admin door (`guide::operations`): `Authorization: Bearer
//! <ADMIN_TOKEN>` (`401` without the token or with another, `429` for a while after 5 failures from one
//! address; `ADMIN_VIEWER_TOKEN`, if set, reads but gets `403` for a change). The service refuses to start
//! without an `ADMIN_TOKEN` of at least 16 characters.
//!
//! ```sh
//! export ADMIN_TOKEN=$(openssl rand -hex 16)
//! LIMITER_REDIS_URL=redis://127.0.0.1:6379/ cargo run -p examples --example service
//! curl -i http://127.0.0.1:3000/api/test            # one bucket for everybody: 10 per second
//! curl -i http://127.0.0.1:3000/employees/1001      # 5 per 10 s per employee; the 6th is a 429
//! curl -i http://127.0.0.1:3000/whoami              # 100 per minute per client IP
//! admin="Authorization: Bearer $ADMIN_TOKEN"
//! curl -i -H "$admin" -X POST 'http://127.0.0.1:3000/limit/update?prefix=rate_limit:emp:&key=1001&threshold=1'
//! curl -i -H "$admin" -X POST 'http://127.0.0.1:3000/limit/enabled?enabled=false'             # every instance off
//! curl -i -H "$admin" -X POST 'http://127.0.0.1:3000/limit/enabled?enabled=false&scope=here'  # this one off
//! ```
//!
//! The sixth lookup of one employee within 10 seconds:
//!
//! ```text
//! HTTP/1.1 429 Too Many Requests
//! content-type: text/plain; charset=utf-8
//! retry-after: 10
//! ratelimit-policy: "per-client";q=60;w=60, "employee";q=5;w=10
//! ratelimit: "per-client";r=54;t=60, "employee";r=0;t=10
//!
//! slow down, have a cup of tea. Refused by the policy "employee".
//! ```
//!
//! `tests/tests/suite/tower.rs` serves the layer over real HTTP and checks each key (forged and malformed forwarding
//! chains included), the fallbacks, several rules as one decision, and the quota fields on `2xx` and `429`
//! with a Structured Fields parser, in memory and on Redis; `tests/tests/suite/grpc.rs` puts the layer in front of
//! a real tonic server and client; `tests/tests/suite/service.rs` runs the example service end to end.

// The links above name the `tower`, `axum` and `tonic` features' items: without them, they read as text.
#![cfg_attr(not(feature = "tower"), allow(rustdoc::broken_intra_doc_links))]
