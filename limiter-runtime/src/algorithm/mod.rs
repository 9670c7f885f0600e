//! The counting algorithms. Each file here is the in-memory twin of `scripts/<algorithm>.lua`: the same
//! arithmetic on the same integers (microseconds), so the memory and Redis stores decide identically.

pub(crate) mod sliding_log;

/// How a limit counts calls.
///
/// Every algorithm touches exactly one Redis key per limit, takes its time from Redis, and has an in-memory
/// twin with the same semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Algorithm {
    /// Sliding-window log, exact: at most `max` admissions in **any** interval of length `window`.
    ///
    /// One sorted set per key holding one member per admitted unit, so memory grows with `max`
    /// (never beyond it). `retry_after` is exact: it is when the oldest admission that blocks this call leaves
    /// the window.
    #[default]
    SlidingLog,
}

/// One call to decide, in the integers every algorithm computes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request {
    /// Window length, µs.
    pub(crate) window: u64,
    /// Admissions (units of cost) per window.
    pub(crate) max: u64,
    /// Units this call consumes.
    pub(crate) cost: u64,
}

/// What an algorithm decided, in µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) allowed: bool,
    pub(crate) remaining: u64,
    pub(crate) retry_after: u64,
    pub(crate) reset_after: u64,
}
