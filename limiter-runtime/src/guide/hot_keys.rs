//! # One hot key
//!
//! Each limit's key lives on one Redis core, whatever the number of nodes or the size of a cluster: a single
//! very busy key (one tenant's whole traffic, a global limit on an endpoint) can ask more script calls of its
//! core than it serves. Two mechanisms take a hot key past that. `BENCHMARKS.md` measures both, on one hot
//! key from several processes.
//!
//! ## Coalescing
//!
//! Coalescing is on by default; [`LimiterBuilder::coalesce(false)`](crate::LimiterBuilder::coalesce) turns it
//! off. Calls on the same keys that arrive while four script calls for those keys are already with Redis
//! wait for one of those round trips to end, then go together as one script call. The script decides them in
//! arrival order, each exactly as if it had been sent alone: its own admission, its own units in the sliding
//! log (the calls of one script call are one member, weighing them all), its own receipt for giving back.
//! Every guarantee of the [algorithms](super::algorithms) holds unchanged, for every algorithm, with costs,
//! stacked limits and `mode = wait`.
//!
//! - There is no timer: a call that finds fewer than four script calls of its keys in flight is sent at
//!   once. (Four in flight, rather than one, keep Redis busy while a batch travels: with one, sixteen tasks on
//!   a hot key made fewer decisions than they did uncoalesced.)
//! - A batch carries at most 64 calls and 128 limits: Redis blocks every other client while a script runs,
//!   so a batch stays near a millisecond of Redis's time.
//! - A batch waits no longer than its most hurried call's deadline: a batch Redis does not decide in time is
//!   decided call by call, each by its own `on_error`, and reconciled with Redis's late answer (see [late
//!   answers](super::failures#late-answers-are-reconciled)), so no call waits longer than its deadline.
//! - The metric `limiter_redis_batch_calls` records how many calls each script call carried.
//!
//! ### Batches across keys
//!
//! By default (on a server;
//! [`LimiterBuilder::batch_across_keys(false)`](crate::LimiterBuilder::batch_across_keys) turns it off) one
//! batch carries calls on *any* keys, algorithms, costs and limits: a call that finds four script calls in
//! flight on the connection goes in the next, with every call that arrived meanwhile. Each call is still
//! decided exactly as if alone, in its own keys' atomicity, all or nothing for a stacked call. A key of the
//! wrong type, or any fault of one call's keys, is that call's alone: the others of its batch are decided by
//! Redis.
//!
//! A batch runs each call with the same lines as a call sent alone (each algorithm's Redis side is written
//! once, in `limiter-runtime/scripts/algorithms/`), so what it saves is the command around each script: on one
//! Redis on loopback, at 64 tasks on 10,000 keys, an eleventh as many script calls, 0.92× the Redis CPU and
//! 0.62× this process's CPU a decision, and 1-11% more decisions a second, at a p99 about a tenth higher; a
//! decision's Redis CPU is still mostly the script's own commands (see `BENCHMARKS.md`). Turn it off for the
//! last tenth of p99 at high concurrency.
//!
//! On a Redis Cluster it has no effect: a batch carries calls on the same keys only. A slot being migrated
//! answers `TRYAGAIN` to a script call whose keys it holds only some of, and the cluster client waits over a
//! second before it tries again, so a batch of a slot's many keys would miss its deadline for as long as the
//! migration lasts.

//! ## Leases
//!
//! A lease is opt-in, per limit, for token buckets and fixed windows on Redis: `lease = 50` and
//! `lease_ttl = "100ms"` on the attribute, or [`Rule::lease`](crate::Rule::lease) and
//! [`Rule::lease_ttl`](crate::Rule::lease_ttl). A node takes up to `lease` units from Redis in one script
//! call (the call that takes it spends its own first) and spends the rest in memory, with no round trip,
//! until they run out or `lease_ttl` passes (for a fixed window, at the latest when its window ends). What
//! the node has not spent then goes back to Redis, with its next lease or by a sweep that runs every 100 ms.
//! One call at a time takes a key's lease; calls that find it being taken wait for it (within their deadline)
//! and spend it.
//!
//! ```
//! use limiter_runtime::{rate_limit, RateLimited};
//!
//! // A million events a second for the whole service, most of them decided in memory.
//! #[rate_limit(prefix = "ingest:", algorithm = token_bucket, max = 1_000_000, window = 1, lease = 1_000, lease_ttl = "100ms")]
//! async fn ingest(event: &str) -> Result<(), RateLimited> {
//!     Ok(())
//! }
//! ```
//!
//! ### The exact bounds
//!
//! Units are counted in Redis when a lease is taken, so Redis never admits more than the limit. They are
//! spent up to `lease_ttl` later, and that delay is the whole cost of a lease in exactness:
//!
//! - a **token bucket** admits at most `burst + max · (t + lease_ttl) / window` over any interval `t`;
//! - a **fixed window** never admits more than `max` per window, since a lease ends with its window.
//!
//! Meanwhile, other nodes may be refused units that a lease holds unspent. A refusal of a leased limit is
//! held (and its `retry_after` says so) no longer than `lease_ttl` plus the sweep, when those units come
//! back. A lease's units are spent even while Redis fails, since Redis counted them already. A leased
//! admission's `decided_at` is Redis's clock as the node reckons it (the lease's time plus the time since),
//! and its `remaining` counts what the node holds. The in-memory store, and the other algorithms, ignore
//! leases (a lease on another algorithm is a compile error on the attribute).
//!
//! The metrics `limiter_lease_units_taken_total` and `limiter_lease_units` count the units taken and those
//! held unspent. `tests/tests/suite/leases.rs` and `tests/tests/multi_process.rs` (four processes, every admission
//! recorded) check both bounds.
