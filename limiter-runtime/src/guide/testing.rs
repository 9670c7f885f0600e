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
//! gives the limiter its clock. In memory, it replaces the system clock. With Redis,
//! [`build`](crate::LimiterBuilder::build) refuses it (`Error::InvalidRedisSetup`): Redis's `TIME` is the one
//! time every node shares, and nodes with clocks of their own would disagree about windows. Implement
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
//! What works:
//!
//! - **The logic of your service**, with limits in memory and a [`FakeClock`](crate::FakeClock): the
//!   algorithms are the same as in Redis, decision for decision (this crate's differential test holds the
//!   two to it), and no test sleeps.
//! - **Against a real Redis**, give each test its own prefix (or its own `redis-server` on a free loopback
//!   port), so that tests running at the same time never share a key. Time is Redis's: pick windows the test
//!   can wait out, or check what does not depend on time (the first `max` calls admitted, the next refused,
//!   `retry_after` within the window).
//!
//! This repository's own tests also pass a fake "now" to Redis's scripts, through the runtime's `test-clock`
//! feature. That hook is theirs alone: a build of any other workspace that turns the feature on fails to
//! compile, saying why.
