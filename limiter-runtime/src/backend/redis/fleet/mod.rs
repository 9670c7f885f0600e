//! What a node shares with the other nodes besides its decisions, for operators: the overrides announced to
//! every node, bans, the admin door's record of changes, and the background tasks that keep a node's view
//! current (the heartbeat and its report, the override sync, the sweep of idle leases, renewed permits).
//!
//! The top room: it may use every other one; no decision step uses it.

pub(super) mod background;
pub(super) mod bans;
pub(super) mod operations;
pub(super) mod overrides;
#[cfg(feature = "admin")]
pub(super) mod record;
