//! What decides when Redis cannot: the breaker (stops calling a failing Redis, probes it one call at a time),
//! the fallback (each limit's `on_error`: open, closed, or this node's share, decided here), and the count of
//! live nodes that share divides a limit by (each node's heartbeat).
//!
//! Uses the wire (the heartbeat's scripts); nothing of what spares Redis a call, a decision's order or the
//! fleet's features.

pub(super) mod breaker;
pub(super) mod degraded;
pub(super) mod instances;
