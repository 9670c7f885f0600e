//! # The `#[rate_limit]` attribute
//!
//! `#[rate_limit(...)]` limits how often an `async fn` runs. Before the body runs, the attribute asks the
//! current [`Limiter`](crate::Limiter) whether the call is admitted. When it is, the body runs as written.
//! When the limit is reached, the body does not run, and the function returns `Err(RateLimited.into())`.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! #[derive(Debug)]
//! enum AppError {
//!     TooManyRequests(RateLimited),
//! }
//!
//! impl From<RateLimited> for AppError {
//!     fn from(e: RateLimited) -> Self {
//!         AppError::TooManyRequests(e)
//!     }
//! }
//!
//! #[rate_limit(prefix = "rate_limit:emp:", key = id, window = 10, max = 5, message = "slow down")]
//! async fn get_by_id(id: &str) -> Result<String, AppError> {
//!     Ok(format!("employee {id}"))
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() {
//!     for _ in 0..5 {
//!         assert!(get_by_id("1001").await.is_ok());
//!     }
//!     // The sixth call within 10 seconds is refused, and the body does not run.
//!     let AppError::TooManyRequests(limited) = get_by_id("1001").await.unwrap_err();
//!     assert_eq!(limited.to_string(), "slow down");
//!     assert_eq!(limited.key(), "rate_limit:emp:1001");
//!     // Another employee has a count of its own.
//!     assert!(get_by_id("1002").await.is_ok());
//! }
//! ```
//!
//! ## What the function must be
//!
//! The function must be `async` and return `Result<T, E>`, where `E: From<RateLimited>`, so that a refused
//! call can return its error. [`RateLimited`](crate::RateLimited) itself is such an `E`. With the `axum`
//! feature it may return an axum `Response` instead: a refused call returns `RateLimited`'s response (and
//! with `in_flight`, the response's body holds the permit: see [calls in
//! flight](super::in_flight#handlers-that-stream)). The attribute
//! accepts free functions, inherent methods (`&self`, `&mut self`), methods of trait impls, generic
//! functions, arguments bound by patterns (`Path(id): Path<String>`, then `key = id`), and the methods of an
//! `#[async_trait]` impl. It keeps the function's signature, attributes and doc comments as written.
//!
//! Every misuse is a compile error that points at the offending token: an argument that is unknown,
//! repeated, or of the wrong kind, a function that is not `async` or returns no `Result`, arguments that do
//! not fit together (`burst` without `algorithm = token_bucket`, say). The UI tests in `tests/attribute-ui/ui/fail/` hold
//! one snapshot of each error.
//!
//! ## Arguments
//!
//! Every argument is optional. An argument left out takes the installed limiter's default, which is the
//! built-in default unless the limiter was built with others (see [where each setting comes
//! from](super::operations#where-each-setting-comes-from)).
//!
//! | argument | meaning | default |
//! |---|---|---|
//! | `key = <expr>` | what the call is counted under: an expression over the arguments (see [Keys](#keys)) | the function's path: one count for every call |
//! | `prefix = "..."` | the key's namespace: the store key is the prefix followed by the key | `"rate_limit:"` |
//! | `window = 10` or `window = "1m30s"` | the window: whole seconds, or a duration string (see [Durations](#durations)) | 60 s |
//! | `max = 100` | the admissions (units of cost) per window, at least 1 | 100 |
//! | `message = "..."` | the message of the [`RateLimited`](crate::RateLimited) error | `"too many requests, please try again later"` |
//! | `policy = "..."` | the policy's name in the HTTP quota fields and [`RateLimited::policy`](crate::RateLimited::policy) | `limit-` and the first 8 hex digits of the SHA-1 of the prefix |
//! | `algorithm = ...` | `sliding_log`, `fixed_window`, `sliding_window`, `token_bucket` or `leaky_bucket` (see [`algorithms`](super::algorithms)) | `sliding_log` |
//! | `burst = 20` | with `algorithm = token_bucket`: the bucket's capacity | `max` |
//! | `cost = <expr>` | the weight of one call, an unsigned integer computed from the arguments (see [Costs](#costs)) | 1 |
//! | `mode = wait` | a leaky bucket's (its algorithm when none is written): wait for the call's slot instead of refusing the call, giving the slot back if the caller gives up (see [Waiting for a slot](#waiting-for-a-slot)) | `reject` |
//! | `max_wait = "2s"` | with `mode = wait`: the longest wait; a call whose slot is further away is refused | the window |
//! | `lease = 50` | with `algorithm = token_bucket` or `fixed_window`, on Redis: units a node takes at once and spends in memory (see [`hot_keys`](super::hot_keys)) | no lease |
//! | `lease_ttl = "100ms"` | with `lease`: how long a node may spend a lease | 100 ms |
//! | `in_flight = 4` | at most this many calls of a key running at once, across nodes; alone, or beside `max`/`window` as a second limit decided with the rate. The permit ends with the function, or with the body of a response it returns (see [`in_flight`](super::in_flight)) | none |
//! | `in_flight_ttl = "30s"` | with `in_flight`, on Redis: how long a permit lives unless its node renews it | 30 s |
//! | `penalty = "10m"` or `penalty = "1m..1h"` | a call the limit refuses blocks its key for that long, on every node (escalating: the first length, doubled at each repeat offence up to the second, forgiven after a clean cap); not with `in_flight`, `lease` or `mode = wait` (see [`penalties`](super::penalties)) | no penalty |
//! | `period = day \| week \| month` | a calendar quota: at most `max` units per day, week (from Monday) or month of the calendar, counted again from each period's first instant; instead of a window (see [Calendar quotas](#calendar-quotas)) | no period: a rate per window |
//! | `tz = "Europe/Berlin"` or `tz = <expr>` | with `period`: the time zone the periods are counted in, an IANA name checked when compiled, or each call's own [`Zone`](crate::Zone) computed from the arguments | UTC |
//! | `anchor = 15` or `anchor = <expr>` | with `period = month`: the billing day the month starts on, 1 to 31 (a shorter month starts on its last day), or each call's, an integer from the arguments | 1 |
//! | `on_error = open \| closed \| local` | what decides when Redis fails or is too slow (see [`failures`](super::failures)) | the limiter's, `open` unless set |
//! | `skip_if = <expr>` | a `bool` over the arguments: when it is true, the call is not limited at all | never skipped |
//! | `shadow = true` | count and report the calls the limit would refuse, but never refuse or delay one | `false` |
//! | `count = failures \| successes` | charge only the calls whose body returns `Err` (or `Ok`) (see [Counting by outcome](#counting-by-outcome)) | `all` |
//! | `crate = "path"` | where the runtime is, when you re-export it under another name | `limiter_runtime` |
//!
//! ## Keys
//!
//! `key` is any Rust expression over the function's arguments, `self` and the bindings of argument patterns
//! included. It is evaluated once, before the body runs, and by reference: it never moves an argument, so the
//! body still owns every argument. Its value must implement `Display`.
//!
//! A list of parts, `key = (tenant, user.id)`, joins the parts with `:`. Each part's own `:`, `|` and `%`
//! are written `%3A`, `%7C` and `%25`, so two different lists never make the same key: `("a:b", "c")` and
//! `("a", "b:c")` count apart.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! struct User {
//!     id: u64,
//! }
//!
//! #[rate_limit(prefix = "upload:", key = (tenant, user.id), max = 10, window = "1m")]
//! async fn upload(tenant: &str, user: User, file: Vec<u8>) -> Result<usize, RateLimited> {
//!     drop(user); // the key borrowed `user`: the body still owns it
//!     Ok(file.len())
//! }
//! ```
//!
//! Without a key, the function's path is the key, and every call of the function shares one count.
//!
//! ### How a store key is written
//!
//! The store key (in Redis, and in memory) is the prefix followed by the key as `Display` writes it, with
//! three characters escaped: `%` as `%25`, `:` as `%3A` and `|` as `%7C`. A prefix that does not end with `:`
//! is followed by a `|`. So `rate_limit:emp:` with `1001` is `rate_limit:emp:1001`, as an operator expects;
//! the list `(acme, 42)` under `upload:` is `upload:acme%3A42`; an IPv6 address under `ip:` is
//! `ip:2001%3Adb8%3A%3A1`; a function without a key, `my_app::login`, is `rate_limit:my_app%3A%3Alogin`;
//! `plain` with `1001` is `plain|1001`.
//!
//! The escape is what keeps limits apart: a store key's last `:` or `|` is always where its prefix ends, so
//! no key, whatever a client puts in it, reaches another limit's state. Without it, the prefix `rl:` with the
//! key `daily:alice` would be the prefix `rl:daily:` with the key `alice`: one count for two limits, or,
//! under two algorithms, a key of the wrong type. Two limits share a count only when they share a prefix and
//! a key.
//!
//! What follows the prefix, up to 128 bytes, is stored as it is (spaces, braces and newlines included); a
//! longer one is stored as its first 128 bytes, `#`, and the SHA-1 of the whole. Any text therefore maps to a
//! bounded store key, and two distinct keys never share a count.
//!
//! **Upgrading from a version before the escape**: a key that holds `:`, `|` or `%`, or any key under a
//! prefix that does not end with `:`, now has a new store key. Its count starts afresh once (for at most one
//! window it may admit up to its limit again), and its old state expires by its own time to live. Per-key
//! overrides of such keys are to be set again. Every other key keeps its store key and its count.
//!
//! ## Durations
//!
//! `window`, `max_wait` and `lease_ttl` take whole seconds (`window = 10`) or a duration string. A duration
//! string is one or more whole numbers, each followed by its unit, `d`, `h`, `m`, `s` or `ms`, the largest
//! unit first and each unit at most once: `"500ms"`, `"10s"`, `"1m"`, `"1h30m"`, `"1d"`, `"1d12h"`,
//! `"1s500ms"`. The attribute checks the string at compile time: `"30m1h"` (units out of order), `"1m1m"`
//! (a unit twice), `"10"` (no unit) and `"0s"` (zero) are compile errors, each saying how to write it. The
//! environment (`LIMITER_WINDOW`), a penalty's text and the runtime's parsers read the same text with the same
//! grammar (the `limiter-grammar` crate, which both the attribute and the runtime use), so a text one takes the
//! others take, as the same length: `LIMITER_WINDOW=60` is refused as `window = "60"` is (write `60s`).
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! #[rate_limit(prefix = "report:", max = 3, window = "1d")]
//! async fn daily_report() -> Result<(), RateLimited> {
//!     Ok(())
//! }
//!
//! #[rate_limit(prefix = "export:", max = 10, window = "1h30m")]
//! async fn export() -> Result<(), RateLimited> {
//!     Ok(())
//! }
//! ```
//!
//! ## Constants
//!
//! `max`, `burst`, `lease`, and the durations in whole seconds also take a constant: a `const` item or a
//! constant expression of any integer type (`u32`, `usize`, `i64`, ...), so limits can come from a
//! configuration module. The compiler checks a constant where it evaluates it, with the errors a literal gets:
//! zero, a negative number, or a number over `u64::MAX` is refused at the expression. The limits live in a
//! `static`, so a constant cannot name `Self`, a generic parameter or an argument: write `MyType::MAX`, not
//! `Self::MAX`.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! mod limits {
//!     pub const LOGIN: usize = 5;
//!     pub const HOUR: u32 = 3_600;
//! }
//! const BURST: u64 = 20;
//!
//! #[rate_limit(prefix = "login:", key = user, max = limits::LOGIN * 2, window = limits::HOUR)]
//! async fn login(user: &str) -> Result<(), RateLimited> {
//!     Ok(())
//! }
//!
//! #[rate_limit(prefix = "search:", algorithm = token_bucket, max = BURST / 2, burst = BURST, window = "1m30s")]
//! async fn search(query: &str) -> Result<(), RateLimited> {
//!     Ok(())
//! }
//! ```
//!
//! ## Costs
//!
//! `cost = <expr>` weighs a call: a call of cost 20 spends 20 of the `max` units of its window. The
//! expression is computed from the borrowed arguments, like `key`, and must be an unsigned integer. A cost is
//! a weight, never a number of stored entries, for every algorithm. A call whose cost is above what the limit
//! can ever admit (above `max`, or above a token bucket's `burst`) is refused with
//! [`Reason::TooLarge`](crate::Reason::TooLarge): no wait would admit it, so its `retry_after` is zero. A
//! limit of zero is no limit but a mistake: `max = 0` is a compile error here, and with the plain API
//! (`Rule::max(0)`, `Rule::in_flight(0)`, a token bucket's `Rule::burst(0)`) every call of it is refused as
//! misconfigured ([`Reason::Misconfigured`](crate::Reason::Misconfigured), HTTP 500) before any store is
//! asked, in memory and on Redis alike, and its prefix is told once in the log.
//!
//! Costs go best with a bucket or a window. A sliding log keeps one entry per admitted call, weighing its
//! cost: it stays exact in every interval, but its memory grows with the number of calls in the window. A
//! token bucket is one small value whatever the costs, and a fixed window one counter, which suits a budget
//! per window:
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! // At most 100,000 model tokens a minute per tenant, refilled as the minute passes. A token bucket holds one
//! // small value per tenant however many calls the budget is spent in.
//! #[rate_limit(prefix = "llm:", key = tenant, algorithm = token_bucket, max = 100_000, window = "1m", cost = prompt.len() / 4 + 1)]
//! async fn complete(tenant: &str, prompt: &str) -> Result<String, RateLimited> {
//!     Ok(String::from("..."))
//! }
//!
//! // A nightly import: at most 1,000 rows per user per day, counted in one window that resets each day.
//! #[rate_limit(prefix = "import:", key = user, algorithm = fixed_window, max = 1_000, window = "1d", cost = rows.len())]
//! async fn import(user: &str, rows: Vec<String>) -> Result<usize, RateLimited> {
//!     Ok(rows.len())
//! }
//! ```
//!
//! When the cost is known only after the call (the tokens a model actually used), charge an estimate and
//! settle it afterwards with the plain API: see [estimate, then
//! settle](super::plain_api#estimate-then-settle).
//!
//! ## Waiting for a slot
//!
//! A leaky bucket hands out slots at a steady rate, `max` per `window`. By default a call whose slot is not
//! free yet is refused. With `mode = wait`, the call sleeps until its slot, then runs: the calls are shaped
//! instead of refused. `max_wait` bounds the wait (the window by default); a call whose slot is further away
//! than that is refused.
//!
//! Every door waits the same way, in its node's line: the attribute's `mode = wait`, the plain API's
//! `enforce`, `acquire` and `estimate`, the tower layer, and an outbound [`turn`](crate::Limiter::turn). A
//! slot that comes goes to the most important call of the node waiting for one (its
//! [`priority`](crate::Request::priority)), then to the one that came first; a call moved past its deadline
//! by a more important one is refused. A caller that gives up (its future dropped: a timeout, a cancelled
//! request) leaves the line and gives its slot back, so that the callers behind it are not delayed by it.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! // At most 10 calls a second reach the paid API, evenly spaced; callers queue for up to 2 s.
//! #[rate_limit(prefix = "paid_api:", algorithm = leaky_bucket, max = 10, window = "1s", mode = wait, max_wait = "2s")]
//! async fn call_paid_api(request: &str) -> Result<(), RateLimited> {
//!     Ok(())
//! }
//! ```
//!
//! ## Calendar quotas
//!
//! `period = day | week | month` counts at most `max` units per period of the calendar instead of per window:
//! a day from midnight, a week from Monday's midnight, a month from its billing day (`anchor`, the 1st unless
//! set), in the zone `tz` (UTC unless set). A literal `tz` is checked when the crate compiles: an unknown name
//! is a compile error at the name, with the closest known one (`"Europe/Berln"`: did you mean
//! `Europe/Berlin`?). Any other expression is each call's zone, a [`Zone`](crate::Zone) or a reference to
//! one, computed from the borrowed arguments like `key`: it never moves an argument.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited, Zone};
//!
//! // 10,000 calls a day per API key, counted again at midnight in Berlin.
//! #[rate_limit(prefix = "daily:", key = api_key, max = 10_000, period = day, tz = "Europe/Berlin")]
//! async fn search(api_key: &str) -> Result<(), RateLimited> {
//!     Ok(())
//! }
//!
//! // 1,000,000 tokens a month per tenant from the 15th, at midnight in the zone the call is given.
//! #[rate_limit(prefix = "tokens:", key = tenant, max = 1_000_000, period = month, anchor = 15, tz = zone,
//!              cost = tokens)]
//! async fn complete(tenant: &str, zone: Zone, tokens: u32) -> Result<Zone, RateLimited> {
//!     Ok(zone) // `tz` borrowed `zone`: the body still owns it
//! }
//! ```
//!
//! A period is a fixed window of the calendar: `window`, `burst`, `mode = wait`, `max_wait`, a lease,
//! `in_flight`, and an algorithm other than `fixed_window` are compile errors beside it, and `tz` or `anchor`
//! without the period they apply to too. `cost`, `key`, `skip_if`, `shadow`, `count` and the rest combine
//! with it as with a rate. See [quotas on the calendar](super::calendar) for what Redis decides, and what a
//! client is told.
//!
//! ## Skipping, and shadow mode
//!
//! `skip_if = <expr>` is a `bool` over the arguments. When it is true, the call is not limited at all:
//! nothing is counted and no store is asked. `shadow = true` counts the calls and reports those the limit
//! would refuse (an info-level `tracing` event, [`Stats::shadowed`](crate::Stats::shadowed) and the metric
//! `limiter_shadow_rejections_total`), but never refuses or delays one: roll a new limit out in shadow mode,
//! watch what it would do, then turn it on.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! struct User {
//!     admin: bool,
//! }
//!
//! #[rate_limit(prefix = "delete:", max = 10, skip_if = user.admin)]
//! async fn delete(user: &User, id: u64) -> Result<(), RateLimited> {
//!     Ok(())
//! }
//!
//! #[rate_limit(prefix = "search:new:", max = 50, shadow = true)]
//! async fn search(query: &str) -> Result<Vec<String>, RateLimited> {
//!     Ok(Vec::new())
//! }
//! ```
//!
//! ## Counting by outcome
//!
//! `count = failures` charges only the calls whose body returns `Err`: a limit on failed logins, say.
//! `count = successes` charges only those that return `Ok`. The check still comes first: a call is refused
//! when the limit is reached. The unit is taken before the body runs, so concurrent attempts cannot overshoot
//! the limit, and once the body has returned, the unit is given back if the outcome does not count.
//!
//! Giving back is exact. A sliding log removes the entry this call added; a window decrements only the window
//! it charged; a bucket moves back by what is left of the charge ahead of now, never past full, whatever was
//! given back before or since. Once the charge has left the window, there is nothing to give back, and
//! nothing is. A body that never returns has no outcome: when the
//! function's future is dropped while its body runs (a cancelled request), or the body panics, the unit stays
//! charged.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! #[derive(Debug)]
//! enum LoginError {
//!     WrongPassword,
//!     Limited(RateLimited),
//! }
//!
//! impl From<RateLimited> for LoginError {
//!     fn from(e: RateLimited) -> Self {
//!         LoginError::Limited(e)
//!     }
//! }
//!
//! #[rate_limit(prefix = "failed_logins:", key = user, max = 3, window = "15m", count = failures)]
//! async fn login(user: &str, password: &str) -> Result<(), LoginError> {
//!     if password == "hunter2" {
//!         Ok(())
//!     } else {
//!         Err(LoginError::WrongPassword)
//!     }
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() {
//!     // Successful logins cost nothing.
//!     for _ in 0..10 {
//!         assert!(login("alice", "hunter2").await.is_ok());
//!     }
//!     // Three failures spend the limit; then even the right password is refused for 15 minutes.
//!     for _ in 0..3 {
//!         assert!(matches!(login("alice", "guess").await, Err(LoginError::WrongPassword)));
//!     }
//!     assert!(matches!(login("alice", "hunter2").await, Err(LoginError::Limited(_))));
//! }
//! ```
//!
//! ## Several limits on one function
//!
//! Stacked attributes are one decision. They are checked top first; the body runs only when every limit
//! admits the call, and a refused call is charged to none of them, so a burst limit that refuses a call does
//! not eat the hourly quota. Each stacked limit needs a `prefix` of its own (the same prefix twice is a
//! compile error: both would count in one bucket), and `crate = "..."`, when needed, goes on the first.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! #[rate_limit(prefix = "burst:", key = user, max = 2, window = 1)]
//! #[rate_limit(prefix = "quota:", key = (tenant, user), max = 1_000, window = "1h")]
//! async fn search(tenant: &str, user: &str, query: &str) -> Result<Vec<String>, RateLimited> {
//!     Ok(Vec::new())
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() {
//!     assert!(search("acme", "alice", "a").await.is_ok());
//!     assert!(search("acme", "alice", "b").await.is_ok());
//!     let refused = search("acme", "alice", "c").await.unwrap_err();
//!     // The error names the limit that refused the call, and gives every limit's state.
//!     assert_eq!(refused.prefix(), "burst:");
//!     let remaining: Vec<u64> = refused.limits().map(|(_, decision)| decision.remaining).collect();
//!     assert_eq!(remaining, [0, 998]); // the quota kept the refused call's unit
//! }
//! ```
//!
//! The error names the limit that refused the call ([`RateLimited::prefix`](crate::RateLimited::prefix),
//! [`RateLimited::policy`](crate::RateLimited::policy)), and [`RateLimited::limits`](crate::RateLimited::limits)
//! gives every limit's state, in the order written. In memory, the keys' shards are locked together; on one
//! Redis server (and Sentinel's master), the whole decision is one atomic script call over every key. On a
//! cluster, see [stacked limits on a cluster](super::redis#stacked-limits-on-a-cluster).
//!
//! The plain API's [`all`](crate::Limiter::all) and the tower layer's several rules are the same
//! decision.
//!
//! ## Re-exporting the runtime
//!
//! The expansion names the runtime `::limiter_runtime`. A crate that re-exports it under another path says
//! where, on the first attribute of the function: `#[rate_limit(crate = "my_app::limiter", max = 5)]`.
