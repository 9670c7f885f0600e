//! A layer given a limiter that was never installed: the annotated functions outside its requests build the
//! global limiter from the environment, and count apart from the layer's; that split is told of once, naming
//! both. (A test binary of its own: the global limiter is built once.)

use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{rate_limit, Limiter, RateLimited, Rule, REDIS_URL_ENV};
use tests::logs::Captured;

#[rate_limit(max = 3)]
async fn background_job() -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::test]
async fn a_layers_limiter_left_uninstalled_is_told_of_when_the_global_one_is_built() {
    // Safety: this binary's only test clears the variable before anything reads the environment.
    std::env::remove_var(REDIS_URL_ENV);
    let logs = Captured::default();
    let _guard = tracing::subscriber::set_default(logs.subscriber());
    let limiter = Limiter::in_memory();
    let _layer = RateLimitLayer::new(&limiter, [Rule::new()], Key::peer_ip());
    for _ in 0..3 {
        background_job().await.unwrap();
    }
    let told = logs.text();
    let split: Vec<&str> = told
        .lines()
        .filter(|line| line.contains("count apart"))
        .collect();
    assert_eq!(split.len(), 1, "{told}");
    assert!(
        split[0].contains("built from the environment, while the layer decides in limiter #"),
        "{told}"
    );
    assert!(split[0].contains("limiter.clone().install()"), "{told}");
}
