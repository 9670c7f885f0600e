//! A decision's steps on Redis: the order of them ([`order`], the one file that knows it), the round trip
//! that asks Redis, a call across a cluster's slots, a late answer reconciled, what is given back, and the
//! permits in flight an admission holds.
//!
//! May use every other room: the wire to ask, what spares Redis a call, what decides when Redis fails, and
//! the fleet's count of nodes. Nothing below uses it.

pub(super) mod across_slots;
pub(super) mod giving_back;
pub(super) mod late;
pub(super) mod order;
pub(super) mod pending;
pub(super) mod permits;
pub(super) mod round_trip;
