//! A policy's plans: named sets of values for its limits (free, pro, enterprise), one of which a call names,
//! as it names its key.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::priority::Reserves;
use crate::{Penalty, Priority};

/// A named set of values for a policy's limits: what a tenant's plan (free, pro, enterprise) changes of them.
/// A rule holds its plans ([`Rule::plan`](crate::Rule::plan)); a call names the one it is on
/// ([`Request::plan`](crate::Request::plan), `plan = tenant.plan` on the attribute), and each value the plan
/// sets replaces the rule's for that call; what it leaves out is the rule's. A key's own
/// [override](crate::Override) still wins over its plan.
///
/// The keys of every plan of a policy are counted under its prefix, so a tenant that moves from one plan to
/// another keeps what it has spent (see `guide::limits` for what carries over).
///
/// ```
/// use limiter_runtime::{Limiter, Plan, Priority, Rule};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let search = Rule::new()
///     .prefix("search:")
///     .max(100)
///     .window(Duration::from_secs(60))
///     .plan("pro", Plan::new().max(1_000))
///     .plan("enterprise", Plan::new().max(10_000).reserve(Priority::Critical, 20));
/// let limiter = Limiter::in_memory();
/// let decision = limiter.check(&search, "acme").plan("pro").await;
/// assert_eq!(decision.limit, 1_000);
/// // A call that names no plan, or one the rule does not have, is limited by the rule's own values.
/// assert_eq!(limiter.check(&search, "initech").await.limit, 100);
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Plan {
    pub(crate) max: Option<u64>,
    pub(crate) window: Option<Duration>,
    pub(crate) burst: Option<u64>,
    pub(crate) reserves: Option<Reserves>,
    pub(crate) penalty: Option<Penalty>,
    pub(crate) in_flight: Option<u64>,
}

impl Plan {
    /// Creates a plan that changes nothing of its policy's values.
    pub const fn new() -> Plan {
        Plan {
            max: None,
            window: None,
            burst: None,
            reserves: None,
            penalty: None,
            in_flight: None,
        }
    }

    /// Sets the admissions per window ([`Rule::max`](crate::Rule::max)).
    pub const fn max(mut self, max: u64) -> Plan {
        self.max = Some(max);
        self
    }

    /// Sets the window ([`Rule::window`](crate::Rule::window)).
    pub const fn window(mut self, window: Duration) -> Plan {
        self.window = Some(window);
        self
    }

    /// Sets a token bucket's capacity ([`Rule::burst`](crate::Rule::burst)).
    pub const fn burst(mut self, burst: u64) -> Plan {
        self.burst = Some(burst);
        self
    }

    /// Keeps `percent` of the limit for calls of `priority` and above ([`Rule::reserve`](crate::Rule::reserve)):
    /// a plan's reserves replace the policy's whole.
    pub const fn reserve(mut self, priority: Priority, percent: u8) -> Plan {
        let reserves = match self.reserves {
            Some(reserves) => reserves,
            None => Reserves::NONE,
        };
        self.reserves = Some(reserves.with(priority, percent));
        self
    }

    /// Sets the penalty of a refusal ([`Rule::penalty`](crate::Rule::penalty)).
    pub const fn penalty(mut self, penalty: Penalty) -> Plan {
        self.penalty = Some(penalty);
        self
    }

    /// Sets the calls at once of the policy's limit of calls in flight ([`Rule::in_flight`](crate::Rule::in_flight),
    /// or `in_flight = ..` beside an attribute's rate); a rate's `max` is [`max`](Plan::max)'s.
    pub const fn in_flight(mut self, permits: u64) -> Plan {
        self.in_flight = Some(permits);
        self
    }
}

/// A rule's plans, by name: few (a handful per policy), so found by a scan; shared, so that a rule clones
/// without copying them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plans(Arc<[(Arc<str>, Plan)]>);

impl Plans {
    /// Returns these plans with `plan` named `name`, replacing one of the same name.
    pub(crate) fn with(plans: Option<&Plans>, name: &str, plan: Plan) -> Plans {
        let mut all: Vec<(Arc<str>, Plan)> = plans.map(|p| p.0.to_vec()).unwrap_or_default();
        match all.iter_mut().find(|(n, _)| &**n == name) {
            Some((_, p)) => *p = plan,
            None => all.push((Arc::from(name), plan)),
        }
        Plans(all.into())
    }

    /// Returns the index of the plan named `name`, if there is one.
    #[inline]
    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.0.iter().position(|(n, _)| &**n == name)
    }

    /// Returns the plan at `index` ([`find`](Plans::find)'s) and its name.
    #[inline]
    pub(crate) fn get(&self, index: usize) -> Option<(&Arc<str>, &Plan)> {
        self.0.get(index).map(|(name, plan)| (name, plan))
    }

    /// Returns every plan, in the order they were set.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Plan)> {
        self.0.iter().map(|(name, plan)| (&**name, plan))
    }
}

/// The most (prefix, plan) pairs told of as unknown.
const MOST_TOLD: usize = 1_024;

/// Tells the log, once per prefix and plan, that a call named a plan its rule does not have: it was limited
/// by the rule's own values.
#[cold]
pub(crate) fn unknown_plan(prefix: &str, plan: &str) {
    static TOLD: Mutex<Vec<(Box<str>, Box<str>)>> = Mutex::new(Vec::new());
    {
        let mut told = TOLD.lock().unwrap_or_else(PoisonError::into_inner);
        if told.len() >= MOST_TOLD || told.iter().any(|(p, n)| **p == *prefix && **n == *plan) {
            return;
        }
        told.push((prefix.into(), plan.into()));
    }
    tracing::warn!(
        prefix,
        plan,
        "rate limiter: a call named the plan {plan:?}, which its policy does not have; it is limited by \
         the policy's own values (told once per prefix and plan)"
    );
}
