//! The Lua scripts the benchmark calls, and their arguments: the library's script of one limit of each
//! algorithm (`limiter-runtime/scripts/one_limit.lua` with `scripts/algorithms/<algorithm>.lua`, assembled at
//! build time: what a call of one limit runs), and the baseline's minimal one
//! (`baseline/<algorithm>.lua`, what a user writes by hand: Redis `TIME`, the fewest arguments, `return 1` or
//! `return 0`).

use std::time::Duration;

use limiter_runtime::Algorithm;

/// One limit, as both kinds of script are told it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limit {
    pub(crate) max: u64,
    pub(crate) window: Duration,
}

impl Limit {
    fn window_us(self) -> u64 {
        u64::try_from(self.window.as_micros()).expect("a window in µs fits")
    }

    /// The minimal buckets' interval between two units, in whole µs: `window / max`, at least 1. A rate above
    /// one unit per µs (the hot key's) rounds up to it; a client of one script call per decision never gets
    /// near a million a second on one key, so its calls are admitted all the same.
    fn interval_us(self) -> u64 {
        (self.window_us() / self.max.max(1)).max(1)
    }
}

/// The minimal script of `algorithm`.
pub(crate) fn minimal_source(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::SlidingLog => include_str!("baseline/sliding_log.lua"),
        Algorithm::FixedWindow => include_str!("baseline/fixed_window.lua"),
        Algorithm::SlidingWindow => include_str!("baseline/sliding_window.lua"),
        Algorithm::TokenBucket => include_str!("baseline/token_bucket.lua"),
        Algorithm::LeakyBucket => include_str!("baseline/leaky_bucket.lua"),
        other => panic!("no minimal script for {other:?}"),
    }
}

/// The library's script of one limit of `algorithm`, as Redis runs it.
pub(crate) fn library_source(algorithm: Algorithm) -> &'static str {
    limiter_runtime::__private::one_limit_script(algorithm)
}

/// The minimal script's arguments for `limit`, before the sliding log's member (which each call adds): window
/// and max for the window algorithms; interval and burst (= max) for the token bucket; interval and max wait
/// (0: reject) for the leaky bucket.
pub(crate) fn minimal_args(algorithm: Algorithm, limit: Limit) -> [u64; 2] {
    match algorithm {
        Algorithm::TokenBucket => [limit.interval_us(), limit.max],
        Algorithm::LeakyBucket => [limit.interval_us(), 0],
        _ => [limit.window_us(), limit.max],
    }
}

/// What `redis-benchmark` replaces with a random 12-digit number, as many times as it occurs.
const RANDOM: &str = "__rand_int__";

/// The minimal script's arguments for one call, for `redis-benchmark`: the sliding log's member is a random
/// 16-digit number.
pub(crate) fn minimal_ceiling_args(algorithm: Algorithm, limit: Limit) -> Vec<String> {
    let mut args: Vec<String> = minimal_args(algorithm, limit)
        .iter()
        .map(u64::to_string)
        .collect();
    if algorithm == Algorithm::SlidingLog {
        args.push(format!("0000{RANDOM}"));
    }
    args
}

/// The library's arguments for one call of cost 1, as it sends them (see `scripts/one_limit.lua`), for
/// `redis-benchmark`: window, max, the depth (the token bucket's burst, the leaky bucket's max wait: 0, it
/// rejects; else 0), and the sliding log's nonce (16 digits, random here); a call of cost 1 sends no cost.
pub(crate) fn library_ceiling_args(algorithm: Algorithm, limit: Limit) -> Vec<String> {
    let mut args = vec![limit.window_us().to_string(), limit.max.to_string()];
    match algorithm {
        Algorithm::TokenBucket => args.push(limit.max.to_string()),
        Algorithm::SlidingLog => args.extend(["0".to_owned(), format!("0000{RANDOM}")]),
        _ => args.push("0".to_owned()),
    }
    args
}
