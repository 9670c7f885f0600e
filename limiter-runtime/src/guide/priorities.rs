//! # Priorities: a share kept for the calls that matter most
//!
//! When a limit fills up, not every call is worth the same: a checkout more than a search, a paying tenant's
//! call more than a free one's, a health check more than anything. A rule keeps a share of its limit for
//! the calls of a [`Priority`](crate::Priority) and above; calls below it fill the rest. Every node keeps
//! the same share of the one count in Redis, decided in the same script call as the count.
//!
//! ## Checkout before search
//!
//! ```
//! use limiter_runtime::{rate_limit, Priority, RateLimited};
//!
//! pub struct Request {
//!     pub tenant: String,
//!     pub paying: bool,
//! }
//!
//! impl Request {
//!     /// A paying tenant's calls matter more than a free one's.
//!     pub fn priority(&self) -> Priority {
//!         if self.paying { Priority::High } else { Priority::Normal }
//!     }
//! }
//!
//! // 1,000 calls a minute per tenant across the fleet. 20% is kept for checkouts (critical), and 30% for
//! // high calls and above: a free tenant's searches fill 700, a paying tenant's 800, checkouts all 1,000.
//! #[rate_limit(prefix = "api:", key = &request.tenant, max = 1000, window = "1m",
//!              reserve = "critical 20%, high 30%", priority = request.priority())]
//! async fn search(request: &Request, query: &str) -> Result<Vec<String>, RateLimited> {
//!     Ok(vec![query.to_owned()])
//! }
//!
//! #[rate_limit(prefix = "api:", key = &request.tenant, max = 1000, window = "1m",
//!              reserve = "critical 20%, high 30%", priority = "critical")]
//! async fn checkout(request: &Request, cart: u64) -> Result<u64, RateLimited> {
//!     Ok(cart)
//! }
//! ```
//!
//! The two functions share one limit (the same prefix and key): a flood of searches can take no more than
//! its ceiling, and a checkout is never refused while the critical share is free, however many searches
//! came first. `priority` is an expression over the arguments whose value is a `Priority`, or the name of
//! one for every call (`priority = "critical"`). A function with `reserve` must say its calls' priority,
//! even when they are all `normal` and other functions' calls of the same limit are the higher ones
//! (`priority = "normal"`): a share no call of the function can use is otherwise a mistake, and a compile
//! error.
//!
//! ## The ceilings
//!
//! A call of priority p is admitted only if everything its limit holds, plus its cost, fits under p's
//! ceiling: `max` less the largest share kept for a priority above p. Shares nest: with
//! `reserve(Critical, 10)` and `reserve(High, 30)`,
//!
//! | priority | must leave free | may fill (of 100) |
//! |---|---|---|
//! | `Critical` | nothing | 100 |
//! | `High` | the critical share, 10 | 90 |
//! | `Normal`, `Low` | the high share (which holds the critical one), 30 | 70 |
//!
//! - **A share is of `max`**, rounded up to whole units (20% of 7 keeps 2): of a token bucket's `burst`, of
//!   a leaky bucket's slots within its `max_wait` (a leaky bucket that does not wait has one slot: a share
//!   keeps it, so give it a `max_wait`), of a limit in flight's permits, of a calendar quota's units.
//! - **A call takes only its cost.** A critical call admitted under a full ceiling of normal calls uses the
//!   critical share; the total never passes `max`.
//! - **Every algorithm** decides it in the same step as its count, in one script call, for lone calls,
//!   coalesced calls on one key, batches and stacked calls alike (a stacked call one limit's reserve refuses
//!   is charged to none). [`Rule::in_flight`](crate::Rule::in_flight) with a reserve is Stripe's
//!   concurrent-requests limiter with a share for critical requests: `in_flight = 10` keeping 20% for
//!   critical calls runs at most 8 others at once, and a critical call finds a permit while they run.
//!
//! ## What a refused call is told
//!
//! - A call refused for a share kept above it, one its limit would otherwise admit, is
//!   [`Verdict::Reserved`](crate::Verdict::Reserved) (metrics' `reason = "reserved"`): answered `429` as any
//!   refusal, with `Retry-After` when its own priority has room again. It is **not an offence** for a
//!   [penalty](super::penalties): only a refusal of the full limit blocks a key.
//! - Its [`Decision`](crate::Decision) counts against its own ceiling: `limit` is the ceiling and
//!   `remaining` what is left under it, so the HTTP quota fields (`q`, `r`) tell a `Low` client what is left
//!   to `Low` calls.
//! - A call of a cost that does not fit under its ceiling at all (cost 9 of a ceiling of 8) is refused as too
//!   large ([`Reason::TooLarge`](crate::Reason::TooLarge)): no wait admits it.
//!
//! ## The plain API and the layer
//!
//! ```
//! # #[cfg(feature = "tower")]
//! use limiter_runtime::tower::{Key, RateLimitLayer};
//! use limiter_runtime::{Limiter, Priority, Rule, Verdict};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::in_memory();
//! let rule = Rule::new().prefix("api:").max(10).reserve(Priority::Critical, 20);
//! for _ in 0..8 {
//!     assert!(limiter.check(&rule, "acme").await.allowed); // Normal: fills 8
//! }
//! assert_eq!(limiter.check(&rule, "acme").await.verdict, Verdict::Reserved);
//! assert!(limiter.check(&rule, "acme").priority(Priority::Critical).await.allowed);
//! // Stacked limits: the call's priority applies to each.
//! let burst = Rule::new().prefix("burst:").max(100);
//! let decisions = limiter
//!     .all([(&rule, "acme"), (&burst, "acme")])
//!     .check()
//!     .priority(Priority::Critical)
//!     .await;
//! assert!(decisions.iter().all(|d| d.allowed));
//!
//! // The layer reads each request's priority from its head: a header, its route, an extension.
//! # #[cfg(feature = "tower")]
//! let layer = RateLimitLayer::new(&limiter, [rule], Key::header("x-api-key")).priority(|request| {
//!     match request.uri.path().starts_with("/checkout") {
//!         true => Priority::Critical,
//!         false => Priority::Normal,
//!     }
//! });
//! # #[cfg(feature = "tower")]
//! # let _ = layer;
//! # }
//! ```
//!
//! Every request of the plain API takes a priority ([`Request::priority`](crate::Request::priority)),
//! one limit's or several's ([`Limiter::all`](crate::Limiter::all)), whatever its verb;
//! [`RateLimitLayer::priority`](crate::tower::RateLimitLayer::priority) a function of the request.
//!
//! ## Leases, the deny cache, failures
//!
//! - **A lease** taken for `Normal` calls takes only what their ceiling leaves, and serves calls of its
//!   priority and above: it never spends a share kept above it.
//! - **The deny cache** tells calls of each priority apart: a denial for `Low` says nothing of `Critical`.
//! - **`on_error = local`**: each node's share of the limit keeps the same proportions (a node's share of a
//!   critical reserve is its share of the reserve).
//!
//! ## Changing them at run time
//!
//! A rule's shares are set like its `max`: by the environment for the crate-wide default
//! (`LIMITER_RESERVE="critical 20%, high 30%"`), and by an operator's override, on every node within a second
//! ([`Override::reserve`](crate::Override::reserve); the admin API's `PUT /api/overrides` takes
//! `"reserve": "critical 20%"`). Each reads the text as the attribute does, with the same grammar (the
//! `limiter-grammar` crate): `none` keeps no share, there and on the attribute alike, over a share kept
//! elsewhere. [`Limiter::inspect`](crate::Limiter::inspect) and the live page show what
//! each priority may still use ([`Inspection::ceilings`](crate::Inspection::ceilings)); the metric
//! `limiter_priority_decisions_total` counts the decisions of limits with shares by priority and verdict.
//!
//! ## What it costs
//!
//! A call of a limit without shares sends and runs exactly what it did before. A call that must leave units
//! free sends them beside the limit's `max` (`<max>/<kept>`): see `BENCHMARKS.md` for the measured cost.
