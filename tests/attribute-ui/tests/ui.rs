//! Compile-time behaviour of `#[rate_limit]`: every misuse is an error at the offending token
//! (snapshots in `tests/ui/fail/*.stderr`), every supported function shape compiles (`tests/ui/pass`).
//! Regenerate snapshots with `TRYBUILD=overwrite cargo test -p attribute-ui`.
#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("ui/pass/*.rs");
    t.compile_fail("ui/fail/*.rs");
}
