//! # Testing code that is rate limited
//!
//! Tests of rate-limited code should neither need a Redis nor sleep through windows. Three pieces make that
//! easy: the in-memory store, a fake clock, and a limiter scoped over one test.
//!
//! ## In memory, by default
//!
//! A limiter built without Redis counts in this process's memory, with the same algorithms and the same
//! semantics as in Redis ([`Limiter::in_memory`](crate::Limiter::in_memory), or
//! [`Limiter::builder`](crate::Limiter::builder) without [`redis`](crate::LimiterBuilder::redis)). Annotated
//! functions work with no set-up at all: when no limiter was installed and `LIMITER_REDIS_URL` is not set,
//! the first annotated call builds an in-memory limiter, and a warning says once that its limits are per
//! process.
//!
//! ## A fake clock
//!
//! [`FakeClock`](crate::FakeClock) moves only when told to: [`advance`](crate::FakeClock::advance) moves it
//! forward, [`set`](crate::FakeClock::set) sets it (never backwards). Clones share one time, so a test keeps a
//! clone and advances the clock the limiter reads. [`LimiterBuilder::clock`](crate::LimiterBuilder::clock)
//! gives the limiter its clock. In memory, it replaces the system clock. With Redis, it makes the client pass
//! "now" to the scripts instead of letting them read Redis's `TIME`: a mode for deterministic tests only,
//! since in production nodes with skewed clocks would then disagree about time. Implement
//! [`Clock`](crate::Clock) for a clock of your own.
//!
//! ## A limiter for one test: `Limiter::scope`
//!
//! Annotated functions use the installed limiter, which is one per process. A test gives its calls a limiter
//! of their own with [`Limiter::scope`](crate::Limiter::scope): while the future it runs is polled, every
//! `#[rate_limit]` function (and [`Limiter::current`](crate::Limiter::current)) uses that limiter. Tests that
//! run in parallel thus never share counts. Tasks spawned inside the scope do not inherit it.
//!
//! ```
//! use limiter_runtime::{rate_limit, FakeClock, Limiter, RateLimited};
//! use std::time::Duration;
//!
//! #[rate_limit(prefix = "report:", key = user, max = 2, window = "1h")]
//! async fn report(user: &str) -> Result<(), RateLimited> {
//!     Ok(())
//! }
//!
//! // In a test module, with `#[tokio::test]` on it.
//! async fn two_reports_an_hour() {
//!     let clock = FakeClock::new();
//!     let limiter = Limiter::builder().clock(clock.clone()).build().unwrap();
//!     limiter
//!         .scope(async {
//!             assert!(report("alice").await.is_ok());
//!             assert!(report("alice").await.is_ok());
//!             let refused = report("alice").await.unwrap_err();
//!             assert!(refused.retry_after() <= Duration::from_secs(3_600));
//!             // An hour later, the window has moved on: no sleeping.
//!             clock.advance(Duration::from_secs(3_600));
//!             assert!(report("alice").await.is_ok());
//!         })
//!         .await;
//! }
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! #     two_reports_an_hour().await;
//! # }
//! ```
//!
//! ## Against Redis
//!
//! With Redis, give each test its own prefix (or its own `redis-server`), so that tests running at the same
//! time never share a key, and a fake clock when the test must not wait for windows to pass. This
//! repository's own integration tests start a throw-away `redis-server` per test on a free loopback port, and
//! run the same behavioural cases against the in-memory store with a fake clock and against Redis with "now"
//! passed in, so that neither ever sleeps (`tests/tests/sliding_log.rs`).
