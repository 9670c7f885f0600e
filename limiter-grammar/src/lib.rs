//! The text of a `limiter-runtime` setting, read once for every place that takes it.
//!
//! The same settings are written in several places: in the `#[rate_limit]` attribute (`window = "1m30s"`,
//! `penalty = "1m..1h"`, `reserve = "critical 20%"`, `priority = "high"`, `algorithm = token_bucket`), read
//! when the code is compiled by `limiter-macros`; and in the environment (`LIMITER_WINDOW`,
//! `LIMITER_RESERVE`, `LIMITER_ALGORITHM`), an operator's override and the admin API, read at run time by
//! `limiter-runtime`. A text one of them takes and another refuses, or reads as another value, is a bug a
//! user finds in production. So both crates read these texts here, and nowhere else: a small crate with no
//! dependencies, that the proc-macro crate, the runtime and the runtime's build script can all depend on
//! (the shape of `sqlx-core` beside `sqlx-macros`).
//!
//! Each grammar reads text into plain values (a [`Duration`](std::time::Duration), a
//! [`Penalty`](penalty::Penalty)'s lengths, a [`Priority`], [`Share`](reserve::Share)s, an [`Algorithm`]),
//! and refuses the rest with a typed error whose `Display` is a sentence, and which says where in the text
//! the mistake is (a byte range) where that helps. Each reader words the error for its own place (the
//! attribute names the argument, the environment the variable), but what is taken, and as what, is decided
//! here alone:
//!
//! - [`duration`]: `500ms`, `10s`, `1m30s`, `1d12h`: whole numbers, each with its unit, the largest first.
//! - [`penalty`]: `10m`, or `1m..1h`: one length, or the first and the longest block.
//! - [`priority`]: `low`, `normal`, `high`, `critical`, in any ASCII case.
//! - [`reserve`]: `critical 20%`, `critical 10%, high 30%`, or `none`.
//! - [`algorithm`]: `sliding_log`, `fixed_window`, `sliding_window`, `token_bucket`, `leaky_bucket` (and the
//!   list of every algorithm, in the order of the codes the Redis scripts know them by).
//!
//! Whitespace around a value, and around its separators (`..`, `,`), is ignored everywhere; there is none
//! inside a duration (`10 s` is refused) or a name.

#![forbid(unsafe_code)]

pub mod algorithm;
pub mod duration;
pub mod penalty;
pub mod priority;
pub mod reserve;
#[doc(hidden)]
pub mod samples;

pub use algorithm::Algorithm;
pub use priority::Priority;
