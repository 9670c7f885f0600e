//! The integration tests that can share a process, one module per topic: one test binary to build and link.
//! The tests that need a process of their own (a global allocator, the process's environment or resident
//! memory, the global limiter or log subscriber, the machine's cores to themselves) are binaries of their own
//! beside this folder, each saying why in its first lines.
//!
//! Run one topic with a filter on its module: `cargo test -p tests --test suite -- tower::`.

#[path = "../fields/mod.rs"]
mod fields;

mod admin_inputs;
mod admin_page;
mod algorithms;
mod attribute;
mod batches;
mod calendar;
mod captured_logs;
mod carry_over;
mod cluster;
mod coalescing;
mod degraded;
mod degraded_logging;
mod deny_cache;
mod differential;
mod dropped;
mod fail_open;
mod give_backs;
mod giving_up;
mod grpc;
mod guarantees_on_redis;
mod hygiene;
mod key_faults_mixed;
mod keys;
mod late_answers;
mod layers;
mod leases;
mod limit;
mod memory_usage;
mod metrics;
mod operators;
mod outbound;
mod outbound_learning;
mod outbound_pauses;
mod outbound_promises;
mod penalties;
mod penalty_attribute;
mod penalty_faults;
mod plans;
mod priorities;
mod ready;
mod request_deadline;
mod round_trips;
mod run_time_control;
mod server_kind;
mod service;
mod sliding_log;
mod sources;
mod stacked;
mod streamed;
mod strict_upstream;
mod tls;
mod tls_errors;
mod tower;
mod zero_limits;
