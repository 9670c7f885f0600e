//! What the pipeline tells of each decision, through one hook ([`Observers`]): the metrics, the operators' watch
//! (`crate::watch`), a tracing event, and,
//! where a service edge records them (the tower layer's requests), the quotas a response advertises.
//!
//! Counters and a latency histogram go through the `metrics` facade (feature `metrics`), labelled by limit
//! (prefix), never by user key; without the feature everything here is empty and compiles away.
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `limiter_decisions_total` | counter | `prefix`, `outcome` = `allowed`, `limited` or `degraded`, and `reason`: the decision's [`Verdict`](crate::Verdict) (`admitted`, `limited`, `blocked`, `reserved`, `unavailable`, `degraded_open`, `degraded_local`, `shadow`, `skipped`, `switched_off`, `misconfigured`: a refusal, counted as `limited`) |
//! | `limiter_limits_reloads_total` | counter | `outcome` = `applied`, `unchanged` or `refused`: each limits file offered to this node (read from its file, or pushed), and what became of it |
//! | `limiter_plan_decisions_total` | counter | `prefix`, `plan` (the [plan](crate::Plan) a call was on; calls on none are not counted here) and `reason` |
//! | `limiter_shadow_rejections_total` | counter | `prefix`: calls a shadow rule would have rejected |
//! | `limiter_redis_duration_seconds` | histogram | `prefix`: one Redis decision, answered or not |
//! | `limiter_evicted_keys_total` | counter | none: in-memory keys forgotten before their expiry, to stay within `max_keys` |
//! | `limiter_keys_started_afresh_total` | counter | `prefix`: keys found holding another algorithm's state (their limit's algorithm changed), started afresh |
//! | `limiter_redis_batch_calls` | histogram | none: the calls one script call decided (more than one when calls were batched) |
//! | `limiter_lease_units_taken_total` | counter | none: units this node took from Redis in leases |
//! | `limiter_lease_units` | gauge | none: units this node's leases hold, unspent (every 100 ms) |
//! | `limiter_reconciled_total` | counter | none: calls Redis admitted after their caller's deadline, whose caller was refused meanwhile: given back |
//! | `limiter_unidentified_requests_total` | counter | `policy` (the layer's first rule's), `outcome` = `peer`, `fallback`, `passed` or `no_peer` (no peer address either: one shared key): requests a tower layer's key found nothing in, and what became of them |
//!
//! Each limiter registers a prefix's handles once, on its first decision, and keeps them: recording a decision
//! then allocates nothing. (Install the `metrics` recorder before the first decision.)

use std::sync::{Arc, OnceLock};

use crate::call::{Call, Preset, Ruling};
use crate::rule::Told;
use crate::watch::Watch;
use crate::{Decision, Priority, Verdict};

/// What a service edge records of the decisions made while it serves a request (the quotas its response
/// advertises), installed by the edge itself: the pipeline knows no edge.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Edge {
    /// A call was decided.
    pub(crate) decided: fn(&Call<'_>, &Ruling),
    /// Units of an admitted call's charges were given back, limit by limit.
    pub(crate) given_back: fn(&Call<'_>, &[u64]),
    /// Whether a call decided in the request this task serves was decided without Redis (degraded).
    pub(crate) degraded_here: fn() -> bool,
}

/// The edge installed, if any.
static EDGE: OnceLock<Edge> = OnceLock::new();

/// Returns whether a call decided earlier in the request this task serves was decided without Redis (degraded); false
/// outside a request's scope. One read of an atomic without an edge installed.
#[inline]
pub(crate) fn degraded_in_request() -> bool {
    EDGE.get().is_some_and(|edge| (edge.degraded_here)())
}

/// Installs `edge`: the first one stays.
#[cfg(feature = "tower")]
pub(crate) fn install_edge(edge: Edge) {
    let _ = EDGE.set(edge);
}

/// Who hears of every decision of one limiter: its metrics, and the edge, if one is installed.
#[derive(Debug, Default)]
pub(crate) struct Observers {
    metrics: Metrics,
    /// What the operators see; shared with the task that reports it through Redis.
    pub(crate) watch: Arc<Watch>,
    /// The misconfigured limits told of in the log, by prefix.
    misconfigured: Told,
}

impl Observers {
    /// Records that `call` was decided `decided`; `counted`: limiting was on (switched off, no limit applies, and
    /// nothing is advertised).
    #[inline]
    pub(crate) fn decided(&self, call: &Call<'_>, decided: &Ruling, counted: bool) {
        for (limit, answer) in call.limits().iter().zip(decided.limits.iter()) {
            let decision = &answer.decision;
            self.metrics.decision(limit.key.parts().prefix, decision);
            if let Some(priority) = limit.priority {
                self.metrics
                    .prioritized(limit.key.parts().prefix, priority, decision);
            }
            if limit.plan.is_some() {
                let applied = limit.applied();
                self.metrics
                    .on_plan(limit.key.parts().prefix, applied.plan_label(), decision);
            }
            if decision.verdict == Verdict::Misconfigured {
                if let Some(Preset::Misconfigured(fault)) = limit.preset {
                    let prefix = limit.key.parts().prefix;
                    let policy = limit.rule.policy_name();
                    self.misconfigured.tell(prefix, &policy, fault);
                }
            }
            tracing::trace!(
                key = %limit.key.parts(),
                allowed = decision.allowed,
                reason = decision.verdict.as_str(),
                priority = limit.priority.map(Priority::as_str),
                "rate limiter: decided"
            );
        }
        self.watch.decided(call, decided);
        if counted {
            if let Some(edge) = EDGE.get() {
                (edge.decided)(call, decided);
            }
        }
    }

    /// Records that `units[i]` of what limit `i` of an admitted `call` charged were given back.
    pub(crate) fn given_back(&self, call: &Call<'_>, units: &[u64]) {
        if let Some(edge) = EDGE.get() {
            (edge.given_back)(call, units);
        }
    }

    /// Records a call a shadow limit would have rejected (under `prefix`).
    pub(crate) fn shadow_rejection(&self, prefix: &str) {
        self.metrics.shadow_rejection(prefix);
    }

    /// Counts an upstream's refusal (429, 503) of a call that waited its turn under `prefix`.
    pub(crate) fn upstream_refusal(&self, prefix: &str, status: u16) {
        self.metrics.upstream_refusal(prefix, status);
    }

    /// Counts a turn under `prefix` whose call woke later than its slot's margin: it asked again.
    pub(crate) fn late_turn(&self, prefix: &str) {
        tracing::debug!(
            prefix,
            "rate limiter: a turn woke past its slot's margin and asks again"
        );
        self.metrics.late_turn(prefix);
    }

    /// Records how long one Redis round trip of `call` took, from `timer`.
    pub(crate) fn redis(&self, call: &Call<'_>, timer: Timer) {
        self.metrics.redis(
            call.limits().iter().map(|limit| limit.key.parts().prefix),
            timer,
        );
    }
}

/// The registered metrics of every prefix seen.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    #[cfg(feature = "metrics")]
    by_prefix: std::sync::RwLock<std::collections::HashMap<Box<str>, Handles>>,
}

#[cfg(feature = "metrics")]
#[derive(Debug)]
struct Handles {
    /// By verdict, in [`Verdict::ALL`](crate::Verdict::ALL)'s order.
    decisions: [metrics::Counter; crate::Verdict::ALL.len()],
    shadow: metrics::Counter,
    redis: metrics::Histogram,
}

#[cfg(feature = "metrics")]
impl Handles {
    fn register(prefix: &str) -> Handles {
        let counter = |verdict: crate::Verdict| {
            // `outcome`, as before verdicts: the limit's answer (a shadow limit's refusal too), or degraded.
            let outcome = match verdict {
                crate::Verdict::Unavailable
                | crate::Verdict::DegradedOpen
                | crate::Verdict::DegradedLocal => "degraded",
                crate::Verdict::Limited
                | crate::Verdict::Blocked
                | crate::Verdict::Reserved
                | crate::Verdict::Shadow
                | crate::Verdict::Misconfigured => "limited",
                _ => "allowed",
            };
            metrics::counter!("limiter_decisions_total", "prefix" => prefix.to_owned(), "outcome" => outcome, "reason" => verdict.as_str())
        };
        Handles {
            decisions: crate::Verdict::ALL.map(counter),
            shadow: metrics::counter!("limiter_shadow_rejections_total", "prefix" => prefix.to_owned()),
            redis: metrics::histogram!("limiter_redis_duration_seconds", "prefix" => prefix.to_owned()),
        }
    }
}

impl Metrics {
    #[cfg(feature = "metrics")]
    fn with(&self, prefix: &str, record: impl FnOnce(&Handles)) {
        use std::sync::PoisonError;
        if let Some(handles) = self
            .by_prefix
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(prefix)
        {
            return record(handles);
        }
        let mut by_prefix = self
            .by_prefix
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        record(
            by_prefix
                .entry(prefix.into())
                .or_insert_with(|| Handles::register(prefix)),
        );
    }

    /// Counts one decision.
    #[inline]
    pub(crate) fn decision(&self, prefix: &str, decision: &Decision) {
        #[cfg(feature = "metrics")]
        self.with(prefix, |h| {
            h.decisions[decision.verdict as usize].increment(1)
        });
        #[cfg(not(feature = "metrics"))]
        let _ = (prefix, decision);
    }

    /// Counts one decision of a limit that keeps shares for the higher priorities, by the call's priority:
    /// `limiter_priority_decisions_total{prefix, priority, reason}` (a limit without reserves counts none).
    #[inline]
    pub(crate) fn prioritized(&self, prefix: &str, priority: Priority, decision: &Decision) {
        #[cfg(feature = "metrics")]
        metrics::counter!(
            "limiter_priority_decisions_total",
            "prefix" => prefix.to_owned(),
            "priority" => priority.as_str(),
            "reason" => decision.verdict.as_str()
        )
        .increment(1);
        #[cfg(not(feature = "metrics"))]
        let _ = (prefix, priority, decision);
    }

    /// Counts one decision of a call on one of its policy's plans, by the plan:
    /// `limiter_plan_decisions_total{prefix, plan, reason}` (a call on no plan counts none).
    #[cold]
    pub(crate) fn on_plan(&self, prefix: &str, plan: &str, decision: &Decision) {
        #[cfg(feature = "metrics")]
        metrics::counter!(
            "limiter_plan_decisions_total",
            "prefix" => prefix.to_owned(),
            "plan" => plan.to_owned(),
            "reason" => decision.verdict.as_str()
        )
        .increment(1);
        #[cfg(not(feature = "metrics"))]
        let _ = (prefix, plan, decision);
    }

    /// Counts a call a shadow rule would have rejected.
    #[inline]
    pub(crate) fn shadow_rejection(&self, prefix: &str) {
        #[cfg(feature = "metrics")]
        self.with(prefix, |h| h.shadow.increment(1));
        #[cfg(not(feature = "metrics"))]
        let _ = prefix;
    }

    /// Counts an upstream's refusal (429, 503) of a call that waited its turn under `prefix`:
    /// `limiter_upstream_refusals_total{prefix, status}`.
    pub(crate) fn upstream_refusal(&self, prefix: &str, status: u16) {
        #[cfg(feature = "metrics")]
        metrics::counter!(
            "limiter_upstream_refusals_total",
            "prefix" => prefix.to_owned(),
            "status" => status.to_string()
        )
        .increment(1);
        #[cfg(not(feature = "metrics"))]
        let _ = (prefix, status);
    }

    /// Counts a turn under `prefix` that woke past its slot's margin and asked again:
    /// `limiter_late_turns_total{prefix}`.
    pub(crate) fn late_turn(&self, prefix: &str) {
        #[cfg(feature = "metrics")]
        metrics::counter!("limiter_late_turns_total", "prefix" => prefix.to_owned()).increment(1);
        #[cfg(not(feature = "metrics"))]
        let _ = prefix;
    }

    /// Records how long one Redis decision took, from `timer`, under each of its limits' prefixes.
    #[inline]
    pub(crate) fn redis<'a>(&self, prefixes: impl Iterator<Item = &'a str>, timer: Timer) {
        #[cfg(feature = "metrics")]
        {
            let seconds = timer.started.elapsed().as_secs_f64();
            for prefix in prefixes {
                self.with(prefix, |h| h.redis.record(seconds));
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (prefixes, timer);
    }
}

/// Counts in-memory keys forgotten before their expiry (rare: a shard at its bound, under a flood of keys).
#[inline]
pub(crate) fn evicted(keys: u64) {
    #[cfg(feature = "metrics")]
    metrics::counter!("limiter_evicted_keys_total").increment(keys);
    #[cfg(not(feature = "metrics"))]
    let _ = keys;
}

/// Tells that a key under `prefix` held another algorithm's state, which its store dropped: the key started
/// afresh under `algorithm` (its limit's algorithm changed, or another node still counts it with another).
/// Told once per prefix in the log, at warn level; each one counted in `limiter_keys_started_afresh_total`.
#[cold]
pub(crate) fn started_afresh(prefix: &str, algorithm: crate::Algorithm) {
    use std::collections::HashSet;
    use std::sync::{Mutex, PoisonError};
    /// The prefixes told of, at most [`MOST_TOLD`].
    static TOLD: Mutex<Option<HashSet<Box<str>>>> = Mutex::new(None);
    const MOST_TOLD: usize = 1_024;
    #[cfg(feature = "metrics")]
    metrics::counter!("limiter_keys_started_afresh_total", "prefix" => prefix.to_owned())
        .increment(1);
    let first = {
        let mut told = TOLD.lock().unwrap_or_else(PoisonError::into_inner);
        let told = told.get_or_insert_with(HashSet::new);
        told.len() < MOST_TOLD && told.insert(prefix.into())
    };
    if first {
        tracing::warn!(
            prefix,
            %algorithm,
            "rate limiter: a key held another algorithm's count (its limit's algorithm changed, or another \
             node counts it with another); it starts afresh under {algorithm}, counting nothing of the old \
             (told once per prefix)"
        );
    }
}

/// Records how many calls one script call carried (1, unless calls were batched).
#[inline]
pub(crate) fn batch(calls: usize) {
    #[cfg(feature = "metrics")]
    metrics::histogram!("limiter_redis_batch_calls").record(calls as f64);
    #[cfg(not(feature = "metrics"))]
    let _ = calls;
}

/// Counts a call Redis admitted past its caller's deadline whose caller was refused meanwhile: given back.
#[inline]
pub(crate) fn reconciled() {
    #[cfg(feature = "metrics")]
    metrics::counter!("limiter_reconciled_total").increment(1);
}

/// Counts the units of a lease taken.
#[inline]
pub(crate) fn lease_taken(units: u64) {
    #[cfg(feature = "metrics")]
    metrics::counter!("limiter_lease_units_taken_total").increment(units);
    #[cfg(not(feature = "metrics"))]
    let _ = units;
}

/// Reports the units this node's leases hold, unspent.
pub(crate) fn lease_units(units: u64) {
    #[cfg(feature = "metrics")]
    metrics::gauge!("limiter_lease_units").set(units as f64);
    #[cfg(not(feature = "metrics"))]
    let _ = units;
}

/// Counts a request a tower layer's key found nothing in, and what became of it (`outcome`).
#[cfg(feature = "tower")]
pub(crate) fn unidentified(policy: &str, outcome: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("limiter_unidentified_requests_total", "policy" => policy.to_owned(), "outcome" => outcome)
        .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = (policy, outcome);
}

/// Counts a limits file offered to this node (read from its file, pushed through Redis or the admin API), and
/// what became of it: `outcome` = `applied`, `unchanged` (the version in force) or `refused` (the last good
/// limits stay).
pub(crate) fn limits_offered(outcome: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("limiter_limits_reloads_total", "outcome" => outcome).increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = outcome;
}

/// Says when something worth a warning, but not one per request, is due to be told again: at most once a
/// minute.
#[derive(Debug, Default)]
pub(crate) struct Notice {
    /// When it was last told, in ms since the first notice (`EPOCH`, below), plus one (0: never).
    last: std::sync::atomic::AtomicU64,
}

impl Notice {
    const EVERY_MS: u64 = 60_000;

    /// Decides whether to tell it now; if so, the next minute is quiet.
    pub(crate) fn due(&self) -> bool {
        use std::sync::atomic::Ordering;
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let now = EPOCH
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_millis() as u64
            + 1;
        let last = self.last.load(Ordering::Relaxed);
        (last == 0 || now >= last + Self::EVERY_MS)
            && self
                .last
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

/// Times one Redis decision (nothing without the feature).
#[derive(Clone, Copy)]
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
}
