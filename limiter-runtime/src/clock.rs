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
    /// The current time, as a duration since this clock's origin.
    fn now(&self) -> Duration;
}

/// The real clock: wall-clock origin (the Unix epoch), monotonic progress.
///
/// It reads the wall clock once, when created, and then advances with a monotonic clock, so a wall-clock
/// adjustment never makes it run backwards. The monotonic clock is the CPU's time-stamp counter where it is
/// invariant (read in a few ns, as `governor` does, through `quanta`), else the OS's monotonic clock.
#[derive(Debug, Clone)]
pub struct SystemClock {
    clock: quanta::Clock,
    origin: quanta::Instant,
    origin_since_epoch: Duration,
}

impl SystemClock {
    /// A clock reading the wall clock now and advancing monotonically from there.
    pub fn new() -> Self {
        let clock = quanta::Clock::new();
        SystemClock {
            origin: clock.now(),
            clock,
            origin_since_epoch: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin_since_epoch + self.clock.now().duration_since(self.origin)
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
    /// A fake clock reading one hour after its origin (so that "now minus a window" stays positive).
    pub fn new() -> Self {
        FakeClock::starting_at(Duration::from_secs(3600))
    }

    /// A fake clock reading `start`.
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
}

/// Whole microseconds of `d`, saturating: the unit every algorithm computes in.
pub(crate) fn as_micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}
