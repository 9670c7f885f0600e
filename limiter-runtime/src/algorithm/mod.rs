//! The counting algorithms. Each file here is the in-memory twin of one algorithm's Redis side
//! (`scripts/algorithms/<algorithm>.lua`): the same arithmetic on the same integers (microseconds), so the
//! memory and Redis stores decide identically. Every decision script answers only the keys' state before its
//! calls, and the twins, as that state, replay them: one computation of each outcome, for both stores.

pub(crate) mod calendar;
pub(crate) mod carry;
mod fixed_window;
pub(crate) mod in_flight;
mod leaky_bucket;
mod pause;
mod peek;
mod queue;
pub(crate) mod sliding_log;
mod sliding_window;
mod token_bucket;

#[cfg(test)]
mod give_backs;
#[cfg(test)]
mod guarantees;

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use self::calendar::Calendar;
use self::fixed_window::FixedWindow;
use self::in_flight::InFlight;
use self::leaky_bucket::LeakyBucket;
pub(crate) use self::peek::{peek, peek_log, Peek};
use self::queue::Queue;
use self::sliding_log::SlidingLog;
use self::sliding_window::SlidingWindow;
use self::token_bucket::TokenBucket;
use crate::parse::ParseError;

/// How a limit counts calls.
///
/// Every algorithm touches exactly one Redis key per limit, takes its time from Redis, and has an in-memory
/// twin with the same semantics. Choose by need:
///
/// | algorithm | guarantee | memory per key | `retry_after` |
/// |---|---|---|---|
/// | [`SlidingLog`](Algorithm::SlidingLog) | ≤ `max` in **any** `window` | grows with the calls in the window | exact |
/// | [`FixedWindow`](Algorithm::FixedWindow) | ≤ `max` per aligned window (2 × `max` across a boundary) | O(1) | exact |
/// | [`SlidingWindow`](Algorithm::SlidingWindow) | weighted estimate of the sliding window | O(1) | exact for the estimate |
/// | [`TokenBucket`](Algorithm::TokenBucket) | ≤ `burst` + `max` · t / `window` over any t | O(1)¹ | exact |
/// | [`LeakyBucket`](Algorithm::LeakyBucket) | admissions ≥ `window` / `max` apart (shaping) | O(1)¹ | exact |
/// | [`Calendar`](Algorithm::Calendar) | ≤ `max` per period of the calendar, in a time zone | O(1) | the period's end |
///
/// ¹ Plus a few bytes for each charge given back out of order while it is still in the queue (see
/// `guide::algorithms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Algorithm {
    /// Sliding-window log, exact: at most `max` admissions in **any** interval of length `window`.
    ///
    /// One sorted set per key holding one member per admitted call (or per script call, for calls on one key
    /// sent together), weighing its cost (a cost is a weight, never a number of entries), so memory grows with
    /// the calls in the window (never beyond `max` members).
    /// `retry_after` is when the oldest admission that blocks this call leaves the window.
    #[default]
    SlidingLog,
    /// Fixed window: at most `max` admissions per aligned window (`[k·window, (k+1)·window)`).
    ///
    /// One counter per key, whose expiry is set once, when the window opens. Cheap, but up to 2 × `max` can
    /// pass across a window boundary. `retry_after` is the start of the next window.
    FixedWindow,
    /// Sliding window counter: the previous window's count weighted by its overlap with the sliding window,
    /// plus the current window's count. O(1) memory.
    ///
    /// An estimate that assumes the previous window's calls were spread evenly: never more than `max` per
    /// aligned window, but up to 2 × `max` in an unaligned interval when traffic is bursty.
    SlidingWindow,
    /// Token bucket (GCRA): a bucket of `burst` tokens (default `max`) refilled at `max` per `window`.
    ///
    /// Never more than `burst + max · t / window` admissions over any interval `t`: bursts up to `burst`,
    /// then the steady rate. One small value per key.
    TokenBucket,
    /// Leaky bucket, for shaping: calls leave at a steady `max` per `window`. A call is given the next free
    /// slot and told how long to wait for it ([`Decision::delay`](crate::Decision::delay)); it is admitted if
    /// that wait is within the rule's `max_wait` (zero unless waiting is asked for), else rejected.
    ///
    /// Admitted slots never start closer than `window / max` apart.
    LeakyBucket,
    /// In flight: at most `max` calls of a key running at once, across every node (set with
    /// [`Rule::in_flight`](crate::Rule::in_flight), not chosen as a rate).
    ///
    /// A call takes one permit, whatever its cost, and holds it until it is given back: when the annotated
    /// body ends however it ends, or when its [`Permit`](crate::Permit) is dropped. In Redis each permit is a
    /// member of a sorted set scored by when it expires (`in_flight_ttl` after it was taken, renewed while it
    /// is held), so that the permits of a node that dies come back. `retry_after` is zero: when a permit
    /// comes back is its holder's to say.
    InFlight,
    /// Calendar quota: at most `max` units per period of the calendar (a day, a week, a month from its
    /// billing day) in a time zone, counted again from each period's first instant (set with
    /// [`Rule::period`](crate::Rule::period), not chosen as a rate).
    ///
    /// A fixed window whose windows are the periods: one counter per key, expiring when its period ends.
    /// The call says where the periods around its "now" end, computed in the zone; Redis decides which one
    /// "now" is in, on its own clock. `retry_after` and `reset_after` are the time to the period's end.
    Calendar,
}

impl Algorithm {
    /// Every algorithm of a rate: the one list the runtime, its tests and benchmarks, and the environment's
    /// parser use. ([`InFlight`](Algorithm::InFlight) counts calls running, not a rate: a rule asks for it
    /// with [`Rule::in_flight`](crate::Rule::in_flight).)
    pub const ALL: [Algorithm; 5] = [
        Algorithm::SlidingLog,
        Algorithm::FixedWindow,
        Algorithm::SlidingWindow,
        Algorithm::TokenBucket,
        Algorithm::LeakyBucket,
    ];

    /// Returns its name as the attribute spells it (`algorithm = token_bucket`), and as `FromStr` reads it: the
    /// grammar's (`limiter_grammar::algorithm::NAMES`, the one list of the names).
    pub const fn name(self) -> &'static str {
        self.grammar().name()
    }

    /// Returns it as the grammar knows it, which gives its name and the code the scripts know it by.
    #[inline]
    pub(crate) const fn grammar(self) -> limiter_grammar::Algorithm {
        match self {
            Algorithm::SlidingLog => limiter_grammar::Algorithm::SlidingLog,
            Algorithm::FixedWindow => limiter_grammar::Algorithm::FixedWindow,
            Algorithm::SlidingWindow => limiter_grammar::Algorithm::SlidingWindow,
            Algorithm::TokenBucket => limiter_grammar::Algorithm::TokenBucket,
            Algorithm::LeakyBucket => limiter_grammar::Algorithm::LeakyBucket,
            Algorithm::InFlight => limiter_grammar::Algorithm::InFlight,
            Algorithm::Calendar => limiter_grammar::Algorithm::Calendar,
        }
    }

    /// Returns the algorithm the grammar read.
    const fn from_grammar(algorithm: limiter_grammar::Algorithm) -> Algorithm {
        match algorithm {
            limiter_grammar::Algorithm::SlidingLog => Algorithm::SlidingLog,
            limiter_grammar::Algorithm::FixedWindow => Algorithm::FixedWindow,
            limiter_grammar::Algorithm::SlidingWindow => Algorithm::SlidingWindow,
            limiter_grammar::Algorithm::TokenBucket => Algorithm::TokenBucket,
            limiter_grammar::Algorithm::LeakyBucket => Algorithm::LeakyBucket,
            limiter_grammar::Algorithm::InFlight => Algorithm::InFlight,
            limiter_grammar::Algorithm::Calendar => Algorithm::Calendar,
        }
    }

    /// Returns every name, for messages: "sliding_log, fixed_window, ... or leaky_bucket".
    pub(crate) fn expected() -> &'static str {
        static EXPECTED: LazyLock<String> = LazyLock::new(limiter_grammar::algorithm::expected);
        &EXPECTED
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = ParseError;

    /// Parses a rate's algorithm (one of [`ALL`](Algorithm::ALL)) by its [`name`](Algorithm::name), as the
    /// attribute reads `algorithm = ...` (see `limiter_grammar::algorithm`).
    fn from_str(name: &str) -> Result<Algorithm, ParseError> {
        limiter_grammar::Algorithm::parse(name)
            .map(Algorithm::from_grammar)
            .map_err(|_| ParseError::new("algorithm", name, Algorithm::expected()))
    }
}

/// What one call asks of a limit, in the integers every algorithm computes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Terms {
    /// Window length, µs (at least 1).
    pub(crate) window: u64,
    /// Admissions (units of cost) per window (at least 1).
    pub(crate) max: u64,
    /// Units this call consumes.
    pub(crate) cost: u64,
    /// Token bucket: capacity in units.
    pub(crate) burst: u64,
    /// Leaky bucket: the longest wait for a slot that still admits the call, µs.
    pub(crate) max_wait: u64,
    /// Calendar: where the previous, the current and the next periods end on the call's clock (µs since the
    /// Unix epoch; `window` is the current one's length). Zeros for a rate.
    pub(crate) ends: [u64; 3],
    /// Units this call must leave free: the share kept for the priorities above its own (see
    /// [`crate::priority`]; 0 for a call of the highest priority, and for every call of a limit without a
    /// reserve). A call fits when its cost and these fit; it takes only its cost. In the algorithm's units:
    /// a leaky bucket's are slots.
    pub(crate) kept: u64,
}

impl Terms {
    /// Returns whether a call of this cost can ever be admitted (a cost above the limit, or above a token bucket's
    /// capacity, never is, nor any call of a limit of zero: its `retry_after` is only nominal).
    pub(crate) fn can_fit(&self, algorithm: Algorithm) -> bool {
        if self.max == 0 {
            return false;
        }
        let asked = self.cost.saturating_add(self.kept);
        match algorithm {
            // A call holds one permit, whatever its cost.
            Algorithm::InFlight => self.kept < self.max,
            Algorithm::TokenBucket => self.cost <= self.max && asked <= self.burst,
            Algorithm::LeakyBucket => self.cost <= self.max && self.kept < self.capacity(algorithm),
            _ => asked <= self.max,
        }
    }

    /// Returns what a share kept is a share of ([`Reserves`](crate::priority::Reserves)): `max`, a token bucket's
    /// `burst`, or a leaky bucket's slots within its `max_wait` (the one now and those after it).
    pub(crate) fn capacity(&self, algorithm: Algorithm) -> u64 {
        match algorithm {
            Algorithm::TokenBucket => self.burst,
            Algorithm::LeakyBucket => narrow(
                div(
                    u128::from(self.max_wait) * u128::from(self.max),
                    u128::from(self.window),
                ) + 1,
            ),
            _ => self.max,
        }
    }

    /// Returns the most the call may see its limit hold: `max` less what it must leave free.
    #[inline]
    pub(crate) fn ceiling(&self) -> u64 {
        self.max.saturating_sub(self.kept)
    }
}

/// The state of one key under one algorithm: what the in-memory store keeps per key.
#[derive(Debug, Clone)]
pub(crate) enum State {
    SlidingLog(SlidingLog),
    FixedWindow(FixedWindow),
    SlidingWindow(SlidingWindow),
    TokenBucket(TokenBucket),
    LeakyBucket(LeakyBucket),
    InFlight(InFlight),
    Calendar(Calendar),
}

impl State {
    /// Creates the state of a key no call has charged yet.
    pub(crate) fn new(algorithm: Algorithm) -> State {
        match algorithm {
            Algorithm::SlidingLog => State::SlidingLog(SlidingLog::default()),
            Algorithm::FixedWindow => State::FixedWindow(FixedWindow::default()),
            Algorithm::SlidingWindow => State::SlidingWindow(SlidingWindow::default()),
            Algorithm::TokenBucket => State::TokenBucket(TokenBucket::default()),
            Algorithm::LeakyBucket => State::LeakyBucket(LeakyBucket::default()),
            Algorithm::InFlight => State::InFlight(InFlight::default()),
            Algorithm::Calendar => State::Calendar(Calendar::default()),
        }
    }

    pub(crate) fn algorithm(&self) -> Algorithm {
        match self {
            State::SlidingLog(_) => Algorithm::SlidingLog,
            State::FixedWindow(_) => Algorithm::FixedWindow,
            State::SlidingWindow(_) => Algorithm::SlidingWindow,
            State::TokenBucket(_) => Algorithm::TokenBucket,
            State::LeakyBucket(_) => Algorithm::LeakyBucket,
            State::InFlight(_) => Algorithm::InFlight,
            State::Calendar(_) => Algorithm::Calendar,
        }
    }

    /// Decides a call at `now` (µs), charging it if admitted.
    pub(crate) fn decide(&mut self, now: u64, charge: &Terms) -> Outcome {
        match self {
            State::SlidingLog(s) => s.decide(now, charge),
            State::FixedWindow(s) => s.decide(now, charge),
            State::SlidingWindow(s) => s.decide(now, charge),
            State::TokenBucket(s) => s.decide(now, charge),
            State::LeakyBucket(s) => s.decide(now, charge),
            State::InFlight(s) => s.decide(now, charge),
            State::Calendar(s) => s.decide(now, charge),
        }
    }

    /// Returns the state a decision script reports (see `scripts/one_limit.lua`) as the twin's, at `now`, so that the
    /// twin replays the script's calls and tells each its outcome. `None` for a report of another algorithm's
    /// state (the sliding log reports only its count: see [`sliding_log::outcome`]).
    pub(crate) fn reported(
        algorithm: Algorithm,
        now: u64,
        charge: &Terms,
        reported: Reported,
    ) -> Option<State> {
        let index = now / charge.window;
        let queue = |queued, since, given| Queue::at(now, queued, charge.max, since, given);
        Some(match (algorithm, reported) {
            (Algorithm::FixedWindow, Reported::Count(count)) => {
                State::FixedWindow(FixedWindow::at(index, count))
            }
            (Algorithm::SlidingWindow, Reported::Counts { current, previous }) => {
                State::SlidingWindow(SlidingWindow::at(index, current, previous))
            }
            (
                Algorithm::TokenBucket,
                Reported::Queue {
                    queued,
                    since,
                    given,
                },
            ) => State::TokenBucket(TokenBucket::at(queue(queued, since, given))),
            (
                Algorithm::LeakyBucket,
                Reported::Queue {
                    queued,
                    since,
                    given,
                },
            ) => State::LeakyBucket(LeakyBucket::at(queue(queued, since, given))),
            (Algorithm::InFlight, Reported::Held(held)) => State::InFlight(InFlight::at(held)),
            (Algorithm::Calendar, Reported::Count(count)) => {
                State::Calendar(Calendar::at(calendar::end(now, charge), count))
            }
            _ => return None,
        })
    }

    /// Gives back, at `now`, `units` of what an admission of `charge` charged (`receipt`): exactly what it
    /// added, unless that has already left the limit (then nothing); never more.
    pub(crate) fn give_back(&mut self, now: u64, charge: &Terms, units: u64, receipt: &Receipt) {
        match self {
            State::SlidingLog(s) => s.give_back(now, charge, units, receipt),
            State::FixedWindow(s) => s.give_back(charge.window, units, receipt),
            State::SlidingWindow(s) => s.give_back(charge.window, units, receipt),
            State::TokenBucket(s) => s.give_back(now, charge, units, receipt),
            State::LeakyBucket(s) => s.give_back(now, charge, units, receipt),
            State::InFlight(s) => s.give_back(receipt),
            State::Calendar(s) => s.give_back(units, receipt),
        }
    }

    /// Returns whether it holds nothing a fresh state would not: an in-flight key with no permit held.
    pub(crate) fn holds_nothing(&self) -> bool {
        matches!(self, State::InFlight(s) if s.is_empty())
    }
}

/// What a decision script reports of a key's state before its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reported {
    /// Fixed window, calendar: the current window's (period's) count.
    Count(u64),
    /// In flight: the permits held.
    Held(u64),
    /// Sliding window: the current and the previous windows' counts.
    Counts { current: u64, previous: u64 },
    /// The buckets: how far the queue reached past now (µs × max), since when it had held charges without a
    /// pause, and what had been given back since then (both unread when the queue was empty).
    Queue {
        queued: u128,
        since: u64,
        given: u64,
    },
}

/// What an algorithm decided, in µs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) allowed: bool,
    pub(crate) remaining: u64,
    pub(crate) retry_after: u64,
    pub(crate) reset_after: u64,
    pub(crate) delay: u64,
    /// What an admission charged (empty when nothing was).
    pub(crate) receipt: Receipt,
    /// Refused for its key's block (a penalty's or a ban), in force or started by this very call; then
    /// `retry_after` is what is left of the block.
    pub(crate) blocked: bool,
    /// Refused for the share kept for the priorities above the call's: without it, the limit would have
    /// admitted the call. Not an offence for a penalty.
    pub(crate) reserved: bool,
}

/// What an admission charged, so that it can be given back exactly: see each algorithm's `give_back`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Receipt {
    /// When, on the store's clock (µs).
    pub(crate) at: u64,
    /// The windows: the index of the window charged. The buckets: the whole µs of when the charge ended
    /// (`fraction` the rest, in 1/max µs). The sliding log in Redis: the call's nonce, which names its
    /// members.
    pub(crate) mark: u64,
    pub(crate) fraction: u64,
    /// The buckets: since when they had been charged without a pause, and what had been given back since
    /// then (µs × max), when the charge was made (see [`Queue`]).
    pub(crate) since: u64,
    pub(crate) given: u64,
}

impl Outcome {
    /// Returns an outcome admitted with the whole quota left: a decision made without counting (switched off, or fail
    /// open).
    pub(crate) fn admit(max: u64) -> Outcome {
        Outcome {
            allowed: true,
            remaining: max,
            retry_after: 0,
            reset_after: 0,
            delay: 0,
            receipt: Receipt::default(),
            blocked: false,
            reserved: false,
        }
    }

    /// Turns this outcome into one refused for its key's block, `left` µs more (the block's remaining time, both to
    /// retry after and to wait for a fresh start: `reset_after` is at least it).
    pub(crate) fn blocked(self, left: u64) -> Outcome {
        Outcome {
            allowed: false,
            remaining: 0,
            retry_after: left,
            reset_after: self.reset_after.max(left),
            delay: 0,
            receipt: Receipt::default(),
            blocked: true,
            reserved: false,
        }
    }

    pub(crate) fn denied(remaining: u64, retry_after: u64, reset_after: u64) -> Outcome {
        Outcome {
            allowed: false,
            remaining,
            retry_after,
            reset_after,
            delay: 0,
            receipt: Receipt::default(),
            blocked: false,
            reserved: false,
        }
    }

    /// Returns a refusal by a limit that counts units and holds `count` of them (the windows, the log): what is left
    /// under the call's ceiling, and whether it was refused only for the share kept above its priority.
    pub(crate) fn counted_out(
        req: &Terms,
        count: u64,
        retry_after: u64,
        reset_after: u64,
    ) -> Outcome {
        let reserved = req.kept > 0 && count.saturating_add(req.cost) <= req.max;
        Outcome::denied(
            req.ceiling().saturating_sub(count),
            retry_after,
            reset_after,
        )
        .reserved(reserved)
    }

    /// Marks this refusal as one for the share kept above the call (`reserved`: the limit would have admitted the
    /// call without it).
    #[inline]
    pub(crate) fn reserved(mut self, reserved: bool) -> Outcome {
        self.reserved = reserved;
        self
    }
}

/// Computes `a / b`. The algorithms compute in `u128` so that no product of a window (µs) and a limit can overflow,
/// but their values nearly always fit in 64 bits, and a 64-bit division is one instruction where a 128-bit
/// one is a library call: the costliest step of a decision, when taken. Even in 64 bits a division is slow
/// (tens of cycles), and a quotient of zero, common (what remains of a bucket just emptied), needs none.
pub(crate) fn div(a: u128, b: u128) -> u128 {
    if a < b {
        return 0;
    }
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => u128::from(a / b),
        _ => a / b,
    }
}

/// Computes `a / b` rounded up (in 64 bits when both fit, as [`div`]).
pub(crate) fn ceil_div(a: u128, b: u128) -> u128 {
    match (u64::try_from(a), u64::try_from(b)) {
        (Ok(a), Ok(b)) => u128::from(a.div_ceil(b)),
        _ => a.div_ceil(b),
    }
}

/// Narrows a result known to fit (it is a duration in µs or a count of units), saturating if it does not.
pub(crate) fn narrow(n: u128) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
