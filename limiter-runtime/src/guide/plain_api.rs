//! # The plain API
//!
//! Code that does not want the attribute asks the same [`Limiter`](crate::Limiter) directly. The plain API
//! takes the same path as `#[rate_limit]`: the same rules, the same counts, and the same overrides, switches
//! and failure policies. A limit the plain API checks and an annotated function with the same prefix and key
//! share one count.
//!
//! ## Rules
//!
//! A [`Rule`](crate::Rule) is a limit as written: the attribute's arguments as builder methods. Every part
//! left out is inherited from the limiter's defaults, exactly as an argument left out of the attribute is.
//! Build a rule once and reuse it: a `static` with [`LazyLock`](std::sync::LazyLock) fits.
//!
//! ```
//! use limiter_runtime::{Algorithm, Rule};
//! use std::sync::LazyLock;
//! use std::time::Duration;
//!
//! static LOGINS: LazyLock<Rule> = LazyLock::new(|| {
//!     Rule::new()
//!         .prefix("login:")
//!         .policy("logins")
//!         .max(5)
//!         .window(Duration::from_secs(60))
//!         .message("too many login attempts")
//! });
//!
//! // Every attribute argument has its method: `algorithm`, `burst`, `wait` (`mode = wait`), `max_wait`,
//! // `lease`, `lease_ttl`, `on_error`, `shadow`.
//! let search = Rule::new().prefix("search:").algorithm(Algorithm::TokenBucket).max(10).burst(20);
//! ```
//!
//! ## One shape of asking
//!
//! Each decision is a verb of the limiter, taking the rule and the key, and returning a
//! [`Request`](crate::Request): await it as it is, or give it options first. The options are the same for
//! every verb: [`cost`](crate::Request::cost) (what the call weighs, 1 unless told) and
//! [`priority`](crate::Request::priority) (what it must leave free for the calls above it).
//!
//! | verb | answers | for |
//! |---|---|---|
//! | [`check`](crate::Limiter::check) | a [`Decision`](crate::Decision) | deciding yourself what a refusal means |
//! | [`enforce`](crate::Limiter::enforce) | `Result<Decision, RateLimited>` | what the attribute does: `?` returns the refusal |
//! | [`acquire`](crate::Limiter::acquire) | a [`Permit`](crate::Permit), held while the call runs | limits [in flight](super::in_flight) |
//! | [`estimate`](crate::Limiter::estimate) | an [`Estimate`](crate::Estimate), settled to the actual cost | a cost known only afterwards |
//! | [`turn`](crate::Limiter::turn) | a [`Turn`](crate::Turn) to call an upstream | [outbound](super::outbound) quotas |
//!
//! Several limits decided as one are [`Limiter::all`](crate::Limiter::all)`(limits)`, asked with the same
//! verbs; a rule resolved once is a [`Limit`](crate::Limit), with the same verbs again.
//!
//! ```
//! use limiter_runtime::{Limiter, Priority, Rule};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::in_memory();
//! let rule = Rule::new().prefix("export:").max(100);
//! let decision = limiter.check(&rule, "acme").await;
//! let decision = limiter.check(&rule, "acme").cost(20).priority(Priority::High).await;
//! assert_eq!(decision.remaining, 79);
//! // A request is a value: build it, pass it on, await it later (`IntoFuture`; `.into_future()` where a
//! // future is expected, as by `join_all` or `tokio::spawn`).
//! let heavy = limiter.check(&rule, "acme").cost(50);
//! assert!(heavy.await.allowed);
//! # }
//! ```
//!
//! The handles that hold a charge share one vocabulary: `decision()` (the first limit's) and `decisions()`
//! (each limit's); `settle(used)`, what the call used (a number for its first limit, a list for each; see
//! [`Used`](crate::Used)); and `cancel()`, which gives everything back, as if the call had never been
//! admitted. Dropped, a permit settles as charged (its permits go back), an estimate cancels, and a turn
//! settles as charged (the call is taken to have been sent).
//!
//! ### Upgrading from the methods the verbs replaced
//!
//! The crate is 0.x: the old methods are replaced, not deprecated. Each maps to a verb and an option:
//!
//! | before | now |
//! |---|---|
//! | `check_cost(&rule, key, n)`, `enforce_cost(..)` | `check(&rule, key).cost(n)`, `enforce(..).cost(n)` |
//! | `check_with(&rule, key, n, p)`, `enforce_with(..)`, `acquire_with(&rule, key, p)`, `turn_with(..)` | `.cost(n).priority(p)` on the verb |
//! | `check_all(list)`, `check_all_cost(list)`, `enforce_all`, `enforce_all_cost`, `acquire_all`, `turn_all` | `all(list).check()`, `.enforce()`, `.acquire()`, `.turn()` |
//! | `(rule, key, cost, priority)` in a list | `(rule, key, cost)`, and `.priority(p)` on the request |
//! | `reserve(&rule, key, estimate)` → `Reservation` | `estimate(&rule, key).cost(estimate)` → [`Estimate`](crate::Estimate) |
//! | `Permit::release()` | `Permit::settle(AsCharged)` (or drop it) |
//! | `Turn::settle(&[used])`, `Reservation::settle(used)` | `settle(used)`, a number or a list |
//! | `Reservation::decision() -> &Decision` | `decision() -> Decision`, on every handle |
//! | `Limit::check_cost(key, n)`, `Limit::check_with(..)` | `Limit::check(key).cost(n)`, `.priority(p)` |
//!
//! ## One limit: `check` and `enforce`
//!
//! [`Limiter::check`](crate::Limiter::check) counts one call for a key under a rule and returns a
//! [`Decision`](crate::Decision). It never fails: when the store cannot decide, the rule's failure policy
//! does (see [`failures`](super::failures)), and the decision says so.
//!
//! ```
//! use limiter_runtime::{Limiter, Rule};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::in_memory();
//! let rule = Rule::new().prefix("login:").max(3).window(Duration::from_secs(60));
//! for _ in 0..3 {
//!     assert!(limiter.check(&rule, "10.0.0.7").await.allowed);
//! }
//! let decision = limiter.check(&rule, "10.0.0.7").await;
//! assert!(!decision.allowed);
//! assert_eq!((decision.limit, decision.remaining), (3, 0));
//! assert!(decision.retry_after > Duration::ZERO);
//! # }
//! ```
//!
//! A [`Decision`](crate::Decision) carries:
//!
//! | field | what it says |
//! |---|---|
//! | `allowed` | whether the call may go ahead |
//! | `limit`, `window` | the limit that applied: `limit` admissions per `window` |
//! | `remaining` | the admissions left in the window after this call |
//! | `retry_after` | when refused: how long until a call of the same cost would be admitted, if nothing else happened (zero when allowed) |
//! | `reset_after` | how long until the limit is whole again, if nothing else happened |
//! | `delay` | how long an admitted call must wait for its slot: non-zero only for a leaky bucket that waits |
//! | `decided_at` | when the store decided, on its own clock: Redis's `TIME`, or the limiter's clock in memory |
//! | `degraded` | whether the store could not decide and the failure policy did |
//!
//! [`Limiter::enforce`](crate::Limiter::enforce) does what the attribute does: a refusal is the
//! [`RateLimited`](crate::RateLimited) error, and an admitted call that must wait for its slot (a leaky
//! bucket with `wait` or `max_wait`) waits for it in its node's line (see [Waiting for a
//! slot](super::attribute#waiting-for-a-slot)); a caller that gives up gives its slot back. `?` returns the error from any function whose error
//! type is `From<RateLimited>`.
//!
//! ```
//! use limiter_runtime::{Limiter, RateLimited, Rule};
//!
//! async fn send_sms(limiter: &Limiter, phone: &str) -> Result<(), RateLimited> {
//!     let rule = Rule::new().prefix("sms:").max(1).message("one code a minute");
//!     limiter.enforce(&rule, phone).await?;
//!     // ... send the code ...
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::in_memory();
//! assert!(send_sms(&limiter, "+15550100").await.is_ok());
//! assert_eq!(send_sms(&limiter, "+15550100").await.unwrap_err().to_string(), "one code a minute");
//! # }
//! ```
//!
//! [`cost`](crate::Request::cost) weighs the call: a cost of 20 spends 20 units of the limit. A cost is a weight, never a number of stored entries, for
//! every algorithm (see [Costs](super::attribute#costs) for which algorithms suit costs).
//!
//! ## Several limits: `all`
//!
//! [`Limiter::all`](crate::Limiter::all) names one call under several limits at once, each `(rule, key)`,
//! or `(rule, key, cost)` to weigh it (the request's [`cost`](crate::Request::cost) weighs the others), asked
//! with the same verbs as one limit. The call is admitted only when every limit admits it,
//! and then counted by each; a refused call is counted by none. Stacked attributes are this same decision.
//! The limits may be an array (answered with an array of decisions, one per limit, in the order given), a
//! `Vec` or a slice (answered with a `Vec`): a list read from configuration fits.
//! `all(..).enforce()` returns the [`RateLimited`](crate::RateLimited) error of the first limit that
//! refused, with every limit's state.
//!
//! ```
//! use limiter_runtime::{Limiter, Rule};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::in_memory();
//! let burst = Rule::new().prefix("burst:").max(2).window(Duration::from_secs(1));
//! let quota = Rule::new().prefix("quota:").max(1_000).window(Duration::from_secs(3_600));
//!
//! // An array: answered with an array.
//! let [b, q] = limiter.all([(&burst, "alice"), (&quota, "alice")]).check().await;
//! assert!(b.allowed && q.allowed);
//!
//! // A Vec of limits with costs (from configuration, say): answered with a Vec.
//! let limits = vec![(&burst, "bob", 1), (&quota, "bob", 10)];
//! let decisions = limiter.all(limits).check().await;
//! assert_eq!(decisions[1].remaining, 990);
//!
//! // A slice.
//! let limits = [(&burst, "carol"), (&quota, "carol")];
//! assert_eq!(limiter.all(&limits[..]).check().await.len(), 2);
//!
//! // Refused by the burst: the quota is not charged.
//! limiter.all([(&burst, "alice"), (&quota, "alice")]).enforce().await.unwrap();
//! let refused = limiter.all([(&burst, "alice"), (&quota, "alice")]).enforce().await.unwrap_err();
//! assert_eq!(refused.prefix(), "burst:");
//! assert_eq!(limiter.check(&quota, "alice").cost(0).await.remaining, 998);
//! # }
//! ```
//!
//! ## Estimate, then settle
//!
//! Some calls learn their cost only once they are done: the tokens a language model actually used, the rows
//! a query returned. [`Limiter::estimate`](crate::Limiter::estimate) charges an estimate (the request's
//! [`cost`](crate::Request::cost)) up front, or refuses the call with [`RateLimited`](crate::RateLimited),
//! and returns an [`Estimate`](crate::Estimate).
//! Taking the estimate first keeps concurrent callers from overshooting the limit together. Once the actual
//! cost is known, [`settle`](crate::Estimate::settle) gives back the part of the estimate that was not
//! used (nothing when the call used as much or more), and [`cancel`](crate::Estimate::cancel) gives it all
//! back.
//!
//! An estimate dropped without being settled (an early return, `?`, a cancelled task) gives its whole
//! estimate back, as `cancel` does: in memory at once, with Redis on a task of its own. Giving back is exact
//! while nothing else was admitted after it, never more than the charge, and nothing once the charge has left
//! the limit. With Redis, a give-back that cannot reach Redis is dropped: the limit keeps the charge, and
//! admits less, never more.
//!
//! The example uses a token bucket, and that choice matters for costs. A sliding log (the default) keeps one
//! entry per admitted call, weighing its cost: it is exact in every interval, but its memory grows with the
//! number of calls in the window. A token bucket is one small value per key whatever the costs, and refills
//! steadily; a fixed window, one counter, suits a budget that resets each window.
//!
//! ```
//! use limiter_runtime::{Algorithm, Limiter, RateLimited, Rule};
//! use std::time::Duration;
//!
//! struct Usage {
//!     total_tokens: u64,
//! }
//!
//! async fn call_the_model(prompt: &str) -> Usage {
//!     Usage { total_tokens: 250 }
//! }
//!
//! async fn complete(limiter: &Limiter, tenant: &str, prompt: &str) -> Result<(), RateLimited> {
//!     // 100,000 model tokens a minute per tenant, refilled as they are spent.
//!     let tokens = Rule::new()
//!         .prefix("llm:")
//!         .algorithm(Algorithm::TokenBucket)
//!         .max(100_000)
//!         .window(Duration::from_secs(60));
//!     let estimate = limiter.estimate(&tokens, tenant).cost(1_000).await?; // the estimate, taken up front
//!     let usage = call_the_model(prompt).await;
//!     estimate.settle(usage.total_tokens).await; // the rest of the estimate goes back
//!     Ok(())
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::in_memory();
//! complete(&limiter, "acme", "hello").await.unwrap();
//! let tokens = Rule::new().prefix("llm:").algorithm(Algorithm::TokenBucket).max(100_000)
//!     .window(Duration::from_secs(60));
//! // 1,000 estimated and 250 used: 750 came back (and the bucket refills as time passes).
//! assert!(limiter.check(&tokens, "acme").cost(0).await.remaining >= 99_750);
//! # }
//! ```
//!
//! ## A rule resolved once: `Limit`
//!
//! [`Limiter::check`](crate::Limiter::check) resolves its rule against the limiter's defaults and formats its
//! key (any `Display`) on every call. For a hot path, [`Limiter::resolve`](crate::Limiter::resolve) resolves the
//! rule once and returns a [`Limit`](crate::Limit), whose verbs ([`check`](crate::Limit::check),
//! [`enforce`](crate::Limit::enforce), ...) take keys already written out as `&str`.
//! A `Limit` shares its counts with `Limiter::check` (the same rule and key are one count), and overrides and
//! the switches apply to it on every call. In memory, its request completes at its first poll. A `Limit` is cheap to clone; build one per rule at start-up and keep it.
//!
//! ```
//! use limiter_runtime::{Limiter, Rule};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::in_memory();
//! let rule = Rule::new().prefix("api:").max(100).window(Duration::from_secs(1));
//! let per_ip = limiter.resolve(&rule);
//! let client_ip = String::from("10.0.0.7");
//! if !per_ip.check(&client_ip).await.allowed {
//!     // answer 429
//! }
//! // The same count as the plain API's.
//! assert_eq!(limiter.check(&rule, &client_ip).await.remaining, 98);
//! # }
//! ```
//!
//! ## Which limiter
//!
//! Build one limiter at start-up and [`install`](crate::Limiter::install) it: annotated functions use it.
//! [`Limiter::current`](crate::Limiter::current) is the limiter annotated functions use where it is called:
//! the one [`scope`](crate::Limiter::scope)d over the current task (a tower layer scopes its limiter over its
//! handlers, and tests scope one over each case), else the installed one. If none was installed when it is
//! first needed, one is built from the environment (Redis at `LIMITER_REDIS_URL` when it is set, else in
//! memory) and a warning says so once, since in-memory limits are per process. A second `install` is an
//! error.
//!
//! ```no_run
//! use limiter_runtime::{Limiter, Rule};
//!
//! # #[tokio::main] async fn main() -> Result<(), limiter_runtime::Error> {
//! Limiter::builder().redis("redis://127.0.0.1:6379/").connect().await?.install()?;
//! // Anywhere later:
//! let decision = Limiter::current().check(&Rule::new().prefix("export:").max(5), "alice").await;
//! # Ok(()) }
//! ```
