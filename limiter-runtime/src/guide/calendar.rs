//! # Quotas on the calendar
//!
//! A rate per sliding window is not how APIs sell quotas: customers buy 10,000 calls *a day* or 1,000,000
//! tokens *a month*, reset at midnight in their time zone or on their billing day. `period = day | week |
//! month` is that limit: at most `max` units per period of the calendar, counted again from the period's first
//! instant in the rule's zone, across every node.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited, Zone};
//!
//! // 10,000 calls a day per API key, reset at midnight in Berlin (23 or 25 hours on the days the clocks
//! // change).
//! #[rate_limit(prefix = "daily:", key = api_key, period = day, tz = "Europe/Berlin", max = 10_000)]
//! async fn search(api_key: &str, query: &str) -> Result<usize, RateLimited> {
//!     Ok(query.len())
//! }
//!
//! /// A tenant, with the zone and the billing day it signed up with.
//! struct Tenant {
//!     id: u64,
//!     zone: Zone,
//!     billing_day: u8,
//! }
//!
//! // 1,000,000 tokens a month per tenant, from its billing day (the last day of a shorter month), at midnight
//! // in its own zone; a call weighs the tokens it asks for.
//! #[rate_limit(prefix = "tokens:", key = tenant.id, period = month, anchor = tenant.billing_day,
//!              tz = tenant.zone, max = 1_000_000, cost = tokens)]
//! async fn complete(tenant: &Tenant, tokens: u32) -> Result<String, RateLimited> {
//!     Ok(format!("{tokens} tokens for tenant {}", tenant.id))
//! }
//! ```
//!
//! - `period`: `day` (midnight to midnight), `week` (Monday's midnight, ISO 8601 weeks) or `month` (the
//!   billing day's midnight to the next month's).
//! - `tz`: an IANA zone name, checked when the crate compiles (an unknown name is a compile error, with the
//!   nearest known name), or any expression of the arguments giving a [`Zone`](crate::Zone) (or a reference
//!   to one): that call's zone, a tenant's own. UTC when left out. The zone data is bundled with the crate
//!   (through `jiff`): a machine without tzdata counts alike, and a zone's rules are those of the crate's
//!   version, not the machine's.
//! - `anchor`: the billing day, 1 to 31, with `period = month` only: a month shorter than it starts on its
//!   last day (31 is every month's last day; February's is the 28th or the 29th). A literal is checked when
//!   the crate compiles; any other expression of the arguments is that call's billing day (an integer: 0
//!   reads as 1, above 31 as the month's last day).
//! - `max` and `cost` as for a rate; `key`, `prefix`, `policy`, `message`, `on_error`, `skip_if`, `shadow`,
//!   `count` as everywhere. A period is a fixed window of the calendar: `window`, `burst`, `mode = wait`,
//!   `lease` and an algorithm other than `fixed_window` do not combine with it (a compile error says so).
//!
//! ## Exact on Redis's clock
//!
//! Which period a call is in is decided by Redis, from its own `TIME`, in the same script call that counts
//! it. The node only computes, in the zone, where the periods around its own "now" end (the previous one,
//! the current one and the next) and sends those instants: Redis picks the first that is still ahead. So a
//! node whose clock is off by less than a period changes nothing, and every node counts a key in one
//! period, whatever its clock. (A node a whole period behind is refused by the script, and the rule's
//! `on_error` decides its calls.) A key's counter expires when its period ends.
//!
//! A call of a key in another zone (a tenant that moved), on another billing day or of another period finds
//! the key's count carried over while its own period is current: all of it counts in the period now is in
//! (see [what carries over](super::limits)).
//!
//! ## What a client is told
//!
//! A refused call's [`retry_after`](crate::RateLimited::retry_after), and every decision's
//! [`reset_after`](crate::Decision::reset_after), are the time to the period's end; `window` is the
//! current period's length. Over HTTP (the [tower layer](super::http), or `RateLimited` as a response) that
//! is `Retry-After` and the quota fields' `t`:
//!
//! ```text
//! HTTP/1.1 429 Too Many Requests
//! Retry-After: 3030
//! RateLimit-Policy: "daily";q=10000;w=86400
//! RateLimit: "daily";r=0;t=3030
//! ```
//!
//! [`Limiter::usage`](crate::Limiter::usage) reads what a key has used without charging it, and when its
//! quota starts again, written in the rule's zone as RFC 3339: what a billing page shows.
//!
//! ```
//! use limiter_runtime::{Limiter, Period, Rule, Zone};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
//! let limiter = Limiter::in_memory();
//! let tokens = Rule::new().prefix("tokens:").period(Period::Month).anchor(15).max(1_000_000);
//! // A tenant's own zone, read from its settings: an unknown name is an error here, not at every call.
//! let acme = tokens.tz(Zone::get("America/Sao_Paulo")?);
//! limiter.check(&acme, 42).cost(1_500).await;
//! let usage = limiter.usage(&acme, 42).await?;
//! assert_eq!((usage.used, usage.remaining), (1_500, 998_500));
//! assert!(usage.resets_at.ends_with("T00:00:00-03:00")); // the 15th, at midnight in São Paulo
//! # Ok(()) }
//! ```
//!
//! ## Without the attribute
//!
//! [`Rule::period`](crate::Rule::period), [`tz`](crate::Rule::tz) and [`anchor`](crate::Rule::anchor) make
//! the rule; a zone or a billing day per call is a rule per tenant (`rule.clone().tz(zone).anchor(day)`, or
//! one kept per tenant). Stacked
//! with rates ([`Limiter::all`](crate::Limiter::all), or several attributes), a calendar quota
//! is decided with them as one: a call the rate refuses is charged nothing of the month. A
//! [`Estimate`](crate::Estimate) settled below its estimate gives the rest back to the period it was
//! charged in (nothing, once that period has ended).
