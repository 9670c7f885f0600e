//! # Penalties and bans
//!
//! A limit refuses a call while its key is over the limit. Abuse calls for more: a key that hits the limit
//! is blocked for a while, longer if it keeps coming back, and an operator who sees an attack bans a key
//! for every node at once.
//!
//! ## A penalty on a rule
//!
//! ```
//! use limiter_runtime::{rate_limit, Penalty, RateLimited, Rule};
//! use std::time::Duration;
//!
//! // Five failed logins per IP in 15 minutes; the sixth blocks the IP for a minute, then 2, 4, ... up to
//! // an hour at each repeat offence.
//! #[rate_limit(prefix = "failed_logins:", key = ip, max = 5, window = "15m", count = failures, penalty = "1m..1h")]
//! async fn login(ip: &str, password: &str) -> Result<(), RateLimited> {
//!     Ok(())
//! }
//!
//! // The same with the plain API.
//! let rule = Rule::new()
//!     .prefix("failed_logins:")
//!     .max(5)
//!     .window(Duration::from_secs(15 * 60))
//!     .penalty(Penalty::escalating(Duration::from_secs(60), Duration::from_secs(3600)));
//! # let _ = rule;
//! ```
//!
//! - **An offence** is a call that the limit itself refuses, one that it could admit some day (a call too
//!   large for the limit, [`Reason::TooLarge`](crate::Reason::TooLarge), is not). It starts a block.
//! - **A block lasts at least until the limit would admit the call** that started it: the penalty's length,
//!   or the limit's own `retry_after` when that is later (a login limited to 5 in 15 minutes under
//!   `penalty = "1m..1h"` is told the 15 minutes, not the minute). So `Retry-After` is a promise: a client
//!   that waits exactly as long as it is told is admitted, and is never an offender for having obeyed.
//! - **During the block** every call of the key is refused, counting nothing, with
//!   [`Verdict::Blocked`](crate::Verdict::Blocked) and `retry_after` what is left of the block (so HTTP
//!   answers `429` with `Retry-After` the block's remaining time and the quota fields, and gRPC
//!   `RESOURCE_EXHAUSTED` with the delay). Calls refused during a block do not extend it: `Retry-After` stays
//!   true.
//! - **Fixed** (`penalty = "10m"`, [`Penalty::fixed`](crate::Penalty::fixed)): every block as long.
//!   **Escalating** (`penalty = "1m..1h"`, [`Penalty::escalating`](crate::Penalty::escalating)): the first
//!   block `first` long, each repeat offence's twice the last one's, up to the cap. A key that stays clean
//!   for the cap after its block ends starts again at the first length.
//! - **Stacked calls**: a call is refused, and charges none of its limits, when any of its keys is blocked.
//! - **Every algorithm**, calls in flight and calendar quotas included. A shadow rule reports its blocks
//!   (as shadow refusals) and never refuses. The attribute refuses `penalty` beside `in_flight` (which limit
//!   would it be for?), beside `lease` (each call must read the block, so none is spent from a lease) and
//!   beside `mode = wait` (a call refused for a queue longer than its wait did not abuse the rate, and its
//!   block would refuse every call of the key); with the plain API, a rule with a penalty takes no lease, and
//!   a waiting rule's refusal blocks the key like any other (see [`Rule::penalty`](crate::Rule::penalty)).
//!
//! ## Where the block lives
//!
//! With Redis, beside the limit's key, in the same Cluster slot: `<key>%block:t` (a key with a hash tag),
//! `{<key>}%block`, or `{<n>}<key>%block:s` (a key holding a lone `}`), never another limit's key. It holds
//! `<until µs>:<offences>:<p|b>` with a time to live of the block plus the cap, so nothing outlives the
//! block and the count's decay; decisions compare Redis's clock with `until`, never the TTL. The block is
//! read and written by the same script call that counts (`scripts/groups.lua`), so a penalty costs no
//! extra round trip, and every node sees a block at its next call. In memory, the store keeps the same
//! block in the key's shard (within [`max_keys`](crate::LimiterBuilder::max_keys); a block counts as a
//! key), with the same arithmetic (`src/penalty.rs`).
//!
//! A node that has seen a block answers later calls of the key itself (the deny cache, see
//! [`failures`](super::failures)), a second at a time: a flood on a blocked key costs Redis a call per node
//! and second, not one per call, and what Redis holds (a ban that replaced the block, an unban, a block lost
//! with Redis's data) is what every node enforces within that second. A ban or an unban is also announced:
//! every node forgets what it was told of the key at once.
//!
//! ## Operators
//!
//! ```no_run
//! # use limiter_runtime::{Limiter, Penalty, Rule};
//! # use std::time::Duration;
//! # async fn f(limiter: Limiter, login: Rule) -> Result<(), limiter_runtime::Error> {
//! limiter.ban(&login, "203.0.113.9", Duration::from_secs(24 * 3600)).await?; // every node, next call
//! for ban in limiter.bans("failed_logins:").await? {
//!     println!("{} {} {:?} left (banned: {})", ban.policy, ban.key, ban.remaining, ban.banned);
//! }
//! limiter.unban(&login, "203.0.113.9").await?; // every node within a second
//! # Ok(()) }
//! ```
//!
//! - [`Limiter::ban`](crate::Limiter::ban) writes a block of the length given (kind `b`), keeping the
//!   offences the penalty counts. Any rule: one without a penalty has its calls read their keys' blocks,
//!   on every node, while a ban is in force under its policy (noted with the overrides, so a node started
//!   later knows of it), and pays nothing otherwise: no policy without a ban reads a block, and its calls
//!   run the same script as before (tested with `MONITOR`). The attribute's limits are reached by name:
//!   [`Limiter::policy`](crate::Limiter::policy).
//! - [`Limiter::unban`](crate::Limiter::unban) deletes the block (and its offences) and announces it on the
//!   overrides' channel: each node forgets what Redis told it of the key.
//! - [`Limiter::bans`](crate::Limiter::bans) lists the blocks in force, bans and penalties', with their
//!   remaining time (with Redis, a `SCAN` of each master for block keys).
//! - [`Limiter::inspect`](crate::Limiter::inspect) shows a key's `blocked_for`, `banned` and `offences`.
//! - Metrics and tracing name these decisions `blocked` (`reason="blocked"`); the tally of most refused keys
//!   counts them as refusals.
//!
//! ## When Redis fails
//!
//! A key this node knows to be blocked (it was told so, and the block has not ended) stays refused whatever
//! `on_error` says: the deny cache answers it without Redis. For any other key:
//!
//! - `closed` refuses, as it refuses everything.
//! - `local` decides with this node's share of the limit, and its own penalty: a key that offends here is
//!   blocked here, by this node alone.
//! - `open` lets the call through: a key blocked by another node, or blocked before this node started, is
//!   not refused until Redis answers again. Blocks live in Redis only: a Redis restarted without persistence
//!   forgets them.
