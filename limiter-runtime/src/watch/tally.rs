//! What one node has seen of one policy: its decisions and refusals, counted, and the keys most refused and
//! most decided over the last minute, each in a bounded [`TopKeys`] summary.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::report::PolicyReport;
use super::top::TopKeys;
use crate::Rule;

/// Keys each summary holds at most.
pub(crate) const TRACKED: usize = 1_000;

/// One decision in this many puts its key in the summary of decided keys (weighing as many): the heavy
/// hitters of the decisions, found at a sixteenth of the cost of counting each.
pub(crate) const SAMPLED: u64 = 16;

/// A summary covers half of the last minute: the current half and the last one answer for the minute.
const HALF: Duration = Duration::from_secs(30);

/// How many keys are remembered between two readings of the clock (a half may take in that many more).
const READ_CLOCK_EVERY: u32 = 32;

/// The span of the counts' samples: the last minute.
const MINUTE: Duration = Duration::from_secs(60);

/// A decision, as a tally counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Counted {
    /// The call went ahead.
    Admitted,
    /// Refused, the limit reached (by Redis, or by this node's share of it): the key is among the refused.
    Limited,
    /// Refused because Redis could not decide and the rule fails closed, or because the limit is
    /// misconfigured: a refusal, but its key was not the cause, so it is not among the refused keys (an
    /// outage, or a limit of zero, would make every busy key one).
    Unavailable,
}

/// One policy, as this node has seen it.
#[derive(Debug)]
pub(crate) struct Tally {
    /// The policy's name ([`RateLimited::policy`](crate::RateLimited::policy)).
    pub(crate) policy: String,
    pub(crate) prefix: String,
    /// Its rule as first seen, resolved: what an operator's `inspect` of a key under it reads, on any node
    /// (it goes in the node's report).
    pub(crate) rule: Rule,
    decided: AtomicU64,
    refused: AtomicU64,
    recent: Mutex<Recent>,
}

/// The last minute of a policy.
#[derive(Debug)]
struct Recent {
    /// This half-minute's refused keys and the last's.
    refused: [TopKeys; 2],
    /// This half-minute's decided keys (sampled) and the last's.
    decided: [TopKeys; 2],
    current: usize,
    /// When the current half began.
    began: Instant,
    /// Keys remembered since the clock was last read: it is read every [`READ_CLOCK_EVERY`] (and at every
    /// report), not at each.
    unclocked: u32,
    /// The counts (decided, refused) as they were, oldest first, over the last minute.
    samples: VecDeque<(Instant, u64, u64)>,
}

impl Recent {
    /// Begins a new half when the current one is over (the one before it forgotten).
    fn turn(&mut self, now: Instant) {
        if now.duration_since(self.began) < HALF {
            return;
        }
        let next = 1 - self.current;
        // A half that passed with nothing: both are over.
        if now.duration_since(self.began) >= 2 * HALF {
            self.refused[self.current].clear();
            self.decided[self.current].clear();
        }
        self.refused[next].clear();
        self.decided[next].clear();
        self.current = next;
        self.began = now;
    }
}

impl Tally {
    /// Starts tallying a policy first seen now, under `rule`.
    pub(crate) fn new(policy: String, prefix: String, rule: Rule) -> Tally {
        let now = Instant::now();
        Tally {
            policy,
            prefix,
            rule,
            decided: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            recent: Mutex::new(Recent {
                refused: [TopKeys::new(TRACKED), TopKeys::new(TRACKED)],
                decided: [TopKeys::new(TRACKED), TopKeys::new(TRACKED)],
                current: 0,
                began: now,
                unclocked: 0,
                samples: VecDeque::from([(now, 0, 0)]),
            }),
        }
    }

    /// Counts a decision on `key`.
    #[inline]
    pub(crate) fn count(&self, key: &str, counted: Counted) {
        let n = self.decided.fetch_add(1, Ordering::Relaxed);
        let sampled = n.is_multiple_of(SAMPLED);
        if counted != Counted::Admitted {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        let limited = counted == Counted::Limited;
        if limited || sampled {
            self.remember(key, limited, sampled);
        }
    }

    /// Puts `key` in the summaries it belongs in.
    fn remember(&self, key: &str, refused: bool, sampled: bool) {
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.unclocked += 1;
        if recent.unclocked >= READ_CLOCK_EVERY {
            recent.unclocked = 0;
            recent.turn(Instant::now());
        }
        let current = recent.current;
        if refused {
            recent.refused[current].add(key, 1);
        }
        if sampled {
            recent.decided[current].add(key, SAMPLED);
        }
    }

    /// Reports the policy now, with its `refused` most refused keys and its `decided` most decided.
    pub(crate) fn report(&self, refused_keys: usize, decided_keys: usize) -> PolicyReport {
        let now = Instant::now();
        let (decided, refused) = (
            self.decided.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        );
        let mut recent = self.recent.lock().unwrap_or_else(PoisonError::into_inner);
        recent.turn(now);
        let samples = &mut recent.samples;
        if samples
            .back()
            .is_none_or(|&(at, ..)| now.duration_since(at) >= Duration::from_millis(200))
        {
            samples.push_back((now, decided, refused));
        }
        // Keep one sample from a minute ago or more: the minute's counts start there.
        while samples.len() > 2 && now.duration_since(samples[1].0) >= MINUTE {
            samples.pop_front();
        }
        let (first_at, first_decided, first_refused) = samples[0];
        // Rates over the last second or so: from the newest sample a second old, else the oldest.
        let (since, was_decided, was_refused) = samples
            .iter()
            .rev()
            .find(|&&(at, ..)| now.duration_since(at) >= Duration::from_secs(1))
            .copied()
            .unwrap_or((first_at, first_decided, first_refused));
        let seconds = now.duration_since(since).as_secs_f64();
        let rate = |now: u64, then: u64| match seconds > 0.0 {
            true => (now - then) as f64 / seconds,
            false => 0.0,
        };
        let keys = |summaries: &[TopKeys; 2], n: usize| {
            let mut both = summaries[0].clone();
            both.merge(&summaries[1]);
            let (top, rest) = both.top_and_rest(n);
            let top = top
                .into_iter()
                .map(|(key, count)| (key.to_owned(), count))
                .collect();
            (top, rest)
        };
        let (refused_keys, refused_unlisted) = keys(&recent.refused, refused_keys);
        PolicyReport {
            policy: self.policy.clone(),
            prefix: self.prefix.clone(),
            decided_per_s: rate(decided, was_decided),
            refused_per_s: rate(refused, was_refused),
            decided: decided - first_decided,
            refused: refused - first_refused,
            refused_keys,
            refused_unlisted,
            decided_keys: keys(&recent.decided, decided_keys).0,
            rule: Some(self.rule.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that a call refused because Redis could not decide is a refusal of the policy, not of its key.
    #[test]
    fn a_refusal_for_want_of_redis_is_counted_but_not_against_its_key() {
        let tally = Tally::new("p".into(), "p:".into(), Rule::new());
        tally.count("hot", Counted::Limited);
        tally.count("down", Counted::Unavailable);
        tally.count("calm", Counted::Admitted);
        let report = tally.report(10, 10);
        assert_eq!((report.decided, report.refused), (3, 2));
        assert_eq!(report.refused_keys, [("hot".to_owned(), 1)]);
    }
}
