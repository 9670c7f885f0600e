//! # Limits from data
//!
//! A limit's numbers may come from data instead of code: a **policy** is a named limit (what the attribute's
//! `policy = "search"` and [`Rule::policy`](crate::Rule::policy) name); a **plan** is a named set of its values
//! (free, pro, enterprise) that each call picks, as it picks its key; an **override** changes one key's, a
//! pattern of keys', or a policy's values at run time, and wins over the plan. A **limits file** holds
//! policies, plans and defaults; it is checked whole, reloaded live and shared by every node.
//!
//! ## Plans
//!
//! ```
//! use limiter_runtime::{Limiter, Plan, Priority, Rule};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let search = Rule::new()
//!     .prefix("search:")
//!     .policy("search")
//!     .max(100)
//!     .window(Duration::from_secs(60))
//!     .plan("pro", Plan::new().max(1_000))
//!     .plan("enterprise", Plan::new().max(10_000).reserve(Priority::Critical, 20));
//! let limiter = Limiter::in_memory();
//! let tenant_plan = String::from("pro"); // from the tenant's record
//! assert_eq!(limiter.check(&search, "acme").plan(&tenant_plan).await.limit, 1_000);
//! # }
//! ```
//!
//! - A plan sets any of `max`, `window`, `burst`, `reserve`, `penalty` and `in_flight` (the calls at once of
//!   a limit in flight, or of the one `in_flight = ..` adds beside an attribute's rate); what it leaves out is
//!   the policy's. Its values are decided in the same script call as any other: a call that names no plan
//!   pays nothing for plans.
//! - Every plan of a policy counts under its prefix: a tenant that moves from `free` to `pro` keeps what it
//!   spent, and the carry-over table below says what becomes of it.
//! - The plan is named per call: [`Request::plan`](crate::Request::plan) in the plain API, `plan = <expr>` on
//!   the attribute (a `&str`, a `String`, an `Option` of one: `None` is the policy's own values), and
//!   [`RateLimitLayer::plan`](crate::tower::RateLimitLayer::plan) on the tower layer (a function of the
//!   request's head). A name the policy has no plan of leaves the call on the policy's own values, and is
//!   told once in the log (never a refusal, never unlimited).
//! - What applied is named: [`RateLimited::plan`](crate::RateLimited::plan) and
//!   [`overridden`](crate::RateLimited::overridden); the quota field `RateLimit-Policy` adds `plan="pro"` and
//!   `override` (parameters a client that does not know them skips); the metric
//!   `limiter_plan_decisions_total{prefix, plan, reason}`; the `limited` trace event's `plan` and
//!   `overridden` fields.
//! - Resolution, the first that sets a value wins: the key's own override, then a pattern's (the longest),
//!   then the policy's override; the call's plan; the policy as the limits file (or
//!   [`LimiterBuilder::policy`](crate::LimiterBuilder::policy)) defines it; the rule or attribute; the
//!   module's defaults; the file's `[defaults]`; the crate-wide defaults.
//!
//! ## Overrides of a pattern of keys
//!
//! [`Override::pattern`](crate::Override::pattern)`("search", "acme*")` sets values for every key that starts
//! with `acme` (a tenant's keys, `acme:eu`, `acme:us`), on every node within a second, as other overrides do;
//! the longest matching pattern wins, a key's own override wins over any pattern. Through the admin API:
//! `PUT /api/overrides` with `{"policy": "search", "pattern": "acme*", "max": 10000}`.
//!
//! ## The limits file
//!
//! One TOML file per service: [`LimiterBuilder::limits_file`](crate::LimiterBuilder::limits_file), or
//! `LIMITER_LIMITS=path`. Each text is read with the grammar the attribute uses for it, so the file accepts
//! exactly what the attribute does.
//!
//! ```toml
//! [defaults]                      # under the crate-wide defaults' place: any policy field but plans, in_flight, period
//! window = "1m"
//! on_error = "local"
//!
//! [policies.search]               # sliding_log (the default algorithm); the name: [A-Za-z0-9_.-]+
//! max = 100
//! message = "slow down"
//! penalty = "1m..1h"              # a refusal blocks the key: 1 min, doubling up to 1 h
//! reserve = "critical 20%"
//!
//! [policies.search.plans.pro]     # a plan: max, window, burst, reserve, penalty, in_flight
//! max = 1000
//!
//! [policies.burst]
//! algorithm = "token_bucket"
//! max = 10
//! window = "1s"
//! burst = 20
//! lease = 50                      # on Redis: units a node spends in memory
//! lease_ttl = "100ms"
//!
//! [policies.windows]
//! algorithm = "fixed_window"      # or "sliding_window"
//! max = 1000
//! window = "1h"
//! shadow = true                   # counts and reports, never refuses
//!
//! [policies.partner]
//! algorithm = "leaky_bucket"
//! prefix = "outbound:partner:"
//! max = 10
//! window = "1s"
//! max_wait = "30s"                # waits its turn up to 30 s
//!
//! [policies.uploads]
//! in_flight = 4                   # calls at once (a policy of its own: no max, window or algorithm)
//! in_flight_ttl = "30s"
//!
//! [policies.monthly]
//! period = "month"                # a calendar quota
//! tz = "Europe/Berlin"
//! anchor = 15
//! max = 1000000
//! ```
//!
//! | field | what | where |
//! |---|---|---|
//! | `prefix` | the store key's namespace; left out, the defaults' prefix followed by the policy's name and `:` (`rate_limit:search:`), so two policies never share a count | policy, defaults |
//! | `algorithm` | `sliding_log`, `fixed_window`, `sliding_window`, `token_bucket`, `leaky_bucket` | policy, defaults |
//! | `max`, `window` | admissions per window (at least 1); a duration's text or whole seconds | policy, defaults, plan |
//! | `burst` | a token bucket's capacity | policy, defaults, plan |
//! | `max_wait` | a leaky bucket's wait for its slot | policy, defaults |
//! | `message` | the refusal's message | policy, defaults |
//! | `penalty` | `"10m"` or `"1m..1h"` | policy, defaults, plan |
//! | `reserve` | `"critical 20%, high 30%"`, or `"none"` | policy, defaults, plan |
//! | `on_error` | `open`, `closed`, `local` | policy, defaults |
//! | `shadow` | `true` or `false` | policy, defaults |
//! | `lease`, `lease_ttl` | units a node takes at once, and how long it spends them | policy, defaults |
//! | `in_flight`, `in_flight_ttl` | calls at once, and a permit's time to live | policy (`in_flight` alone: not beside `max`), plan (`in_flight`) |
//! | `period`, `tz`, `anchor` | a calendar quota: `day`, `week`, `month`; an IANA zone; a billing day 1 to 31 | policy |
//!
//! What a policy in the file sets wins over what the attribute (or rule) naming it sets; what it leaves out
//! is the attribute's. Refused, each with the file, line and column and what was expected: an unknown field
//! (at any level), a wrong type, a zero or negative count, an unknown algorithm, priority or zone, a bad
//! duration, penalty or reserve, a policy written twice, a plan field a policy of its kind does not take, a
//! file that is not TOML, one cut off, larger than 1 MiB, missing or not UTF-8. Every `#[rate_limit]` of
//! the binary is known before `main` runs: a policy a function names that the file (nor the builder) does not
//! define, or a plan it names in a literal (`plan = "pro"`) that its policy lacks, is refused too, at start.
//! The operators' overview lists every policy the file and the functions name, before any call of it.
//!
//! ## Reloaded live, on every node
//!
//! The file is looked at four times a second. A change is read and checked whole; good, it applies here at
//! once and is pushed through Redis (the overrides' hash and channel, versioned), and every node applies it
//! within a second; [`Limiter::push_limits`](crate::Limiter::push_limits) and the admin API's
//! `PUT /api/limits` (the operator's token; on the record) push a text the same way, refused before anything
//! changes when it is bad, or when Redis does not take it. A version is the first 8 hex digits of the
//! text's SHA-1: each node reports the one it runs ([`NodeView::limits`](crate::NodeView::limits), the
//! page's Nodes table, which marks a node on another version than the others).
//!
//! A bad file is logged with its line and column, counted (`limiter_limits_reloads_total{outcome="refused"}`)
//! and reported beside the node's version ([`NodeView::limits_refused`](crate::NodeView::limits_refused));
//! the last good limits stay: a reload never turns a limit off. An editor's swap file beside it is never
//! read; a file removed is a refusal, its limits kept. The same text again changes nothing (`unchanged`):
//! no count reset, no bucket refilled.
//!
//! ## When a limit changes: what carries over
//!
//! Every store keeps what it needs of the terms a key was counted under, and the first call under other
//! terms carries the count over to them, in memory and on Redis alike (on every node: what Redis holds is
//! the one count). The same terms again change nothing: no reset, no refill.
//!
//! | algorithm | `max` raised | `max` lowered | `window` changed | `burst`, level | algorithm changed |
//! |---|---|---|---|---|---|
//! | `sliding_log` | the count stays: exactly the difference is admitted at once | the count stays: nothing past the new `max` until enough admissions leave the window | the admissions stay, by their times: those in the new window count (those that had left the old one are gone) | — | afresh¹ |
//! | `fixed_window` | as the log | as the log | while the old window is current, its whole count moves into the window now is in (a count has no times: all of it may fall there), for that window; an old window that has ended carries nothing | — | afresh |
//! | `sliding_window` | as the log | as the log | what the two windows weigh at the change, in whole units rounded up, becomes the count of the window now is in | — | afresh |
//! | calendar (`period`) | as the log | as the log | another period (or zone): the count of the period still current moves whole into the one now is in | — | afresh |
//! | in flight | the permits held stay: exactly the difference is taken at once | nothing until permits come back below the new `max` | a permit's time to live: the permits taken keep theirs | — | afresh¹ |
//! | `token_bucket` | its rate; `burst` follows `max` unless set: the level carries (right) | as raised | as raised: its rate | by [`Carry`](crate::Carry): the tokens in use keep their share of the new `burst` (`Proportional`, the default: 30% full stays 30% full), or as many tokens stay as there were, at most the new `burst` (`AsIs`) | afresh |
//! | `leaky_bucket` | its rate: the line carries (right) | as raised | as raised | by `Carry`: the slots queued stay queued, spaced anew: the line reaches twice as far at half the rate (`Proportional`); or the line ends where it ended, every call admitted keeping its slot (`AsIs`). `max_wait` is a call's patience, not the line's: changed, it moves nothing | afresh |
//!
//! - **Never a refill.** A bucket's level is computed exactly (in doubles, by both stores alike) and rounded
//!   toward the fuller bucket, to its grain (a millionth of a unit, for a window of a second): after a change
//!   a token bucket holds no more tokens than before, in proportion (`Proportional`) or as they were
//!   (`AsIs`), and a limit changed back leaves a bucket as it was. A bucket that was full (its key gone) is
//!   full under any terms. A carried bucket starts a new run of charges: a charge made before the change
//!   gives nothing back. A line whose rate rose (`Proportional`) is shortened: a call admitted then may take
//!   a slot closer than `window / max` to one admitted before the change; `AsIs` never moves the line.
//! - **Afresh.** A key counted by another algorithm (its rule's algorithm changed, or another node still
//!   counts it with the old one) starts afresh under the new one, counting nothing of the old: never a
//!   `WRONGTYPE` from Redis, never a degraded decision. The store says so: once per prefix in the log, at
//!   warn level, and each key in `limiter_keys_started_afresh_total{prefix}` (feature `metrics`). Two nodes
//!   counting one prefix with two algorithms (a rolling deploy) take turns starting its keys afresh, each
//!   counted: finish the deploy. ¹ On Redis, a log and a limit in flight both keep a sorted set: a limit in
//!   flight that finds a log's starts afresh (every admission of the log has already passed), untold; a log
//!   that finds permits counts each permit still held as one admission until it expires (it admits less,
//!   never more), untold. A lease (`lease = n`) starts afresh untold.
//! - **Lines to an upstream** ([`Limiter::turn`](crate::Limiter::turn)) are re-spaced by the rate their fleet
//!   learns, not carried.
//! - **Operators' reads.** [`inspect`](crate::Limiter::inspect) reads a key as the last call left it: after
//!   a change, as the next call will find it once that call has carried it.
//!
//! ```
//! use limiter_runtime::{Algorithm, Carry, Limiter, Rule};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let bucket = |burst, carry| {
//!     Rule::new()
//!         .prefix("api:")
//!         .algorithm(Algorithm::TokenBucket)
//!         .max(10)
//!         .window(Duration::from_secs(1))
//!         .burst(burst)
//!         .carry(carry)
//! };
//! let limiter = Limiter::in_memory();
//! for _ in 0..7 {
//!     limiter.check(&bucket(10, Carry::Proportional), "acme").await;
//! }
//! // 3 tokens of 10 left; the burst doubled, 30% of it: 6 tokens.
//! let doubled = limiter.check(&bucket(20, Carry::Proportional), "acme").cost(0).await;
//! assert_eq!(doubled.remaining, 6);
//! // As is, the tokens held stay: 3 of 20.
//! for _ in 0..7 {
//!     limiter.check(&bucket(10, Carry::AsIs), "initech").await;
//! }
//! assert_eq!(limiter.check(&bucket(20, Carry::AsIs), "initech").cost(0).await.remaining, 3);
//! # }
//! ```
