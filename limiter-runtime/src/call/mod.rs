//! One call, built once: each of its limits resolved (its rule, its store key, what it asks of the store), by
//! the one constructor every entry point uses (the attribute, [`Limiter`](crate::Limiter), [`Limit`](crate::Limit)
//! and the tower layer). It travels as itself to the store and back; what was decided ([`Ruling`]) and what is
//! given back refer to it, limit by limit.

mod one_or_many;
mod ruling;

pub(crate) use self::one_or_many::OneOrMany;
pub(crate) use self::ruling::{Charged, LimitRuling, Ruling};

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use crate::algorithm::{Algorithm, Outcome, Terms};
use crate::calendar::Zone;
use crate::clock::{as_micros, Clock};
use crate::key::StoreKey;
use crate::overrides::Overrides;
use crate::rule::{Fault, Wait};
use crate::{Decision, OnError, Penalty, Priority, Rule};

/// How long a permit in flight lives in Redis unless renewed, by default.
pub(crate) const IN_FLIGHT_TTL: Duration = Duration::from_secs(30);

/// A rule a call holds: borrowed from where it lives (an annotated function's resolved rules, a
/// [`Limit`](crate::Limit), a layer, the caller's frame), or shared, for a call that outlives its caller (a
/// [`Estimate`](crate::Estimate), an admission held while a body runs).
#[derive(Debug, Clone)]
pub(crate) enum RuleRef<'r> {
    Borrowed(&'r Rule),
    Shared(Arc<Rule>),
}

impl Deref for RuleRef<'_> {
    type Target = Rule;

    #[inline]
    fn deref(&self) -> &Rule {
        match self {
            RuleRef::Borrowed(rule) => rule,
            RuleRef::Shared(rule) => rule,
        }
    }
}

/// What one limit of a call is asked, before the call is built: its rule (resolved against the limiter's
/// defaults), its store key, the call's weight, and whether the call skips it (`skip_if`).
#[derive(Debug, Clone)]
pub(crate) struct Ask<'r> {
    pub(crate) rule: RuleRef<'r>,
    pub(crate) key: StoreKey,
    pub(crate) cost: u64,
    pub(crate) skip: bool,
    /// A calendar limit's zone and billing day for this call (`tz = <expr>`, `anchor = <expr>`), over its
    /// rule's.
    pub(crate) zone: Option<Zone>,
    pub(crate) anchor: Option<u8>,
    /// How much the call matters: what it must leave free of a limit with reserves.
    pub(crate) priority: Priority,
    /// The plan of the rule's that the call named, by its place among the rule's plans.
    pub(crate) plan: Option<usize>,
}

impl<'r> Ask<'r> {
    /// Creates the ask of a call of the plain API, the layer or an operator: `rule`'s limit for `key`, weighing
    /// `cost`, of `priority`, skipping nothing, in the rule's own zone and billing day.
    #[inline(always)]
    pub(crate) fn of(rule: RuleRef<'r>, key: StoreKey, cost: u64, priority: Priority) -> Ask<'r> {
        Ask {
            rule,
            key,
            cost,
            skip: false,
            zone: None,
            anchor: None,
            priority,
            plan: None,
        }
    }

    /// Returns this ask on the plan named `name` of its rule's, if the call named one: one the rule lacks
    /// leaves the call on the rule's own values, told once in the log.
    #[inline]
    pub(crate) fn on_plan(mut self, name: Option<&str>) -> Self {
        if let Some(name) = name {
            self.plan = self.rule.plans.as_ref().and_then(|plans| plans.find(name));
            if self.plan.is_none() {
                crate::rule::unknown_plan(self.key.parts().prefix, name);
            }
        }
        self
    }
}

/// One limit of a call, resolved: its rule, store key, and what it asks of the store.
#[derive(Debug, Clone)]
pub(crate) struct CallLimit<'r> {
    pub(crate) rule: RuleRef<'r>,
    pub(crate) key: StoreKey,
    pub(crate) algorithm: Algorithm,
    /// The window, max, the call's cost, the bucket's depth: with the run-time overrides of its key.
    pub(crate) terms: Terms,
    /// Set when it is decided before any store is asked: then no store hears of it.
    pub(crate) preset: Option<Preset>,
    /// Whether its denial denies the call (a shadow limit's does not).
    pub(crate) vetoes: bool,
    /// What decides it when Redis cannot.
    pub(crate) on_error: OnError,
    /// Its rule's lease: with Redis, units this node takes at once and spends in memory.
    pub(crate) lease: Option<LeaseTerms>,
    /// Its rule's penalty: a call it refuses blocks its key (see [`crate::penalty`]).
    pub(crate) penalty: Option<crate::Penalty>,
    /// How its bucket's level carries over its terms' changes (`None`: not, a line the rate learned re-spaces).
    pub(crate) carry: Option<crate::algorithm::carry::Level>,
    /// The call's priority, when its rule keeps shares for the higher ones (else it changes nothing): for the
    /// metrics and traces.
    pub(crate) priority: Option<Priority>,
    /// The plan of its rule's the call named, by its place among the rule's plans, and whether a run-time
    /// override set any of its values (the refusal, the metrics and traces say which applied).
    pub(crate) plan: Option<usize>,
    pub(crate) overridden: bool,
}

/// A limit of a call decided before any store is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Preset {
    /// The call skips it (its `skip_if` held): admitted, counted nowhere.
    Skipped,
    /// It admits nothing (a limit of zero, see [`Fault`]): the server's mistake. A call it vetoes is refused
    /// as misconfigured, its other limits not asked; a shadow one only reports it.
    Misconfigured(Fault),
}

/// A rule's lease: how many units a node takes from Redis at once, and how long it may spend them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LeaseTerms {
    pub(crate) units: u64,
    pub(crate) ttl: Duration,
}

/// One call: its limits, each resolved, in the order written. Decided as one: admitted when every limit that
/// vetoes admits it, and then charged to each; else charged to none.
#[derive(Debug, Clone)]
pub(crate) struct Call<'r> {
    limits: OneOrMany<CallLimit<'r>>,
}

impl<'r> Call<'r> {
    /// Builds the call of `asks`, with the run-time `overrides` of each key applied, and a calendar limit's periods
    /// read on `clock`: the one constructor of a call.
    #[inline]
    pub(crate) fn new(
        overrides: &Overrides,
        clock: &dyn Clock,
        asks: impl IntoIterator<Item = Ask<'r>>,
    ) -> Call<'r> {
        Call {
            limits: asks
                .into_iter()
                .map(|ask| CallLimit::new(overrides, clock, ask))
                .collect(),
        }
    }

    /// Returns its limits, in the order written.
    #[inline]
    pub(crate) fn limits(&self) -> &[CallLimit<'r>] {
        &self.limits
    }

    /// Changes each limit with `f`.
    pub(crate) fn each_limit(&mut self, f: impl FnMut(&mut CallLimit<'r>)) {
        self.limits.iter_mut().for_each(f);
    }

    /// Returns this call, holding its rules itself: a call that outlives its caller (its answer to be reconciled, a
    /// batch's shared call, an estimate).
    pub(crate) fn detached(&self) -> Call<'static> {
        self.owning(|rule| {
            RuleRef::Shared(match rule {
                RuleRef::Shared(rule) => Arc::clone(rule),
                RuleRef::Borrowed(rule) => Arc::new((*rule).clone()),
            })
        })
    }

    /// Returns this call as a store keeps it while it waits in a batch: its limits, each resolved, but not their
    /// rules, which only the pipeline reads (above the store): the call that outlives its caller costs no
    /// copy of a rule.
    pub(crate) fn for_store(&self) -> Call<'static> {
        /// What a stored call's limits name for their rule.
        static NO_RULE: Rule = Rule::new();
        self.owning(|_| RuleRef::Borrowed(&NO_RULE))
    }

    /// Returns this call, holding nothing borrowed: each limit's rule as `rule` makes it.
    #[inline]
    fn owning(&self, rule: impl Fn(&RuleRef<'r>) -> RuleRef<'static>) -> Call<'static> {
        Call {
            limits: self.limits.map(|limit| CallLimit {
                rule: rule(&limit.rule),
                key: limit.key.clone(),
                algorithm: limit.algorithm,
                terms: limit.terms,
                preset: limit.preset,
                vetoes: limit.vetoes,
                on_error: limit.on_error,
                lease: limit.lease,
                penalty: limit.penalty,
                carry: limit.carry,
                priority: limit.priority,
                plan: limit.plan,
                overridden: limit.overridden,
            }),
        }
    }

    /// Returns whether an admitted call may have a slot to wait for (a leaky bucket's): then more than its verdict
    /// follows its decision.
    #[inline]
    pub(crate) fn may_wait_for_slot(&self) -> bool {
        self.limits
            .iter()
            .any(|limit| limit.algorithm == Algorithm::LeakyBucket && limit.terms.max_wait > 0)
    }

    /// Returns whether any of its limits is one of calls in flight, whose permit an admitted call holds.
    #[inline]
    pub(crate) fn holds_permits(&self) -> bool {
        self.limits
            .iter()
            .any(|limit| limit.algorithm == Algorithm::InFlight)
    }

    /// Returns what gives back its permits in flight and nothing of its rates: one unit of each limit in flight, none
    /// of the others (the `units` of a give-back).
    pub(crate) fn permits(&self) -> Vec<u64> {
        self.limits
            .iter()
            .map(|limit| u64::from(limit.algorithm == Algorithm::InFlight))
            .collect()
    }

    /// Returns whether every limit was decided before any store was asked.
    #[inline]
    pub(crate) fn all_preset(&self) -> bool {
        self.limits.iter().all(|limit| limit.preset.is_some())
    }

    /// Returns whether a misconfigured limit vetoes the call ([`Preset::Misconfigured`], not a shadow limit):
    /// then it is refused before any store is asked, its other limits charged nothing.
    #[inline]
    pub(crate) fn misconfigured(&self) -> bool {
        self.limits
            .iter()
            .any(|limit| limit.vetoes && matches!(limit.preset, Some(Preset::Misconfigured(_))))
    }

    /// Returns whether a call that each limit admits or not (`allowed(i)`) is admitted: no limit that vetoes denied it.
    #[inline]
    pub(crate) fn admits(&self, allowed: impl Fn(usize) -> bool) -> bool {
        (0..self.limits.len()).all(|i| allowed(i) || !self.limits[i].vetoes)
    }
}

impl<'r> CallLimit<'r> {
    /// Returns what set its values beyond its rule: the call's plan, an override.
    pub(crate) fn applied(&self) -> crate::policy::Applied {
        let plans = self.rule.plans.as_ref();
        crate::policy::Applied {
            plan: self
                .plan
                .and_then(|i| plans?.get(i))
                .map(|(name, _)| name.clone()),
            overridden: self.overridden,
        }
    }

    #[inline]
    fn new(overrides: &Overrides, clock: &dyn Clock, ask: Ask<'r>) -> CallLimit<'r> {
        let rule = &*ask.rule;
        let key = ask.key.parts();
        let algorithm = rule.algorithm_value();
        // The first layer that sets a value wins: the key's override (then its pattern's, its policy's), the
        // call's plan, the rule.
        let plan = ask
            .plan
            .and_then(|i| rule.plans.as_ref()?.get(i))
            .map(|(_, plan)| plan);
        let overridden = overrides.lookup(key.prefix, key.rest);
        let (mut max, mut window, mut reserves) = match plan {
            None => (rule.max_value(), rule.window_value(), rule.reserves_value()),
            Some(plan) => (
                match algorithm {
                    Algorithm::InFlight => plan.in_flight,
                    _ => plan.max,
                }
                .unwrap_or_else(|| rule.max_value()),
                plan.window.unwrap_or_else(|| rule.window_value()),
                plan.reserves.unwrap_or_else(|| rule.reserves_value()),
            ),
        };
        if let Some(set) = overridden {
            max = set.max.unwrap_or(max);
            window = set.window.unwrap_or(window);
            reserves = set.reserves.unwrap_or(reserves);
        }
        // A permit in flight lives its time to live (the window it is counted in).
        let window = match algorithm {
            Algorithm::InFlight => rule.in_flight_ttl.unwrap_or(IN_FLIGHT_TTL),
            _ => window,
        };
        let max_wait = match rule.wait {
            None => Duration::ZERO,
            Some(Wait::Window) => window,
            Some(Wait::Up(max_wait)) => max_wait,
        };
        let mut charge = Terms {
            window: as_micros(window).max(1),
            max,
            cost: ask.cost,
            burst: plan
                .and_then(|plan| plan.burst)
                .or(rule.burst)
                .unwrap_or(max),
            max_wait: as_micros(max_wait),
            ends: [0; 3],
            kept: 0,
        };
        if algorithm == Algorithm::Calendar {
            // The periods around this node's "now", in the call's zone: the store picks the one it is in.
            let calendar = &rule.calendar;
            let zone = calendar.zone(ask.zone.as_ref());
            let ends = calendar.ends(clock.now_micros(), zone, ask.anchor);
            charge.ends = ends;
            charge.window = ends[1] - ends[0];
            charge.max_wait = 0;
        }
        // What the call must leave free: the share kept for the priorities above its own, of its limit as
        // overridden.
        let priority = (!reserves.is_none()).then_some(ask.priority);
        if priority.is_some() {
            charge.kept = reserves.kept(ask.priority, charge.capacity(algorithm));
        }
        // A limit of zero is told from the terms as built (an override of `max` is never 0, but may set one
        // where the rule has none); a call that skips the limit never asks it.
        let preset = if ask.skip {
            Some(Preset::Skipped)
        } else {
            Fault::of(algorithm, &charge).map(Preset::Misconfigured)
        };
        // A lease its algorithm can take: a token bucket's, a fixed window's.
        let leases = matches!(algorithm, Algorithm::TokenBucket | Algorithm::FixedWindow);
        let ttl = rule.lease_ttl.unwrap_or(Duration::from_millis(100));
        // A penalty's calls each read the key's block in the store: none is spent from a lease. So do a
        // policy's calls while a ban is in force under it, penalty or not.
        let penalty = plan
            .and_then(|plan| plan.penalty)
            .or(rule.penalty)
            .or_else(|| {
                overrides
                    .reads_blocks(key.prefix, clock)
                    .then_some(Penalty::READS_BLOCKS)
            });
        let lease = rule
            .lease
            .filter(|&units| units > 0 && leases && !ttl.is_zero() && penalty.is_none())
            .map(|units| LeaseTerms { units, ttl });
        CallLimit {
            algorithm,
            terms: charge,
            preset,
            vetoes: !rule.shadow_value(),
            on_error: rule.on_error_value(),
            lease,
            penalty,
            carry: Some(rule.carry.unwrap_or_default().level()),
            priority,
            plan: plan.and(ask.plan),
            overridden: overridden.is_some(),
            key: ask.key,
            rule: ask.rule,
        }
    }

    /// Returns what `outcome` says of a call of this limit charged `charge`, decided at `at` µs.
    #[inline]
    pub(crate) fn decision(
        &self,
        charge: &Terms,
        outcome: Outcome,
        at: u64,
        degraded: bool,
    ) -> Decision {
        let mut decision = Decision::new(charge, outcome, at, degraded);
        decision.in_flight = self.algorithm == Algorithm::InFlight;
        if self.algorithm != Algorithm::LeakyBucket {
            // The limit as the call sees it: its own ceiling (a leaky bucket keeps slots, not admissions).
            decision.limit = charge.ceiling();
        }
        decision
    }

    /// Returns whether a call of this cost can ever be admitted (a cost above the limit, or above a token bucket's
    /// capacity, never is: no wait admits it).
    #[inline]
    pub(crate) fn can_fit(&self) -> bool {
        self.terms.can_fit(self.algorithm)
    }
}

impl Preset {
    /// Returns what it decides of a call of `charge`.
    pub(crate) fn outcome(self, charge: &Terms) -> Outcome {
        match self {
            Preset::Skipped => Outcome::admit(charge.max),
            Preset::Misconfigured(_) => Outcome::denied(0, 0, 0),
        }
    }
}

/// Calls made directly of their limits' algorithms and charges, for the stores' own tests.
#[cfg(test)]
impl Call<'static> {
    /// Builds a call of `limits`: each an algorithm, a store key (no prefix) and a charge; each vetoes.
    pub(crate) fn of<'k>(limits: impl IntoIterator<Item = (Algorithm, &'k str, Terms)>) -> Self {
        static RULE: Rule = Rule::new();
        Call {
            limits: limits
                .into_iter()
                .map(|(algorithm, key, charge)| CallLimit {
                    rule: RuleRef::Borrowed(&RULE),
                    key: StoreKey::joined("", key),
                    algorithm,
                    terms: charge,
                    preset: None,
                    vetoes: true,
                    on_error: OnError::Open,
                    lease: None,
                    penalty: None,
                    carry: Some(crate::algorithm::carry::Level::Proportional),
                    priority: None,
                    plan: None,
                    overridden: false,
                })
                .collect(),
        }
    }

    /// Returns this call, its `i`-th limit a shadow limit (it does not veto).
    pub(crate) fn shadowing(mut self, i: usize) -> Self {
        self.limits[i].vetoes = false;
        self
    }
}

/// A call, owned or borrowed, as its future holds it.
pub(crate) trait AsCall: Unpin {
    /// Returns the call.
    fn as_call(&self) -> &Call<'_>;
}

impl AsCall for Call<'_> {
    #[inline]
    fn as_call(&self) -> &Call<'_> {
        self
    }
}

impl AsCall for &Call<'_> {
    #[inline]
    fn as_call(&self) -> &Call<'_> {
        self
    }
}

#[cfg(test)]
mod tests;
