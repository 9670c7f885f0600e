//! Inside the crate: for a contributor, the layers, the rooms of the Redis store, and one word for each idea.
//!
//! # Layers
//!
//! The runtime reads top down; each module uses only its own layer and those below (`tests/tests/suite/layers/`
//! checks it): keys, algorithms, the clock → decisions and errors → rules and overrides → the call (and the
//! lines calls to an upstream wait in) → the backends and observers → the pipeline → the public API → what
//! expansions call → the edges (HTTP, gRPC, tower, admin).
//!
//! A backend is a small interface: the pipeline asks it to *decide* a call (a ruling now, or a pending one to
//! await) and to *give back* what an admitted call charged. What operators ask of a store (reads, bans, reports,
//! the record, announced changes) is a trait of its own, `Operations`, which each store implements in its own
//! folder, off the decisions' path. Nothing above `backend/` names a type of one store.
//!
//! # The Redis store's rooms
//!
//! `backend/redis/`, bottom up (each folder's `//!` says what it holds and may use):
//!
//! | room | what it holds |
//! |---|---|
//! | `wire/` | the scripts (assembled from `scripts/algorithms/`), their commands and replies; the connection, the server, the cluster, TLS. Sends and parses; decides nothing |
//! | `sparing/` | what spares Redis a call: the deny cache, coalescing, leases |
//! | `failure/` | what decides when Redis cannot: the breaker, the fallback (`on_error`), the count of live nodes |
//! | `decision/` | a decision's steps: `order.rs` (the order, the one file that knows it), the round trip, across a cluster's slots, late answers, giving back, permits |
//! | `fleet/` | what nodes share for operators: overrides, bans, the admin record, the background tasks |
//!
//! `decision/order.rs` writes down the walk of one call from [`Limit::check`](crate::Limit::check) to Redis
//! and back.
//!
//! # Words
//!
//! | word | means |
//! |---|---|
//! | request | what a caller asks: a verb (check, enforce, acquire, estimate, turn) of a limiter, a [`Limit`](crate::Limit) or a list ([`All`](crate::All)), with its options (cost, priority); awaited, it builds its call (`limiter/request/`) |
//! | call | one request to the limiter: its limits (one, or several stacked), each with a key and a cost |
//! | terms | what a limit asks of a call in integers: max, window, burst, the call's cost (`algorithm::Terms`) |
//! | kept | the units a call must leave free for the priorities above its own (`Terms::kept`, from the rule's reserves): it fits when its cost and these fit, and takes its cost |
//! | outcome | what an algorithm says of one limit from its state: admitted or not, remaining, when to retry |
//! | [`Decision`](crate::Decision) | one limit's part of a call's result, as a caller sees it |
//! | ruling | a call's result: each limit's part (`LimitRuling`: its decision, what it charged, its receipt) and whether the call is admitted |
//! | decide | make a ruling: only the pipeline, a store, the fallback and an algorithm decide. The pipeline's: `decide_now` (what this process can, or pending), `decide` (and then what the caller keeps), `ruling` (borrowed), `ruling_later` (once pending), `enforce` (the verdict and the slot), `enforce_owned` (the attribute's) |
//! | give back | return units an admitted call charged (a refund, an estimate settled, a permit's end, a caller that gave up its slot) |
//! | reserve | a priority's share of a limit, kept from the calls below it (`Rule::reserve`; a call refused for it is `Verdict::Reserved`): never an estimate |
//! | estimate | a cost charged up front and settled to the actual cost later ([`Estimate`](crate::Estimate)) |
//! | settle | end a held call with what it used (`settle(used)`); `cancel` gives everything back |
//! | line | the calls of a node waiting for their slot of one key (`outbound::Lines`): every door that waits waits there (`limiter/waiting.rs`), and a caller that gives up leaves it |
//! | slot | when an admitted call of a leaky bucket may go: what it waits for in its line |
//! | pending | a call a store could not decide at once: in a batch (in line), or its own round trip (to ask) |
//! | degraded | decided by a limit's `on_error` because Redis could not answer in time |
//! | reconcile | give back what Redis charged for a call that was refused meanwhile (a late answer) |
//! | lease | units a node took from Redis in advance, spent without asking |
//! | batch | calls of one line sent in one script call; their groups are the calls that share limits |
