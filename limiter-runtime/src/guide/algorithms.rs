//! # The algorithms
//!
//! A limit counts its calls with one of five algorithms ([`Algorithm`](crate::Algorithm); `algorithm = ...`
//! on the attribute, [`Rule::algorithm`](crate::Rule::algorithm) in the plain API). Each one has the same
//! semantics in Redis and in memory, touches exactly one Redis key per limit, takes its time from Redis's
//! `TIME`, and decides in one round trip.
//!
//! ## What each guarantees
//!
//! | algorithm | guarantee | Redis memory per limit, `max` = 100 | `max` = 10 000 | `retry_after` |
//! |---|---|---|---|---|
//! | `sliding_log` (the default) | at most `max` in **any** interval of length `window` | 3.1 KB | 1.23 MB | exact |
//! | `fixed_window` | at most `max` per aligned window; up to 2 × `max` across a boundary | 120 B | 120 B | exact |
//! | `sliding_window` | a weighted estimate over two windows; at most `max` per aligned window | 120 B | 120 B | exact for the estimate |
//! | `token_bucket` | at most `burst + max · t / window` over any interval `t` | 136 B | 152 B | exact |
//! | `leaky_bucket` | admitted slots at least `window / max` apart | 136 B | 136 B | exact |
//! | a calendar `period` | at most `max` per day, week or month of the calendar in a zone | 104 B | 104 B | the period's end |
//!
//! The memory is Redis's `MEMORY USAGE` of the limit's one key after `max` calls spread over one window, on
//! Redis 7.0, as `cargo test -p tests --test suite -- memory_usage:: --nocapture` measures it (the test fails if the
//! figures grow past these). Only the sliding log grows with the limit: it keeps one entry per admitted call
//! in the window. The others keep one small value per key, whatever `max` and whatever the costs (with the
//! terms it was counted under, so that a changed limit carries it over: see [limits](super::limits)).
//!
//! - **Sliding log.** Exact: at most `max` units are admitted in any interval of length `window`, wherever
//!   the interval starts. `retry_after` is when the oldest admission that blocks the call leaves the window.
//! - **Fixed window.** At most `max` per aligned window, `[k · window, (k + 1) · window)`. Up to 2 × `max` can
//!   pass across a window boundary: `max` at the end of one window and `max` at the start of the next.
//!   `retry_after` is the start of the next window.
//! - **Sliding window.** The previous window's count, weighted by how much of it the sliding window still
//!   overlaps, plus the current window's count. It smooths the fixed window's boundary in O(1) memory, but it
//!   is an estimate that assumes the previous window's calls were spread evenly: never more than `max` per
//!   aligned window, but bursty traffic can pass up to 2 × `max` in an unaligned interval.
//! - **Token bucket** (GCRA). A bucket of `burst` tokens (default `max`), refilled at `max` per `window`:
//!   bursts up to `burst`, then the steady rate.
//! - **Leaky bucket** (GCRA), for shaping. Calls leave at a steady rate, `max` per `window`. Each call is
//!   given the next free slot and told how long to wait for it ([`Decision::delay`](crate::Decision::delay)).
//!   It is admitted when that wait is within the rule's `max_wait` (zero unless waiting is asked for: see
//!   [waiting for a slot](super::attribute#waiting-for-a-slot)), and refused otherwise.
//! - **Calendar** ([`Algorithm::Calendar`](crate::Algorithm::Calendar), chosen by `period = ...`, not by
//!   `algorithm`): a fixed window whose windows are the calendar's days, weeks or billing months in a time
//!   zone. See [quotas on the calendar](super::calendar).
//!
//! ## Which one to choose
//!
//! - **Exactness** (anti-abuse, login attempts, a quota a customer paid for): `sliding_log`. It is exact in
//!   every interval, and its `retry_after` says precisely when to come back. Its memory grows with the calls
//!   in the window, so prefer it for limits of up to a few thousand calls per window.
//! - **Memory** (millions of keys, a large `max`): `sliding_window`, which smooths the fixed window's boundary
//!   in O(1), or `fixed_window`, the simplest and cheapest, with its known 2 × `max` across a boundary.
//! - **Bursts, then a steady rate** (public APIs, per-client quotas): `token_bucket`, with `burst` as the
//!   capacity.
//! - **Shaping** (a downstream that takes exactly N calls per second): `leaky_bucket` with `mode = wait`.
//!   Calls queue for their slot instead of failing.
//! - **A quota sold by the day or the month** (reset at midnight in the customer's zone, or on a billing
//!   day): a calendar `period`.
//! - **Costs** (tokens of a language model, bytes, rows): `token_bucket`, or `fixed_window` for a budget per
//!   window. A cost is a weight, never a number of stored entries, for every algorithm: a call of cost 50,000
//!   is one entry of a sliding log, one addition to a window's counter, one move of a bucket. But a sliding
//!   log still keeps one entry per admitted call, so a budget spent in many calls makes it large, where a
//!   bucket stays one small value.
//!
//! ## How Redis holds each one
//!
//! - **Sliding log**: one sorted set. The calls one script call admits are one member, scored by their
//!   admission time on Redis's clock in microseconds and named after the first of them (its nonce, 16 hex
//!   digits, for one unit; `<nonce>*<units>` for more), so that giving a call back takes exactly its own
//!   units out of it. While some member weighs more than one unit, one more member, `#`, keeps the units in
//!   the window; without it, the members are the units, and `ZCARD` counts them. At most `max` members are
//!   kept, since each weighs at least one unit.
//! - **Fixed window**: a small hash holding the aligned window's index (`w`) and its count (`n`). Its expiry
//!   is set once, when the window opens, and never pushed forward by later calls.
//! - **Sliding window**: one string, `<index>:<count>:<previous count>`.
//! - **Calendar**: the fixed window's hash, `w` holding when the period ends (µs since the Unix epoch); it
//!   expires then.
//! - **Token and leaky buckets**: one string, `<t>:<f>:<s>:<g>`: the theoretical arrival time in whole
//!   microseconds plus a fraction in 1/`max` µs (so a rate such as 3 per 10 s stays exact), and, for giving
//!   back, since when the bucket has been in use and what was given back out of order since; then one record,
//!   `|<e>,<f>,<g>,<units>`, for each charge given back out of order that is still in the queue. Charges leave
//!   the queue in the order they were made. A give-back returns what is left of its own charge ahead of now:
//!   where the charge ended, moved earlier by what charges queued before it gave back since (what was given
//!   back in all, less what the records show of charges queued after it). So give-backs are exact in any
//!   order, from any node, concurrently: the bucket is as if each charge had weighed what it kept. The last
//!   charge of the queue given back needs no record; a record is forgotten once its charge has left, so the
//!   string holds at most one per charge still queued, and none when give-backs come in order.
//!
//! Every write sets the key's expiry to no longer than its state matters, so idle limits leave nothing
//! behind; no decision depends on the expiry.
//!
//! ## Memory and Redis decide the same
//!
//! Each algorithm's Redis side is written once, in `limiter-runtime/scripts/algorithms/<algorithm>.lua`: what
//! only Redis can do (read the key's state, decide whether each call fits, write the state and its expiry;
//! give a charge back), in sections. At build time they are assembled into the scripts Redis runs: one per
//! algorithm for the calls of one limit (the common call, `scripts/one_limit.lua`), and one for every
//! algorithm that decides batches of groups, stacked calls and penalties (`scripts/groups.lua`), so a batch
//! runs the same lines as lone calls. Every decision script answers the keys' state before its calls; the
//! algorithm's in-memory twin (`limiter-runtime/src/algorithm/`), given that state, replays the calls for
//! their `remaining`, `retry_after` and the rest, by the same integer arithmetic in microseconds. Memory and
//! Redis thus share one computation of every outcome.
//!
//! Two kinds of tests hold this together. `tests/tests/suite/differential.rs` replays seeded random schedules
//! (costs, stacked calls and give-backs among them) through the in-memory store and through Redis, and
//! demands identical decisions; both sides replay the twins, so it checks the scripts' state against the
//! twins'. The property tests in `limiter-runtime/src/algorithm/guarantees.rs` and `give_backs.rs` check the
//! twins themselves: each algorithm's guarantee for any schedule, an exact `retry_after`, and exact
//! give-backs. `tests/tests/suite/guarantees_on_redis.rs` checks the guarantees once more on Redis's own clock.
//!
//! Each script's header documents its arguments, so a script can be run by hand, as cargo assembled it. One
//! call on a token bucket of 5 per 10 s:
//!
//! ```sh
//! redis-cli --eval target/debug/build/limiter-runtime-*/out/scripts/one_limit/token_bucket.lua rate_limit:demo , 10000000 5 5
//! ```
//!
//! ## Memory in this process
//!
//! The in-memory store (and, on Redis, the `on_error = local` fallback) forgets a key once its limit is whole
//! again, and holds at most [`LimiterBuilder::max_keys`](crate::LimiterBuilder::max_keys) live keys (one
//! million by default). Callers choose keys, so a flood of distinct keys would otherwise take the process's
//! memory. A store at its bound forgets its expired keys first, then the keys closest to their expiry, which
//! hold the least. Such a key starts afresh when it comes back, so its limit may admit up to `max` more,
//! once. [`Stats::keys`](crate::Stats::keys) and [`Stats::evicted`](crate::Stats::evicted) (and the metric
//! `limiter_evicted_keys_total`) say how close the store runs to its bound. Once the keys of a flood expire,
//! the store gives their memory back; `tests/tests/memory_bound.rs` floods it with two million keys.
