//! What the operators see: each node tallies its decisions per policy (counts, and bounded summaries of the
//! most refused and most decided keys over the last minute), reports them through Redis with its heartbeat,
//! and any node answers for the whole service by merging the reports: [`Limiter::top_limited`],
//! [`Limiter::overview`]. [`Limiter::inspect`] reads one key's state.
//!
//! [`Limiter::top_limited`]: crate::Limiter::top_limited
//! [`Limiter::overview`]: crate::Limiter::overview
//! [`Limiter::inspect`]: crate::Limiter::inspect

mod report;
mod tally;
mod terms;
mod top;
mod view;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::ArcSwap;
use std::time::Duration;

use hashbrown::HashMap;

pub(crate) use self::report::{Limits as NodeLimits, NodeReport, PolicyReport};
pub(crate) use self::tally::TRACKED;
use self::tally::{Counted, Tally};
pub(crate) use self::top::TopKeys;
pub use self::view::{Ban, Ceiling, Inspection, NodeView, Overview, PolicyView, TopKey};
use crate::call::{Call, Ruling};
use crate::{Rule, Verdict};

/// Refused keys of each policy a node reports: the heaviest of its summary.
pub(crate) const REPORTED: usize = 100;

/// Decided keys of each policy a node reports (the busiest: a view shows 10).
pub(crate) const REPORTED_DECIDED: usize = 20;

/// The policies one limiter has decided, by prefix.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// Read at every decision without a lock; replaced whole when a policy is first seen (rare).
    policies: ArcSwap<Policies>,
    /// Held while a policy is added.
    adding: Mutex<()>,
    /// Whether it holds [`MAX_POLICIES`]: a prefix seen after that is not tallied.
    full: AtomicBool,
    /// Whether it tallies nothing ([`LimiterBuilder::tally`](crate::LimiterBuilder::tally)).
    off: AtomicBool,
    /// The limits file in force here, as this node reports it.
    pub(crate) limits: Mutex<report::Limits>,
}

/// The policies (prefixes) a node tallies at most: a prefix made per tenant or per user would otherwise
/// make a tally each (each up to about 160 KB).
pub(crate) const MAX_POLICIES: usize = 128;

/// The tallies, by prefix.
type Policies = HashMap<Box<str>, Arc<Tally>, foldhash::fast::RandomState>;

impl Watch {
    /// Counts each limit's decision of `call`: not a call that skipped it or went ahead switched off.
    #[inline]
    pub(crate) fn decided(&self, call: &Call<'_>, decided: &Ruling) {
        if self.off.load(Ordering::Relaxed) {
            return;
        }
        for (limit, answer) in call.limits().iter().zip(decided.limits.iter()) {
            let decision = &answer.decision;
            let counted = match decision.verdict {
                Verdict::SwitchedOff | Verdict::Skipped => continue,
                Verdict::Limited | Verdict::Blocked | Verdict::Reserved => Counted::Limited,
                Verdict::DegradedLocal if !decision.allowed => Counted::Limited,
                // Refused all the same (`on_error = closed`, Redis down; a misconfigured limit), though its key
                // was not the cause.
                Verdict::Unavailable | Verdict::Misconfigured => Counted::Unavailable,
                _ => Counted::Admitted,
            };
            let key = limit.key.parts();
            if !self.count(key.prefix, key.rest, counted) && !self.full.load(Ordering::Relaxed) {
                if let Some(tally) = self.first(limit.rule.clone(), key.prefix) {
                    tally.count(key.rest, counted);
                }
            }
        }
    }

    /// Tallies nothing from now on (`false`), or again (`true`).
    pub(crate) fn set_tallying(&self, on: bool) {
        self.off.store(!on, Ordering::Relaxed);
    }

    /// Counts a decision on `key` in the tally of `prefix`, if it has one (whether it had).
    #[inline]
    fn count(&self, prefix: &str, key: &str, counted: Counted) -> bool {
        self.policies
            .load()
            .get(prefix)
            .map(|tally| tally.count(key, counted))
            .is_some()
    }

    /// Returns the tally of a policy seen for the first time (or by two threads at once: one tally stays); none when
    /// [`MAX_POLICIES`] are tallied already.
    #[cold]
    fn first(&self, rule: impl std::ops::Deref<Target = Rule>, prefix: &str) -> Option<Arc<Tally>> {
        let _adding = self.adding.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tally) = self.policies.load().get(prefix) {
            return Some(Arc::clone(tally));
        }
        if self.policies.load().len() >= MAX_POLICIES {
            self.full.store(true, Ordering::Relaxed);
            tracing::warn!(
                prefix,
                "rate limiter: the operators' views tally {MAX_POLICIES} policies (prefixes) already; \
                 decisions under new prefixes are not tallied (a prefix made per tenant or per user?)"
            );
            return None;
        }
        let tally = Arc::new(Tally::new(
            rule.policy_name().to_string(),
            prefix.to_owned(),
            (*rule).clone(),
        ));
        let mut policies = Policies::clone(&self.policies.load());
        policies.insert(prefix.into(), Arc::clone(&tally));
        self.policies.store(Arc::new(policies));
        Some(tally)
    }

    /// Reports each policy now, by name, with its `refused_keys` most refused keys and `decided_keys` most decided.
    pub(crate) fn reports(&self, refused_keys: usize, decided_keys: usize) -> Vec<PolicyReport> {
        let tallies: Vec<Arc<Tally>> = self.policies.load().values().cloned().collect();
        let mut reports: Vec<PolicyReport> = tallies
            .iter()
            .map(|t| t.report(refused_keys, decided_keys))
            .collect();
        reports.sort_by(|a, b| a.policy.cmp(&b.policy));
        reports
    }

    /// Returns what this node reports: its `node` id, its breaker and degraded decisions, whether limiting is
    /// `enabled`, and each policy with its [`REPORTED`] most refused keys and [`REPORTED_DECIDED`] most decided.
    pub(crate) fn node_report(
        &self,
        node: String,
        breaker_open: bool,
        degraded: u64,
        enabled: bool,
    ) -> NodeReport {
        NodeReport {
            node,
            breaker_open,
            degraded,
            enabled,
            policies: self.reports(REPORTED, REPORTED_DECIDED),
            limits: self
                .limits
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }

    /// Returns whether a policy seen here has the prefix `prefix`.
    pub(crate) fn knows_prefix(&self, prefix: &str) -> bool {
        self.policies.load().values().any(|t| t.prefix == prefix)
    }

    /// Returns the prefix of the policy seen here named `name`.
    pub(crate) fn prefix_named(&self, name: &str) -> Option<String> {
        let policies = self.policies.load();
        let named = policies.values().find(|t| t.policy == name);
        named.map(|t| t.prefix.to_string())
    }

    /// Returns the rule of the policy named (or prefixed) `policy`, as first seen here (what the admin API inspects a
    /// key under).
    pub(crate) fn rule_of(&self, policy: &str) -> Option<Rule> {
        self.policies
            .load()
            .values()
            .find(|t| t.policy == policy || t.prefix == policy)
            .map(|t| t.rule.clone())
    }
}

/// Finds the rule of the policy named (or prefixed) `policy` in the first of the nodes' `reports` that has it: a
/// policy that another node decided, for the admin API to inspect a key under.
pub(crate) fn rule_in(reports: &[(NodeReport, Duration)], policy: &str) -> Option<Rule> {
    reports
        .iter()
        .flat_map(|(report, _)| &report.policies)
        .filter(|p| p.policy == policy || p.prefix == policy)
        .find_map(|p| p.rule.clone())
}

/// Finds the prefix of the policy named `name` in the nodes' `reports`.
pub(crate) fn prefix_named_in(reports: &[(NodeReport, Duration)], name: &str) -> Option<String> {
    reports
        .iter()
        .flat_map(|(report, _)| &report.policies)
        .find(|p| p.policy == name)
        .map(|p| p.prefix.clone())
}

/// Merges the service's view from each node's report (`this` is this node's, read now; the others' as Redis holds
/// them, each with how long ago it was written).
pub(crate) fn merge(
    this: NodeReport,
    others: Vec<(NodeReport, Duration)>,
    redis: bool,
    partial: bool,
) -> (Overview, BTreeMap<String, TopKeys>) {
    let this_node = this.node.clone();
    let mut nodes = Vec::new();
    let mut policies: BTreeMap<String, (PolicyView, TopKeys, TopKeys)> = BTreeMap::new();
    let reports = std::iter::once((this, Duration::ZERO))
        .chain(others.into_iter().filter(|(r, _)| r.node != this_node));
    for (report, seen_ago) in reports {
        nodes.push(NodeView {
            this: report.node == this_node,
            node: report.node,
            redis,
            breaker_open: report.breaker_open,
            degraded: report.degraded,
            enabled: report.enabled,
            seen_ago,
            limits: Some(report.limits.version).filter(|v| !v.is_empty()),
            limits_refused: report.limits.refused,
        });
        for p in report.policies {
            let (view, refused, decided) = policies.entry(p.policy.clone()).or_insert_with(|| {
                let view = PolicyView {
                    policy: p.policy.clone(),
                    prefix: p.prefix.clone(),
                    decided_per_s: 0.0,
                    refused_per_s: 0.0,
                    decided: 0,
                    refused: 0,
                    busiest: Vec::new(),
                };
                // Every node reports at most REPORTED keys: the merge holds them all.
                (view, TopKeys::new(TRACKED * 8), TopKeys::new(TRACKED * 8))
            });
            view.decided_per_s += p.decided_per_s;
            view.refused_per_s += p.refused_per_s;
            view.decided += p.decided;
            view.refused += p.refused;
            // A key a node left out of its report counts there as the most it may have had.
            refused.merge(&TopKeys::reported(&p.refused_keys, p.refused_unlisted));
            p.decided_keys.iter().for_each(|(k, n)| decided.add(k, *n));
        }
    }
    let mut refused_by_policy = BTreeMap::new();
    let policies = policies
        .into_iter()
        .map(|(name, (mut view, refused, decided))| {
            // Sampled, a key's decisions are an estimate: never more than the policy's own.
            view.busiest = decided
                .top(10)
                .into_iter()
                .map(|(k, n)| (crate::key::unescaped(k), n.min(view.decided)))
                .collect();
            refused_by_policy.insert(name, refused);
            view
        })
        .collect();
    let overview = Overview {
        policies,
        nodes,
        partial,
    };
    (overview, refused_by_policy)
}

/// Returns the `n` most refused keys of `policy` (a name or a prefix; every policy's for ""), from the merged
/// summaries, heaviest first.
pub(crate) fn top_of(
    overview: &Overview,
    refused: &BTreeMap<String, TopKeys>,
    policy: &str,
    n: usize,
) -> Vec<TopKey> {
    let mut top: Vec<TopKey> = overview
        .policies
        .iter()
        .filter(|view| policy.is_empty() || view.policy == policy || view.prefix == policy)
        .filter_map(|view| Some((view, refused.get(&view.policy)?)))
        .flat_map(|(view, keys)| {
            keys.top(n).into_iter().map(|(key, refused)| TopKey {
                policy: view.policy.clone(),
                // Counted as the store key holds it (escaped), shown as the key expression made it.
                key: crate::key::unescaped(key),
                refused,
            })
        })
        .collect();
    top.sort_by(|a, b| b.refused.cmp(&a.refused).then_with(|| a.key.cmp(&b.key)));
    top.truncate(n);
    top
}
