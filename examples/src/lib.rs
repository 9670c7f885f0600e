//! The example service's code, shared by `examples/service.rs` and the end-to-end tests.

pub mod service;
