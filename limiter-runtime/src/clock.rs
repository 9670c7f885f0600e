//! Time, injected: the in-memory store reads a [`Clock`], so tests advance a [`FakeClock`] instead of sleeping.
//!
//! The Redis store takes its time from Redis itself (`TIME` inside the script), so that every node shares one
//! clock. Only when a clock is set explicitly on the builder does the Redis store pass "now" into the script:
//! a test-only mode that drives Redis deterministically.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A source of time for rate-limiting decisions.
///
/// `now()` is a duration since an origin that every decision of one store shares (the Unix epoch for
/// [`SystemClock`]); it must never go backwards.
///
/// # Example
///
/// ```
/// use limiter_runtime::{Clock, FakeClock};
/// use std::time::Duration;
///
/// let clock = FakeClock::new();
/// let start = clock.now();
/// clock.advance(Duration::from_secs(10));
/// assert_eq!(clock.now() - start, Duration::from_secs(10));
/// ```
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Returns the current time, as a duration since this clock's origin.
    fn now(&self) -> Duration;

    /// Returns the current time in whole microseconds since this clock's origin (saturating): what the in-memory
    /// store counts in, read on every decision. The default truncates [`now`](Clock::now); override it only
    /// where a reading can be had more cheaply, and then with the same value.
    fn now_micros(&self) -> u64 {
        as_micros(self.now())
    }
}

/// The real clock: wall-clock origin (the Unix epoch), monotonic progress.
///
/// It reads the wall clock once, when created, and then advances with a monotonic clock, so a wall-clock
/// adjustment never makes it run backwards. The monotonic clock is the CPU's time-stamp counter where it is
/// invariant (read in a few ns, as `governor` does, through `quanta`), else the OS's monotonic clock.
#[derive(Debug, Clone)]
pub struct SystemClock {
    clock: quanta::Clock,
    /// The monotonic clock's raw reading (ticks) when this clock was made.
    origin: u64,
    /// The wall clock then, in ns since the Unix epoch (a `u64` of ns lasts until 2554).
    origin_since_epoch: u64,
}

impl SystemClock {
    /// Creates a clock reading the wall clock now and advancing monotonically from there.
    pub fn new() -> Self {
        let clock = quanta::Clock::new();
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        SystemClock {
            origin: clock.raw(),
            clock,
            origin_since_epoch: u64::try_from(since_epoch.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// Returns ns since the Unix epoch: the raw ticks since the origin, scaled, after the wall clock at the origin.
    #[inline]
    fn nanos(&self) -> u64 {
        let elapsed = self.clock.delta_as_nanos(self.origin, self.clock.raw());
        self.origin_since_epoch.saturating_add(elapsed)
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos())
    }

    fn now_micros(&self) -> u64 {
        self.nanos() / 1_000
    }
}

/// A clock that moves only when told to: for tests that must never sleep.
///
/// Clones share one time, so a test keeps a clone and advances the clock the limiter reads.
///
/// # Example
///
/// ```
/// use limiter_runtime::{FakeClock, Limiter, Rule};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let clock = FakeClock::new();
/// let limiter = Limiter::builder().clock(clock.clone()).build().unwrap();
/// let rule = Rule::new().max(1).window(Duration::from_secs(10));
///
/// assert!(limiter.check(&rule, "alice").await.allowed);
/// assert!(!limiter.check(&rule, "alice").await.allowed);
/// clock.advance(Duration::from_secs(10));
/// assert!(limiter.check(&rule, "alice").await.allowed);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct FakeClock {
    micros: Arc<AtomicU64>,
}

impl FakeClock {
    /// Creates a fake clock reading one hour after its origin (so that "now minus a window" stays positive).
    pub fn new() -> Self {
        FakeClock::starting_at(Duration::from_secs(3600))
    }

    /// Creates a fake clock reading `start`.
    pub fn starting_at(start: Duration) -> Self {
        FakeClock {
            micros: Arc::new(AtomicU64::new(as_micros(start))),
        }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.micros.fetch_add(as_micros(by), Ordering::SeqCst);
    }

    /// Sets the clock to `now`; it must not be earlier than the current reading.
    pub fn set(&self, now: Duration) {
        self.micros.fetch_max(as_micros(now), Ordering::SeqCst);
    }
}

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock::new()
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Duration {
        Duration::from_micros(self.micros.load(Ordering::SeqCst))
    }

    fn now_micros(&self) -> u64 {
        self.micros.load(Ordering::SeqCst)
    }
}

/// Returns the whole microseconds of `d`, saturating: the unit every algorithm computes in.
pub(crate) fn as_micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Returns the whole milliseconds of `d`, rounded up: a client told to wait that long is never early.
#[cfg(any(feature = "tonic", feature = "tower"))]
pub(crate) fn ceil_millis(d: Duration) -> u64 {
    let whole = u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    whole.saturating_add(u64::from(!d.subsec_nanos().is_multiple_of(1_000_000)))
}

/// Returns the whole seconds of `d`, rounded up: a client told to wait that long is never early.
#[cfg(any(feature = "axum", feature = "tonic", feature = "tower"))]
pub(crate) fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(any(feature = "tonic", feature = "tower"))]
    fn milliseconds_round_up() {
        assert_eq!(ceil_millis(Duration::from_micros(1)), 1);
        assert_eq!(ceil_millis(Duration::from_micros(1_500)), 2);
        assert_eq!(ceil_millis(Duration::from_secs(2)), 2_000);
    }

    #[test]
    #[cfg(any(feature = "axum", feature = "tonic", feature = "tower"))]
    fn seconds_round_up() {
        assert_eq!(ceil_secs(Duration::from_millis(1)), 1);
        assert_eq!(ceil_secs(Duration::from_millis(1_001)), 2);
        assert_eq!(ceil_secs(Duration::from_secs(10)), 10);
        assert_eq!(ceil_secs(Duration::ZERO), 0);
    }

    /// Checks that the system clock starts at the wall clock, and its two readings are one clock: a reading in µs falls
    /// between the readings as durations made before and after it, and none goes backwards.
    #[test]
    fn the_system_clocks_readings_agree_and_move_forward() {
        let wall = as_micros(SystemTime::now().duration_since(UNIX_EPOCH).unwrap());
        let clock = SystemClock::new();
        let mut last = clock.now_micros();
        assert!(
            last.abs_diff(wall) < 1_000_000,
            "{last} µs, the wall clock {wall} µs"
        );
        for _ in 0..100_000 {
            let before = as_micros(clock.now());
            let micros = clock.now_micros();
            let after = as_micros(clock.now());
            assert!(
                before <= micros && micros <= after,
                "{before} {micros} {after}"
            );
            assert!(last <= before, "{last} then {before}");
            last = after;
        }
    }

    #[test]
    fn a_fake_clock_reads_what_it_was_set_to() {
        let clock = FakeClock::starting_at(Duration::from_micros(1_500));
        clock.advance(Duration::from_nanos(2_999));
        assert_eq!(
            (clock.now_micros(), clock.now()),
            (1_502, Duration::from_micros(1_502))
        );
    }
}
