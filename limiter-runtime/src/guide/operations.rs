//! # Operations: settings, overrides, switches, what operators see, observability
//!
//! ## Where each setting comes from
//!
//! For each part of a limit (`max`, `window`, `prefix`, `message`, `algorithm`, `burst`, `on_error`, ...),
//! the first row that sets it wins:
//!
//! | # | source | set with | scope |
//! |---|---|---|---|
//! | 1 | a run-time override of one key (`max`, `window`) | `limiter.set_override(Override::key(policy, key).max(..))` | one key of a limit, every node |
//! | 2 | a run-time override of a policy (`max`, `window`) | `limiter.set_override(Override::policy(policy).max(..))` | every key of a limit, every node |
//! | 3 | the attribute's arguments, or the plain API's `Rule` | `#[rate_limit(max = 5)]`, `Rule::new().max(5)` | one function, or one rule |
//! | 4 | module defaults, innermost module first | [`LimiterBuilder::defaults_for`](crate::LimiterBuilder::defaults_for) | a module and the modules inside it |
//! | 5 | crate-wide defaults | [`LimiterBuilder::max`](crate::LimiterBuilder::max), [`prefix`](crate::LimiterBuilder::prefix), ... or the [environment](super::redis#the-environment) | everything |
//! | 6 | built-in defaults | | prefix `rate_limit:`, window 60 s, max 100, `sliding_log`, `on_error = open`, message `"too many requests, please try again later"` |
//!
//! Module defaults apply to the annotated functions of a module and of the modules inside it:
//! `"my_crate::billing"` also covers `my_crate::billing::invoices`, but not `my_crate::billing_v2`. Each part
//! comes from the innermost configured module that sets it, as for log targets.
//!
//! ```
//! use limiter_runtime::{Limiter, OnError, Rule};
//! use std::time::Duration;
//!
//! let limiter = Limiter::builder()
//!     .prefix("shop:")
//!     .max(100)
//!     .window(Duration::from_secs(60))
//!     .defaults_for("my_crate::billing", Rule::new().max(10).on_error(OnError::Closed))
//!     .build()
//!     .unwrap();
//! ```
//!
//! ## Run-time overrides
//!
//! An operator can change a limit's `max` and `window` while the service runs, for every key of a policy or
//! for one key. A policy is named as everywhere else (bans, inspection, the admin API, the page): by its
//! name, or by its prefix.
//!
//! ```
//! use limiter_runtime::{Limiter, Override, Rule};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
//! let limiter = Limiter::in_memory();
//! let employees = Rule::new().prefix("rate_limit:emp:").policy("employees").max(5);
//! limiter.check(&employees, "1000").await;
//!
//! // Every employee: 10 per 5 s (the policy by its name).
//! limiter.set_override(Override::policy("employees").max(10).window(Duration::from_secs(5))).await?;
//! // Employee 1001 alone: 1 per window (the policy by its prefix). A key's own override wins.
//! limiter.set_override(Override::key("rate_limit:emp:", "1001").max(1)).await?;
//! assert!(limiter.check(&employees, "1001").await.allowed);
//! assert!(!limiter.check(&employees, "1001").await.allowed);
//! assert_eq!(limiter.check(&employees, "1002").await.limit, 10);
//!
//! limiter.clear_override(&Override::key("rate_limit:emp:", "1001")).await?;
//! let in_force: Vec<Override> = limiter.overrides();
//! assert_eq!(in_force.len(), 1);
//! # Ok(()) }
//! ```
//!
//! [`Override::key`](crate::Override::key) takes the key as the attribute writes it: the parts of a key list
//! joined with `:`. Setting an override again replaces it; [`clear_override`](crate::Limiter::clear_override)
//! removes the override of the target it is given, whatever that override set. An override is as strict as
//! the attribute: a `max` of 0 (a limit of zero refuses every call) or a window under a microsecond is
//! refused with [`Error::InvalidOverride`](crate::Error::InvalidOverride), and a runtime that finds one in
//! Redis (written by hand) ignores it, with a warning.
//!
//! With Redis, overrides are stored in one hash, `limiter:overrides`, whose `version` field counts the
//! changes, and each change is announced with its version on a channel of the same name, in one script call.
//! Every runtime holds every override in memory and applies each change as it is announced, so a change
//! takes effect on every node within a second, and a decision never pays a round trip to read its limit: it
//! stays one `EVALSHA` (`tests/tests/suite/run_time_control.rs` counts them). Neither a change nor a decision pays
//! for the number of overrides, so one override per customer's plan is fine: `BENCHMARKS.md` sets 100,000,
//! one by one. A runtime that missed an announcement (its connection was down) sees the gap in the next
//! version, or in the version it reads every 5 s, and reloads the hash.
//! [`Stats::overrides`](crate::Stats::overrides) counts the overrides in force. A change that Redis does not
//! take within 5 s is an error ([`Error::Timeout`](crate::Error::Timeout): it may or may not have been
//! applied). In memory, overrides apply to that process alone.
//!
//! ## The two switches
//!
//! [`set_enabled(false)`](crate::Limiter::set_enabled) turns limiting off on every runtime sharing the Redis,
//! within a second, and `set_enabled(true)` turns it back on: a switch for a Redis under pressure or for an
//! incident. It is kept in the overrides' hash and announced on their channel, so a runtime started later
//! finds it. An error means Redis did not take the change, and no runtime's switch moved.
//!
//! When Redis itself is the problem and cannot take the change,
//! [`set_enabled_here(false)`](crate::Limiter::set_enabled_here) switches this runtime alone, at once and
//! without a word to Redis; the runtime then sends Redis nothing at all, not even heartbeats. Switched off,
//! every call goes ahead, with no Redis traffic for its decision, and nothing is advertised in the quota
//! fields. Limiting is on while both switches are ([`is_enabled`](crate::Limiter::is_enabled)):
//!
//! | `set_enabled_here` (this runtime) | `set_enabled` (every runtime) | limiting |
//! |---|---|---|
//! | on (the default) | on (the default) | on |
//! | on | off | off, on every runtime |
//! | off | either | off, on this runtime |
//!
//! ```
//! use limiter_runtime::{Limiter, Rule};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), limiter_runtime::Error> {
//! let limiter = Limiter::in_memory();
//! let rule = Rule::new().prefix("api:").max(1);
//! limiter.set_enabled_here(false);
//! assert!(limiter.check(&rule, "k").await.allowed);
//! assert!(limiter.check(&rule, "k").await.allowed);
//! limiter.set_enabled_here(true);
//! assert!(limiter.is_enabled());
//! # Ok(()) }
//! ```
//!
//! ## What operators see
//!
//! **A key's state.** [`Limiter::inspect`](crate::Limiter::inspect) reads one limit's state for one key
//! without charging it: used and remaining, when one more unit fits and when the limit is full again, the
//! permits held for a limit in flight, and whether this node's deny cache refuses the key without asking
//! Redis. On Redis it is one read-only script call (`scripts/inspect.lua`, flagged `no-writes`) on Redis's
//! clock, read by the same twin as a decision, so memory and Redis read a key alike
//! (`tests/tests/suite/operators.rs` checks it on a schedule of calls, for every algorithm).
//!
//! **Verdicts.** Every decision names why it was made ([`Decision::verdict`](crate::Decision::verdict)):
//! `admitted`, `limited`, `blocked`, `reserved`, `unavailable` (Redis down, the rule fails closed),
//! `degraded_open`, `degraded_local`, `shadow` (a shadow limit would have refused), `skipped` (`skip_if`),
//! `switched_off` or `misconfigured` (a limit of zero, refused as the server's mistake, told once in the log
//! at error level). The same words label the metrics (`reason`) and the tracing events (`reason`).
//!
//! **The most limited keys.** Each node tallies its decisions per policy (by prefix, at most 128: a prefix
//! made per tenant is not a policy): counts, and two bounded summaries of keys over the last minute
//! (space-saving, 1,000 keys each): the most refused, and the most decided (one decision in 16). A call
//! refused because Redis could not decide and its rule fails closed is counted among the policy's refusals,
//! but not against its key: an outage says nothing of which keys are hot. With Redis, every heartbeat (1 s)
//! stores the node's report, its 100 most refused keys and 20 most decided, in one key of its own with the
//! heartbeat's time to live (`limiter:report:{limiter:instances:<group>}:<node>`, in the Cluster slot of the
//! group's set of instances, in the same script call as the heartbeat).
//! [`Limiter::top_limited`](crate::Limiter::top_limited) merges every live node's report: the whole
//! service's most refused keys, each count never below the true one.
//! [`Limiter::overview`](crate::Limiter::overview) adds each policy's decisions and refusals per second and
//! over the minute, and each node's health (its breaker, its degraded decisions, its switch); when Redis
//! does not answer, it is this node's view alone, marked `partial`. On a Zipf(1.1) workload over 1,000,000
//! keys, a summary recalls at least 95 of the true top 100 (a unit test holds it to that).
//! [`LimiterBuilder::tally(false)`](crate::LimiterBuilder::tally) turns a node's tally off (it costs a
//! refused call in memory about a quarter more instructions; on Redis about 1.5%).
//!
//! **The admin router and its page** (feature `admin`). `limiter_runtime::admin::router` serves
//! those views as JSON, a key's state, the overrides (list, set, clear), the bans and the switch, and a live
//! page at its root. It inspects a key under a policy by its name or prefix, with the policy's terms
//! (algorithm, `max`, window, burst, zone...) as the node that decided it counts it: each node's report
//! carries them, so any node answers for a policy any node used. Its inputs are as strict as the
//! attribute's: an override of `max` 0 is a 400 that says why, an override of a prefix no node has used (a
//! typo) a 404 that names it, as a ban under a policy no node has used is. The page is one HTML page with its
//! script inline, updated every second, with per-policy charts, the top limited keys, the nodes, forms for
//! overrides and bans, and the record of changes. It asks for the token once and keeps it in the tab's
//! session storage, never in a URL. The example service mounts it at `/admin` (`ADMIN_TOKEN` required);
//! `tests/tests/suite/admin_page.rs` drives it in headless Chromium, as an operator and as a viewer.
//!
//! **The door.** Before every route stands an `admin::Door` (`admin::builder(limiter)` for more than one
//! token; `Door::guard` puts routes of your own behind it, as the example service does with `/limit/*`):
//!
//! - *Tokens of two roles*, at least 16 characters (`openssl rand -hex 16`; a shorter one is an
//!   `Error::InvalidAdminToken` at build, saying so), each compared in constant time: the operator's may do
//!   everything; a viewer's reads the page and every `GET`, and a change answers it 403 with a sentence. The
//!   page shows a viewer no control that changes anything.
//! - *Failed tokens limited* through this same limiter: the policy `admin-failed-tokens`, keyed by client
//!   address, 5 failures in any minute (a sliding log), then a penalty of 1 minute doubling up to an hour.
//!   While an address is blocked, every request from it is answered 429 with `Retry-After`, the right token's
//!   and the page's too, on every node (the block is in Redis); other addresses are served. Without Redis,
//!   or while it fails (`on_error = local`), each node counts alone; the switch does not open the door. The
//!   address is the peer's (serve with `into_make_service_with_connect_info::<SocketAddr>()`), or behind
//!   proxies the one `Builder::client` finds with the tower layer's rules (`Key::x_forwarded_for(n)`); a
//!   server that records no address counts every request under one key, `no-client-address`, and says so in
//!   the log: never unlimited. At the default pace a guesser gets 30 tries in the first hour, then 5 an
//!   hour: about 140 a day, against the 2^64 values of a 16-character hex token.
//! - *Every change on the record*: each override set or cleared, switch, ban and unban made through the door
//!   (and each 2xx change to a guarded route of yours, as its method and target) is a `tracing` event at
//!   `info` with `role`, `client` and `change`, and an entry in a Redis list every node reads
//!   (`limiter:changes`, the newest 100, trimmed as it is added to), listed on the page and under
//!   `GET <prefix>/api/changes`. A limiter without Redis keeps its own.
//!
//! ## Observability
//!
//! **`tracing` events.** Every decision is a trace-level event (`key`, `allowed`, `reason`). A refused call is
//! logged at debug level. A shadow limit's "would have limited" goes
//! to info. Degraded mode logs its first failure (with the key and the cause) and its recovery at warn. A
//! limiter built from the environment because none was installed says so once, at warn level.
//!
//! **Stats.** [`Limiter::stats`](crate::Limiter::stats) returns a [`Stats`](crate::Stats): the decisions made
//! in degraded mode, whether the breaker is open, the runtimes sharing the Redis, the calls shadow limits
//! would have refused, the keys held in this process's memory and those it forgot early, and the overrides
//! in force.
//!
//! **Metrics.** With the `metrics` feature, the [`metrics`](https://docs.rs/metrics) facade records these.
//! Labels name a limit by its prefix (or a layer's policy), never a user's key. Install the recorder before
//! the first decision: each limiter registers a prefix's handles on its first decision there, and keeps
//! them.
//!
//! | metric | kind | labels, and what it counts |
//! |---|---|---|
//! | `limiter_decisions_total` | counter | `prefix`, `outcome` = `allowed`, `limited` or `degraded`, and `reason`, the decision's [verdict](crate::Verdict) |
//! | `limiter_priority_decisions_total` | counter | `prefix`, `priority` and `reason`: the decisions of the limits that keep shares for the higher priorities ([`Rule::reserve`](crate::Rule::reserve)), by the call's [priority](crate::Priority) |
//! | `limiter_shadow_rejections_total` | counter | `prefix`: calls a shadow limit would have refused |
//! | `limiter_redis_duration_seconds` | histogram | `prefix`: one Redis decision, answered or not |
//! | `limiter_evicted_keys_total` | counter | in-memory keys forgotten before their expiry, to stay within `max_keys` |
//! | `limiter_redis_batch_calls` | histogram | the calls one script call decided (more than one when calls were batched) |
//! | `limiter_lease_units_taken_total` | counter | units this node took from Redis in leases |
//! | `limiter_lease_units` | gauge | units this node's leases hold unspent (every 100 ms) |
//! | `limiter_reconciled_total` | counter | calls Redis admitted after their deadline whose caller was refused meanwhile: given back |
//! | `limiter_unidentified_requests_total` | counter | `policy` (the layer's first rule's), `outcome` = `peer`, `fallback`, `passed` or `no_peer` (no peer address either: one shared key): requests a tower layer's key found nothing in, and what became of them |
