//! The wire: what talks to Redis and nothing else. The scripts (assembled at build time from
//! `scripts/algorithms/`, their commands and the replies read back), the connection (one server, Sentinel's
//! master or a cluster), the server's own link, the cluster's, and TLS.
//!
//! The bottom room: it sends and parses, it decides nothing, and it uses no other room.

pub(super) mod cluster;
pub(super) mod connection;
pub(super) mod script;
pub(super) mod server;
pub(super) mod tls;

pub(crate) use self::connection::{Connection, Topology};
pub(crate) use self::script::LuaScript;
