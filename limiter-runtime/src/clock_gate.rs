//! The `test-clock` feature hands a test's clock to Redis's scripts in place of Redis's own: a hook for this
//! workspace's tests, never for a service (nodes with clocks of their own would disagree about time). A
//! feature can be turned on by any crate of a dependency graph, so the hook also needs `LIMITER_OWN_TESTS`
//! at compile time, which only this workspace's `.cargo/config.toml` sets: any other build that turns the
//! feature on fails to compile, saying why. (`tests/tests/clock_gate.rs` builds such a crate.)

#[cfg(feature = "test-clock")]
const _: () = assert!(
    option_env!("LIMITER_OWN_TESTS").is_some(),
    "limiter-runtime's `test-clock` feature is a hook for limiter's own tests: it lets a client's clock \
     replace Redis's, which a service must never do. Remove it from your dependency's features."
);
