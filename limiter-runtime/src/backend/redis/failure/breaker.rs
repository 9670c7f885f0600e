//! The circuit breaker in front of Redis: closed (call Redis), open (do not, until the next probe), probing
//! (one call at a time tries Redis again). The healthy path is one atomic load.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The breaker's thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BreakerConfig {
    /// Consecutive failures that open the breaker.
    pub(crate) failures: u32,
    /// While open, how often one call probes Redis.
    pub(crate) probe_every: Duration,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failures: 3,
            probe_every: Duration::from_millis(250),
        }
    }
}

#[derive(Debug)]
pub(crate) struct Breaker {
    config: BreakerConfig,
    epoch: Instant,
    consecutive_failures: AtomicU32,
    /// µs since `epoch` until which Redis is not called; 0 while closed.
    open_until: AtomicU64,
    /// Whether a probe is in flight (only one at a time).
    probing: AtomicBool,
    /// Whether the last call failed: the first failure and the recovery are logged once each.
    failing: AtomicBool,
}

/// What the breaker lets one call do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// Call Redis (closed).
    Call,
    /// Call Redis to see whether it is back (open, and this call is the one probe).
    Probe,
    /// Do not call Redis (open): decide in degraded mode at once.
    Skip,
}

/// A change worth one log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transition {
    None,
    /// The first failure after a healthy period.
    FirstFailure,
    /// The first success after a failure.
    Recovered,
}

impl Breaker {
    pub(crate) fn new(config: BreakerConfig) -> Self {
        Breaker {
            config,
            epoch: Instant::now(),
            consecutive_failures: AtomicU32::new(0),
            open_until: AtomicU64::new(0),
            probing: AtomicBool::new(false),
            failing: AtomicBool::new(false),
        }
    }

    fn now(&self) -> u64 {
        // At least 1, so that a reopened breaker is never mistaken for a closed one.
        u64::try_from(self.epoch.elapsed().as_micros())
            .unwrap_or(u64::MAX)
            .max(1)
    }

    pub(crate) fn permit(&self) -> Route {
        let open_until = self.open_until.load(Ordering::Acquire);
        if open_until == 0 {
            return Route::Call;
        }
        if self.now() < open_until {
            return Route::Skip;
        }
        match self
            .probing
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => Route::Probe,
            Err(_) => Route::Skip,
        }
    }

    pub(crate) fn probe_every(&self) -> Duration {
        self.config.probe_every
    }

    pub(crate) fn is_open(&self) -> bool {
        self.open_until.load(Ordering::Acquire) != 0
    }

    /// Returns whether Redis is failing: from a failure until the next success.
    pub(crate) fn is_failing(&self) -> bool {
        self.failing.load(Ordering::Relaxed)
    }

    pub(crate) fn succeeded(&self, permit: Route) -> Transition {
        if self.consecutive_failures.load(Ordering::Relaxed) != 0 {
            self.consecutive_failures.store(0, Ordering::Relaxed);
        }
        if permit == Route::Probe {
            self.open_until.store(0, Ordering::Release);
            self.probing.store(false, Ordering::Release);
        }
        if self.failing.load(Ordering::Relaxed) && self.failing.swap(false, Ordering::AcqRel) {
            Transition::Recovered
        } else {
            Transition::None
        }
    }

    pub(crate) fn failed(&self, permit: Route) -> Transition {
        let reopen =
            self.now() + u64::try_from(self.config.probe_every.as_micros()).unwrap_or(u64::MAX);
        if permit == Route::Probe {
            self.open_until.store(reopen, Ordering::Release);
            self.probing.store(false, Ordering::Release);
        } else {
            let failures = self.consecutive_failures.fetch_add(1, Ordering::AcqRel) + 1;
            if failures >= self.config.failures && self.open_until.load(Ordering::Acquire) == 0 {
                self.open_until.store(reopen, Ordering::Release);
            }
        }
        if self.failing.swap(true, Ordering::AcqRel) {
            Transition::None
        } else {
            Transition::FirstFailure
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker() -> Breaker {
        Breaker::new(BreakerConfig {
            failures: 2,
            probe_every: Duration::from_millis(30),
        })
    }

    #[test]
    fn opens_after_consecutive_failures_and_probes_one_at_a_time() {
        let b = breaker();
        assert_eq!(b.failed(b.permit()), Transition::FirstFailure);
        assert_eq!(b.permit(), Route::Call);
        assert_eq!(b.failed(Route::Call), Transition::None);
        assert_eq!(b.permit(), Route::Skip);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(b.permit(), Route::Probe);
        assert_eq!(b.permit(), Route::Skip, "one probe at a time");
        b.failed(Route::Probe);
        assert_eq!(b.permit(), Route::Skip, "a failed probe waits for the next");
        std::thread::sleep(Duration::from_millis(40));
        let probe = b.permit();
        assert_eq!(probe, Route::Probe);
        assert_eq!(b.succeeded(probe), Transition::Recovered);
        assert_eq!(b.permit(), Route::Call);
        assert!(!b.is_open());
    }

    #[test]
    fn a_success_resets_the_count() {
        let b = breaker();
        b.failed(Route::Call);
        b.succeeded(Route::Call);
        b.failed(Route::Call);
        assert_eq!(b.permit(), Route::Call);
    }
}
