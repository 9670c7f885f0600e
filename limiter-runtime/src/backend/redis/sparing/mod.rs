//! What spares Redis a call: the deny cache (a denial Redis gave, answered here until its end), coalescing
//! (calls that arrive while their line is busy go together, in one script call), and leases (units a node
//! holds to spend without asking).
//!
//! Each knows a call and the wire's scripts, never the store that puts them together nor a decision's order.

pub(super) mod coalesce;
pub(super) mod deny_cache;
pub(super) mod lease;
