//! How long ago the store decided an answer, as this node reads it: a slot is a time on Redis's clock,
//! handed to the caller as a wait from when Redis decided. Counted from the answer's arrival instead, a slot
//! would land as much later as the answer took to come, which varies from one answer to the next (a busy
//! node, a slow read): two slots a spacing apart could land closer. So each answer's arrival is compared with
//! the time Redis decided it, on this node's clock: the least gap seen lately is the two clocks' offset plus
//! the fastest way back, and what an answer took beyond that is how late it came.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long the least gap seen is kept before a new one replaces it (clocks drift; a stepped clock heals).
const KEPT: Duration = Duration::from_secs(10);

/// The most an answer is taken to have been late: beyond it, the clocks are not trusted.
const MOST: Duration = Duration::from_millis(250);

/// The least gap seen between an answer's arrival and its decision's time (µs, this node's clock less the
/// store's), and when it was seen.
#[derive(Debug, Default)]
pub(crate) struct Lag {
    least: Mutex<Option<(i128, Instant)>>,
    /// Set when the limiter reads a clock of its own (a test's), which answers' arrivals cannot be compared
    /// with: a frozen clock would make every answer look on time, one moved by hand, late.
    off: AtomicBool,
}

impl Lag {
    /// Stops reading lags: the limiter's clock is not the machine's.
    pub(crate) fn turn_off(&self) {
        self.off.store(true, Ordering::Relaxed);
    }

    /// Returns how long ago an answer decided at `decided_at` (the store's clock: Redis's `TIME`, the wall
    /// clock of its machine) was decided, arriving now: read on this machine's wall clock, whose rate is the
    /// monotonic clock's that slots are kept on (the limiter's own clock, the CPU's counter calibrated once,
    /// may drift from both by milliseconds a minute).
    pub(crate) fn arrived(&self, decided_at: Duration) -> Duration {
        let now = std::time::SystemTime::now();
        let since = now
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        self.of(decided_at, since)
    }

    /// Returns how long ago an answer decided at `decided_at` (the store's clock) was decided, arriving at
    /// `arrived` (this node's clock, the same epoch): the part of its way back beyond the fastest seen lately.
    pub(crate) fn of(&self, decided_at: Duration, arrived: Duration) -> Duration {
        if self.off.load(Ordering::Relaxed) {
            return Duration::ZERO;
        }
        let gap = arrived.as_micros() as i128 - decided_at.as_micros() as i128;
        let now = Instant::now();
        let mut least = self.least.lock().unwrap_or_else(PoisonError::into_inner);
        let floor = match *least {
            Some((seen, at)) if seen <= gap && now.duration_since(at) < KEPT => seen,
            _ => {
                *least = Some((gap, now));
                gap
            }
        };
        let late = u64::try_from(gap - floor).unwrap_or(0);
        Duration::from_micros(late).min(MOST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that an answer slower than the fastest seen is taken to be late by the difference, and that the
    /// fastest sets the floor whatever the two clocks' offset.
    #[test]
    fn an_answer_is_late_by_what_it_took_beyond_the_fastest() {
        let lag = Lag::default();
        let decided = Duration::from_secs(1_000);
        let offset = Duration::from_millis(7_000);
        assert_eq!(
            lag.of(decided, decided + offset + Duration::from_micros(300)),
            Duration::ZERO
        );
        let slow = lag.of(decided, decided + offset + Duration::from_micros(2_300));
        assert_eq!(slow, Duration::from_millis(2));
        assert_eq!(
            lag.of(decided, decided + offset + Duration::from_micros(100)),
            Duration::ZERO
        );
        let slow = lag.of(decided, decided + offset + Duration::from_micros(2_300));
        assert_eq!(slow, Duration::from_micros(2_200));
        assert_eq!(
            lag.of(decided, decided + offset + Duration::from_secs(5)),
            MOST
        );
    }
}
