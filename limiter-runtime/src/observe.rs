//! Counters and a latency histogram through the `metrics` facade (feature `metrics`), labelled by limit
//! (prefix), never by user key; without the feature every function here is empty and compiles away.
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `limiter_decisions_total` | counter | `prefix`, `outcome` = `allowed`, `limited` or `degraded` |
//! | `limiter_shadow_rejections_total` | counter | `prefix`: calls a shadow rule would have rejected |
//! | `limiter_redis_duration_seconds` | histogram | `prefix`: one Redis decision, answered or not |

use crate::Decision;

/// Counts one decision.
#[inline]
pub(crate) fn decision(prefix: &str, decision: &Decision) {
    #[cfg(feature = "metrics")]
    {
        let outcome = match (decision.degraded, decision.allowed) {
            (true, _) => "degraded",
            (false, true) => "allowed",
            (false, false) => "limited",
        };
        metrics::counter!("limiter_decisions_total", "prefix" => prefix.to_owned(), "outcome" => outcome)
            .increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (prefix, decision);
}

/// Counts a call a shadow rule would have rejected.
#[inline]
pub(crate) fn shadow_rejection(prefix: &str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("limiter_shadow_rejections_total", "prefix" => prefix.to_owned())
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = prefix;
}

/// Times one Redis decision.
pub(crate) struct Timer {
    #[cfg(feature = "metrics")]
    started: std::time::Instant,
}

impl Timer {
    #[inline]
    pub(crate) fn start() -> Timer {
        Timer {
            #[cfg(feature = "metrics")]
            started: std::time::Instant::now(),
        }
    }

    #[inline]
    pub(crate) fn redis(self, prefix: &str) {
        #[cfg(feature = "metrics")]
        metrics::histogram!("limiter_redis_duration_seconds", "prefix" => prefix.to_owned())
            .record(self.started.elapsed().as_secs_f64());
        #[cfg(not(feature = "metrics"))]
        let _ = (self, prefix);
    }
}
