//! # When Redis is slow or down
//!
//! A rate limiter must never become the outage. When Redis fails, hangs or answers too late, each call is
//! decided within a bounded time by the failure policy you chose, a breaker soon stops calling the failing
//! Redis at all, and everything heals by itself when Redis answers again.
//!
//! ## The deadline
//!
//! Every Redis decision has a deadline: 50 ms by default
//! ([`DEFAULT_DEADLINE`](crate::DEFAULT_DEADLINE)), set with
//! [`LimiterBuilder::deadline`](crate::LimiterBuilder::deadline) or `LIMITER_DEADLINE` (at most 60 s: a
//! longer one is refused, naming the variable). A decision that
//! misses it counts as a failure and is decided by the failure policy. It is never sent again, because Redis
//! may already have applied it. The only retry is for `NOSCRIPT` (after a restart, a failover or
//! `SCRIPT FLUSH`): one `EVAL` of the script's source, which loads and runs it in one step.
//!
//! Making the connection has a bound of its own and spends none of a decision's deadline (see
//! [`redis`](super::redis#one-server)).
//!
//! ### One deadline per request
//!
//! A request behind a [`RateLimitLayer`](crate::tower::RateLimitLayer) may make several decisions: the
//! layer's, an annotated handler's, the plain API's. While Redis is failing, once one of them was decided
//! without Redis, the request's later decisions are decided at once by their `on_error`, instead of each
//! waiting a deadline of its own: a request waits for a failing Redis at most one deadline, however many
//! decisions it makes (`tests/tests/suite/request_deadline.rs`: three decisions against a paused Redis, one
//! deadline). A healthy Redis is asked every time; a call decided degraded for a fault of its own key (see
//! below) does not spare the others.
//!
//! ## The breaker
//!
//! After 3 consecutive failures the breaker opens: calls are then decided at once by the failure policy, with
//! no Redis latency at all. Every 250 ms, one call probes Redis, and the first success closes the breaker
//! again. Set both with [`LimiterBuilder::breaker(failures, probe_every)`](crate::LimiterBuilder::breaker).
//! Reconnecting needs no action from you: the shared connection reconnects in the background, and a
//! password the server refused, or a Sentinel master that was demoted, makes the next call connect anew.
//!
//! ## `on_error`: what decides meanwhile
//!
//! Set the failure policy ([`OnError`](crate::OnError)) for the whole limiter
//! ([`LimiterBuilder::on_error`](crate::LimiterBuilder::on_error) or `LIMITER_ON_ERROR`), for one rule
//! ([`Rule::on_error`](crate::Rule::on_error)), or for one function (`#[rate_limit(on_error = closed)]`).
//!
//! | `on_error` | a call Redis cannot decide is... | for |
//! |---|---|---|
//! | `open` (the default) | let through | limits that must never take the service down |
//! | `closed` | refused with [`RateLimited`](crate::RateLimited), whose `reason()` is [`Reason::Unavailable`](crate::Reason::Unavailable) (HTTP `503`, not `429`) | protecting something that must not be overrun |
//! | `local` | decided in this process, with the same algorithm and this node's share of the limit, `ceil(max / live instances)`; over the share, refused as a reached limit ([`Reason::Limited`](crate::Reason::Limited), the limit's message, HTTP `429` with its quota fields) | a last line of defence: each node still limits |
//!
//! A call with several limits is still one decision: a `closed` limit that refuses it refuses the whole call,
//! and then nothing is charged; the `local` limits are charged together or not at all.
//!
//! ### One key's fault is that key's
//!
//! Redis can answer one call with an error that belongs to its key, not to Redis: the key holds a value of
//! another type (`WRONGTYPE`, say a value some other program wrote there), the script cannot use what it
//! found, or a calendar node's clock is a whole period behind. Such a call is decided by its own `on_error`
//! and flagged `degraded`, like any call Redis could not decide; but Redis answered, so the breaker counts it
//! as an answer, and every other key goes on being decided in Redis, exactly. Only a failure of Redis itself
//! counts toward the breaker: no connection, no answer within the deadline, an error of the whole server
//! (`LOADING`, `BUSY`, `OOM`, `READONLY`, `MASTERDOWN`, ...). Faults of keys are logged at warn level at most
//! once a minute, naming the key and how many there were since the last line (`tests/tests/key_faults.rs`:
//! 64 tasks on one bad key, while other limits keep their exact counts). A bad key in a batch is that call's
//! fault alone, and a call of several limits that meets one is charged to none, though Redis had charged
//! a limit before it (`tests/tests/suite/key_faults_mixed.rs`).
//!
//! ### Local shares
//!
//! While Redis is healthy, each runtime renews a heartbeat every second (set with
//! [`heartbeat_every`](crate::LimiterBuilder::heartbeat_every)) in `limiter:instances:<group>`, one sorted
//! set per group, whose entries expire after three missed beats. Each runtime thus knows how many runtimes
//! share its limits ([`Stats::instances`](crate::Stats::instances)). Under `local`, a limit of 90 shared by
//! 3 live runtimes gives each node 30, not 90. The count used is the last one seen before Redis failed.
//! When several services share one Redis, give each its own
//! [`instance_group`](crate::LimiterBuilder::instance_group).
//!
//! The local counts are kept while Redis fails and for a minute after Redis decides again, so that a Redis
//! that fails again at once finds them still there; then they are forgotten, and their memory given back.
//! (Each heartbeat also forgets the keys whose local limit is whole again.)
//!
//! ## Late answers are reconciled
//!
//! A call that misses its deadline is decided by its failure policy, but its script call runs on, and Redis
//! may still answer it. When the late answer comes (within 30 s), it is reconciled with what was decided
//! meanwhile:
//!
//! - a call Redis admitted whose caller was **refused** (`closed`, or a `local` share spent) is given back,
//!   through the same path as any give-back, so a refused call is never charged;
//! - a call whose caller **went ahead** (`open`, or a `local` admission) is kept: Redis's count holds it, as
//!   it should;
//! - a call whose caller **went away** before it was answered (a client that disconnected, a `timeout`
//!   around the call: its future dropped) is given back whole once Redis answers, its permits in flight
//!   too, since no one will act on it. The same holds for a call dropped while it waits in a batch, a
//!   call whose limits a cluster's slots split (the exchange is finished, then given back), and a call
//!   taking a lease (the lease goes back whole) (`tests/tests/suite/dropped.rs`).
//!
//! This holds for a call alone, for calls batched together (on a hot key, or across keys), and for a lease
//! taken late (`tests/tests/suite/late_answers.rs`, `tests/tests/suite/batches.rs`). In a batch, each call is decided by
//! its own limits' policy and reconciled on its own, and a fault of one call's keys (a key holding another
//! type) is that call's alone: the others are decided by Redis. Each call given back this way is counted in
//! the metric `limiter_reconciled_total`.
//!
//! ## Every degraded decision says so
//!
//! A decision made by the failure policy has [`Decision::degraded`](crate::Decision::degraded) set and is
//! counted in [`Stats::degraded`](crate::Stats::degraded) (and in the metric `limiter_decisions_total` with
//! `outcome = "degraded"`). The first failure (with the key, the cause and the policy deciding meanwhile) and
//! the recovery are logged once each, at warn level, not once per request.
//!
//! ## The deny cache
//!
//! Once Redis says a key is limited until T, this node answers further calls of the same cost for that key
//! by itself until T, or for one second when T is further (a month's quota refused for weeks), with no round
//! trip. An abusive key then costs Redis a few calls per retry period (at most one a second) per node, not
//! one per request. Whether a call is refused, and its `retry_after`, stay exact: nothing another
//! node does can admit a call earlier. A cached answer's `remaining` and `reset_after` are as Redis last
//! reported them.
//!
//! - When T passes, one call at a time asks Redis again; calls that come meanwhile are refused with a
//!   `retry_after` of zero ("ask again now"), instead of all rushing to Redis at once.
//! - Not while Redis fails: then a denial that ran out answers nothing, and `on_error` decides.
//! - An override clears the denials of its key (a prefix's override, every denial). A charge this node gives
//!   back (`count = failures`, an estimate) clears this node's denial of that call; a charge given back on
//!   another node can end a denial early, and this node sees it within a second (it refuses until the
//!   `retry_after` it was told, and asks Redis again after a second at most).
//! - A call with several limits is refused until the last of its refusing limits would admit it.
//! - A key's block (a [`Penalty`](crate::Penalty)'s or a ban) is held a second at a time too, so that a ban
//!   that replaced it, an unban, or Redis losing its data is enforced by every node within a second (a ban or
//!   an unban is also announced: every node forgets its denials of the key at once). A flood on a blocked key
//!   costs Redis one call per node and second; and a key this node knows to be blocked stays refused while
//!   Redis fails, whatever `on_error` says, to the block's end (see [`penalties`](super::penalties)).
//! - While the cache holds nothing (the usual case), it costs one atomic load. Turn it off with
//!   [`LimiterBuilder::deny_cache(false)`](crate::LimiterBuilder::deny_cache).
//!
//! ## Answers made at once yield like I/O
//!
//! A decision made in this process (in memory, or a denial the deny cache answers) spends one unit of Tokio's
//! cooperative budget, as a socket read does. A task looping on an abusive key therefore yields to the
//! scheduler every so often instead of starving the tasks beside it: with 64 tasks hammering a limited key,
//! calls waiting on Redis still answer within the deadline (`tests/tests/starvation.rs`).
//!
//! ## A Redis restarted empty
//!
//! A Redis that keeps nothing on disk forgets its counts when it restarts: limits start over, and nothing else
//! needs doing. The scripts are loaded again by the first call that meets `NOSCRIPT`. A node's deny cache
//! still holds what Redis said before the restart until it runs out, so it never admits more than before.
//!
//! ## What a failure costs
//!
//! `tests/tests/failure_costs.rs` measures each fault under load: 8 tasks calling every 2 ms, a deadline of
//! 50 ms, `on_error = open`, the breaker's defaults. "Degraded" decisions were made by the failure policy,
//! not Redis; "Redis decides again" counts from the end of the fault (the server back, or the one-off event)
//! to the first decision Redis made. `cargo test -p tests --test failure_costs -- --nocapture` prints the
//! table; this is one run:
//!
//! | fault | what callers see | degraded decisions | slowest call | Redis decides again after |
//! |---|---|---|---|---|
//! | hung (SIGSTOP 1 s) | the first calls wait one deadline, then the breaker opens and calls are decided at once | 2 850 of 3 280 | 52 ms | 212 ms (the next probe) |
//! | dead (SIGKILL, back 1 s later, empty) | refused connections: decided at once | 3 800 of 4 250 | 1.5 ms | 490 ms (reconnection, then a probe) |
//! | restarted at once, empty | as dead, briefly; the counts start over | 1 280 of 1 730 | 2.4 ms | 485 ms |
//! | `SCRIPT FLUSH` | nothing: the call that meets `NOSCRIPT` sends the script with `EVAL` | 0 of 450 | 1.0 ms | 0.8 ms |
//! | the connection killed (`CLIENT KILL`) | a call in flight on it is decided by the policy, not retried (it may have been applied) | 0–2 of 470 | 1.1 ms | 12 ms |
//!
//! `tests/tests/suite/degraded.rs` injects the same faults into a real Redis (SIGKILL under load, `CLIENT PAUSE`,
//! `SCRIPT FLUSH` under load, an empty restart), and checks local shares across three runtimes and across
//! three OS processes.
