//! Compile-time behaviour of `#[rate_limit]`: every misuse is an error at the offending token
//! (snapshots in `tests/ui/fail/*.stderr`), every supported function shape compiles (`tests/ui/pass`).
//! Regenerate snapshots with `TRYBUILD=overwrite cargo test -p attribute-ui`.
#[test]
fn ui() {
    // trybuild builds the cases and every dependency of theirs in a project of its own
    // (target/tests/trybuild), which the workspace's profile does not reach. Without debug info, as the
    // workspace builds its dependencies, this test took 100 s instead of 180 s on 2 cores from a clean
    // target; trybuild's cargo inherits the variable.
    std::env::set_var("CARGO_PROFILE_DEV_DEBUG", "false");
    let t = trybuild::TestCases::new();
    t.pass("ui/pass/*.rs");
    t.compile_fail("ui/fail/*.rs");
}
