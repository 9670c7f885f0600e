//! The guide: what `limiter` does and how to use it, one page per topic.
//!
//! The README is the front door: what the crate is, how to try it, and a short tour. This guide is the
//! reference. Each page explains one topic in full, and every Rust example on it is a doc test that compiles
//! (the examples that need a Redis server or a network are compiled but not run).
//!
//! | page | what it covers |
//! |---|---|
//! | [`attribute`] | `#[rate_limit]`: every argument, keys, durations and constants, costs, stacked limits, `count = failures` |
//! | [`plain_api`] | the same limiter without the attribute: the verbs (`check`, `enforce`, `acquire`, `estimate`, `turn`), several limits (`all`), [`Limit`](crate::Limit); upgrading from the old methods |
//! | [`algorithms`] | the five algorithms: what each guarantees, the memory each takes in Redis, which to choose, how keys are stored |
//! | [`http`] | the tower layer for axum, tonic and hyper, the IETF quota fields, `RateLimited` as an HTTP response or a gRPC status |
//! | [`redis`] | one server, Redis Cluster, Sentinel, TLS and ACL users, checking the connection at start-up, the environment variables |
//! | [`failures`] | what happens when Redis is slow or down: the deadline, the breaker, `on_error`, the deny cache, late answers |
//! | [`operations`] | where each setting comes from, run-time overrides, the two switches, logs and metrics |
//! | [`limits`] | limits from data: plans per tenant, overrides of a pattern of keys, the limits file (its grammar), reloaded live on every node, and what each algorithm carries over when a limit changes |
//! | [`calendar`] | `period = day \| week \| month`: quotas on the calendar in a time zone (a tenant's own), billing days, `usage` |
//! | [`in_flight`] | `in_flight = N`: at most N calls of a key running at once, across nodes; permits, their time to live, crashes |
//! | [`penalties`] | `penalty = "1m..1h"`: blocking a key that abuses a limit, escalating, on every node; operators' bans |
//! | [`priorities`] | `reserve = "critical 20%"`, `priority = <expr>`: a share of every limit kept for the calls that matter most |
//! | [`outbound`] | calling a rate-limited API: a fleet that waits its turn together, pauses on 429s, settles tokens |
//! | [`hot_keys`] | one key that one Redis core cannot serve: coalescing and leases, and the exact bounds a lease costs |
//! | [`testing`] | testing code that is rate limited: the in-memory store, [`FakeClock`](crate::FakeClock), [`Limiter::scope`](crate::Limiter::scope) |
//! | [`inside`] | for contributors: the layers, the Redis store's rooms, the walk of one decision, one word for each idea |
//!
//! To read the guide locally, with every feature's items linked:
//!
//! ```sh
//! cargo doc --open -p limiter-runtime --all-features
//! ```
//!
//! The modules of this page hold no items: they exist for their documentation.

pub mod algorithms;
pub mod attribute;
pub mod calendar;
pub mod failures;
pub mod hot_keys;
pub mod http;
pub mod in_flight;
pub mod inside;
pub mod limits;
pub mod operations;
pub mod outbound;
pub mod penalties;
pub mod plain_api;
pub mod priorities;
pub mod redis;
pub mod testing;
