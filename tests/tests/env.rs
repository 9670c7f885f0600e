//! Crate-wide defaults from the environment. (A test binary of its own: it changes the process's environment.)

use std::time::Duration;

use limiter_runtime::{Error, Limiter, Priority, Rule};

#[tokio::test]
async fn the_environment_sets_the_crate_wide_defaults_and_a_bad_value_is_an_error_naming_it() {
    // Safety: this binary's only test sets the variables before anything else reads the environment.
    std::env::set_var("LIMITER_MAX", "3");
    std::env::set_var("LIMITER_PREFIX", "env:");
    std::env::set_var("LIMITER_WINDOW", "500ms");
    std::env::set_var("LIMITER_MESSAGE", "from the environment");
    std::env::set_var("LIMITER_ALGORITHM", "fixed_window");
    let limiter = from_env().unwrap();
    let rule = Rule::new();
    for _ in 0..3 {
        assert!(limiter.check(&rule, "k").await.allowed);
    }
    let error = limiter.enforce(&rule, "k").await.unwrap_err();
    assert_eq!(error.to_string(), "from the environment");
    assert_eq!(error.key(), "env:k");
    assert!(
        error.retry_after() <= Duration::from_millis(500),
        "fixed window of 500 ms: {:?}",
        error.retry_after()
    );
    // What a rule writes still wins.
    assert_eq!(limiter.check(&Rule::new().max(10), "other").await.limit, 10);

    std::env::set_var("LIMITER_WINDOW", "ten seconds");
    match from_env() {
        Err(Error::InvalidEnv { name, value, .. }) => {
            assert_eq!((name, value.as_str()), ("LIMITER_WINDOW", "ten seconds"))
        }
        other => panic!("expected InvalidEnv, got {other:?}"),
    }
    std::env::set_var("LIMITER_WINDOW", "1s");
    // As `max = 0` is a compile error, so is LIMITER_MAX=0 an error at start-up.
    std::env::set_var("LIMITER_MAX", "0");
    let error = from_env().unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"LIMITER_MAX="0" is invalid: expected a whole number, at least 1"#
    );
    // 2^64: a whole number, too large for a limit, and told so.
    std::env::set_var("LIMITER_MAX", "18446744073709551616");
    let error = from_env().unwrap_err().to_string();
    assert!(
        error.contains("at most 18446744073709551615 (this one is too large)"),
        "{error}"
    );
    std::env::set_var("LIMITER_MAX", "3");
    // A URL without its scheme, and one that parses but cannot be used: both name the variable.
    std::env::set_var("LIMITER_REDIS_URL", "localhost:6379");
    let error = from_env().unwrap_err().to_string();
    assert!(
        error.starts_with(r#"LIMITER_REDIS_URL="localhost:6379" is invalid: expected a Redis URL"#),
        "{error}"
    );
    std::env::set_var("LIMITER_REDIS_URL", "redis://");
    let error = from_env().unwrap_err().to_string();
    assert!(
        error.starts_with("LIMITER_REDIS_URL cannot be used: "),
        "{error}"
    );
    std::env::remove_var("LIMITER_REDIS_URL");
    // A deadline is a bound on one decision: a minute at most (what a hung Redis may cost each call).
    for (deadline, bounded) in [("60s", true), ("1m", true), ("61s", false), ("1h", false)] {
        std::env::set_var("LIMITER_DEADLINE", deadline);
        match from_env() {
            Ok(_) => assert!(bounded, "LIMITER_DEADLINE={deadline} was taken"),
            Err(Error::InvalidEnv { name, value, .. }) if !bounded => {
                assert_eq!((name, value.as_str()), ("LIMITER_DEADLINE", deadline))
            }
            Err(other) => panic!("LIMITER_DEADLINE={deadline}: {other}"),
        }
    }
    let error = from_env().unwrap_err().to_string();
    assert!(error.contains("at most 60s"), "{error}");
    std::env::remove_var("LIMITER_DEADLINE");
    std::env::set_var("LIMITER_ON_ERROR", "sometimes");
    let error = from_env().unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"LIMITER_ON_ERROR="sometimes" is invalid: expected open, closed or local"#
    );

    std::env::remove_var("LIMITER_ON_ERROR");

    // Shares kept for the higher priorities, as the attribute writes them.
    std::env::set_var("LIMITER_RESERVE", "critical 33%");
    let limiter = from_env().unwrap();
    let rule = Rule::new().prefix("reserved:");
    for _ in 0..2 {
        assert!(limiter.check(&rule, "k").await.allowed);
    }
    assert!(
        !limiter.check(&rule, "k").await.allowed,
        "a ceiling of 2 of 3"
    );
    let critical = limiter.check(&rule, "k").priority(Priority::Critical).await;
    assert!(critical.allowed);
    std::env::set_var("LIMITER_RESERVE", "critical 120%");
    let error = from_env().unwrap_err().to_string();
    assert!(
        error.starts_with(r#"LIMITER_RESERVE="critical 120%" is invalid"#),
        "{error}"
    );
    std::env::remove_var("LIMITER_RESERVE");

    // Set up from the environment without LIMITER_REDIS_URL, a limiter counts in memory: it says so when it
    // is built (the README's own layer example does this).
    let logs = tests::logs::Captured::default();
    let built = tracing::subscriber::with_default(logs.subscriber(), || {
        Limiter::builder().env().and_then(|builder| builder.build())
    });
    assert!(built.is_ok());
    let logs = logs.text();
    assert_eq!(logs.matches("WARN").count(), 1, "{logs}");
    assert!(
        logs.contains("LIMITER_REDIS_URL is not set; counting in memory"),
        "{logs}"
    );
}

/// Builds the limiter the environment asks for: `Limiter::builder().env()?.build()`.
fn from_env() -> Result<Limiter, limiter_runtime::Error> {
    Limiter::builder().env()?.build()
}
