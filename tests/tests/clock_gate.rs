//! The `test-clock` feature cannot be turned on outside this workspace: a fresh crate that asks for it, built
//! where this workspace's `.cargo/config.toml` does not apply, fails to compile and says why; the same crate
//! without it compiles. (A test binary of its own: that build keeps both cores busy for most of a minute.)

use std::path::Path;
use std::process::Command;

/// `cargo check` of a crate in `dir` that depends on limiter-runtime with `features`: whether it passed, and
/// what cargo said.
fn check(dir: &Path, features: &str) -> (bool, String) {
    let runtime = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"outsider\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n\
             limiter-runtime = {{ path = {runtime:?}, default-features = false, features = [{features}] }}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub use limiter_runtime::Limiter;\n",
    )
    .unwrap();
    // The workspace's lock file: the same versions, all in cargo's cache already.
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.lock");
    std::fs::copy(lock, dir.join("Cargo.lock")).unwrap();
    let output = Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet"])
        .current_dir(dir)
        .env_remove("LIMITER_OWN_TESTS")
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .output()
        .expect("cargo runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_crate_outside_the_workspace_cannot_turn_on_the_test_clock() {
    let dir = std::env::temp_dir().join(format!("limiter-clock-gate-{}", std::process::id()));
    let (passed, said) = check(&dir, "\"test-clock\"");
    assert!(
        !passed,
        "the test clock was turned on outside the workspace"
    );
    assert!(
        said.contains("`test-clock` feature is a hook for limiter's own tests"),
        "{said}"
    );
    let (passed, said) = check(&dir, "");
    assert!(passed, "without the feature the crate compiles: {said}");
    let _ = std::fs::remove_dir_all(&dir);
}
