//! What operators change at run time: a limit's `max` and `window` ([`Override`]), and the switch.
//!
//! Overrides live in one Redis hash (`limiter:overrides`); every change is announced on a channel of the same
//! name. Each runtime keeps the whole table in memory and keeps it in step with Redis (`sync`), so a decision
//! never pays an extra round trip to read its limit.

mod operator;
pub(crate) mod sync;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::Rule;

/// The Redis hash of overrides, and the channel changes are announced on.
pub(crate) const OVERRIDES: &str = "limiter:overrides";

/// A run-time change to a limit: every limit under `prefix`, or one key of it.
///
/// What an override sets wins over everything else (see the crate's resolution order); what it leaves out
/// is resolved as usual. A key's own override wins over its prefix's.
///
/// ```
/// use limiter_runtime::Override;
/// use std::time::Duration;
///
/// // Every employee: 10 lookups per 5 s.
/// let all = Override::prefix("rate_limit:emp:").max(10).window(Duration::from_secs(5));
/// // Employee 1001 alone: 1 per window.
/// let one = Override::key("rate_limit:emp:", "1001").max(1);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    prefix: String,
    key: Option<String>,
    /// What it sets: `max` and `window` only.
    limits: Rule,
}

impl Override {
    /// An override of every limit whose prefix is `prefix`.
    pub fn prefix(prefix: impl Into<String>) -> Override {
        Override {
            prefix: prefix.into(),
            key: None,
            limits: Rule::new(),
        }
    }

    /// An override of the limit of one key under `prefix` (the key as the attribute formats it: the parts of
    /// a key list joined with `:`).
    pub fn key(prefix: impl Into<String>, key: impl fmt::Display) -> Override {
        Override {
            // Bounded as store keys are, so that a long key's override finds its limit.
            key: Some(crate::key::StoreKey::new("", format_args!("{key}")).into_string()),
            ..Override::prefix(prefix)
        }
    }

    /// The new admissions per window.
    pub fn max(mut self, max: u64) -> Override {
        self.limits = self.limits.max(max);
        self
    }

    /// The new window.
    pub fn window(mut self, window: Duration) -> Override {
        self.limits = self.limits.window(window);
        self
    }

    /// The prefix of the limits overridden.
    pub fn target_prefix(&self) -> &str {
        &self.prefix
    }

    /// The key overridden, if only one.
    pub fn target_key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The admissions per window it sets, if it does.
    pub fn max_value(&self) -> Option<u64> {
        self.limits.max
    }

    /// The window it sets, if it does.
    pub fn window_value(&self) -> Option<Duration> {
        self.limits.window
    }

    /// The hash field of this override's target: unambiguous for any prefix and key text.
    pub(crate) fn field(&self) -> String {
        match &self.key {
            None => format!("p:{}:{}", self.prefix.len(), self.prefix),
            Some(key) => format!("k:{}:{}{}", self.prefix.len(), self.prefix, key),
        }
    }

    pub(crate) fn value(&self) -> String {
        let mut parts = Vec::new();
        if let Some(max) = self.limits.max {
            parts.push(format!("max={max}"));
        }
        if let Some(window) = self.limits.window {
            parts.push(format!("window={}", window.as_micros()));
        }
        parts.join(";")
    }

    /// Reads an override back from its field and value; `None` if either was not written by this crate.
    pub(crate) fn parse(field: &str, value: &str) -> Option<Override> {
        let (kind, rest) = field.split_once(':')?;
        let (len, rest) = rest.split_once(':')?;
        let len: usize = len.parse().ok()?;
        let prefix = rest.get(..len)?.to_owned();
        let key = match kind {
            "p" if rest.len() == len => None,
            "k" => Some(rest[len..].to_owned()),
            _ => return None,
        };
        let mut limits = Rule::new();
        for part in value.split(';').filter(|p| !p.is_empty()) {
            match part.split_once('=')? {
                ("max", n) => limits.max = Some(n.parse().ok()?),
                ("window", micros) => {
                    limits.window = Some(Duration::from_micros(micros.parse().ok()?))
                }
                _ => return None,
            }
        }
        Some(Override {
            prefix,
            key,
            limits,
        })
    }
}

/// The overrides of every prefix, as this runtime last saw them.
#[derive(Debug, Default)]
pub(crate) struct Table {
    prefixes: HashMap<String, PrefixOverrides>,
}

#[derive(Debug, Default)]
struct PrefixOverrides {
    all: Option<Rule>,
    keys: HashMap<String, Rule>,
}

impl Table {
    pub(crate) fn from_overrides(overrides: impl IntoIterator<Item = Override>) -> Table {
        let mut table = Table::default();
        for o in overrides {
            let entry = table.prefixes.entry(o.prefix).or_default();
            match o.key {
                None => entry.all = Some(o.limits),
                Some(key) => {
                    entry.keys.insert(key, o.limits);
                }
            }
        }
        table
    }

    fn overrides(&self) -> Vec<Override> {
        let mut all = Vec::new();
        for (prefix, entry) in &self.prefixes {
            if let Some(limits) = &entry.all {
                all.push(Override {
                    prefix: prefix.clone(),
                    key: None,
                    limits: limits.clone(),
                });
            }
            for (key, limits) in &entry.keys {
                all.push(Override {
                    prefix: prefix.clone(),
                    key: Some(key.clone()),
                    limits: limits.clone(),
                });
            }
        }
        all.sort_by(|a, b| (&a.prefix, &a.key).cmp(&(&b.prefix, &b.key)));
        all
    }
}

/// This runtime's copy of the overrides, and the switch: read on every decision, without a lock.
#[derive(Debug)]
pub(crate) struct Overrides {
    table: ArcSwap<Table>,
    /// Whether `table` has any override: without any (the common case), a decision reads only this.
    any: AtomicBool,
    /// Off: every call goes ahead with no store traffic at all.
    enabled: AtomicBool,
}

impl Default for Overrides {
    fn default() -> Self {
        Overrides {
            table: ArcSwap::default(),
            any: AtomicBool::new(false),
            enabled: AtomicBool::new(true),
        }
    }
}

impl Overrides {
    /// Whether limiting is on.
    #[inline]
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Relaxed)
    }

    pub(crate) fn set_enabled(&self, enabled: bool) {
        self.enabled.store(enabled, Ordering::Relaxed);
    }

    /// What overrides `key` under `prefix`, if anything: the key's own override, completed by its prefix's.
    #[inline]
    pub(crate) fn lookup(&self, prefix: &str, key: &str) -> Option<Rule> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        self.find(prefix, key)
    }

    /// [`lookup`](Overrides::lookup) in the table, once there is one.
    fn find(&self, prefix: &str, key: &str) -> Option<Rule> {
        let table = self.table.load();
        let entry = table.prefixes.get(prefix)?;
        match (entry.keys.get(key), &entry.all) {
            (Some(own), Some(all)) => Some(own.clone().or(all)),
            (Some(own), None) => Some(own.clone()),
            (None, all) => all.clone(),
        }
    }

    /// Installs `table`; says whether it differs from the one it replaces.
    pub(crate) fn replace(&self, table: Table) -> bool {
        let changed = self.table.load().overrides() != table.overrides();
        if changed {
            let any = !table.prefixes.is_empty();
            self.table.store(Arc::new(table));
            self.any.store(any, Ordering::Release);
        }
        changed
    }

    /// Applies one change to this copy (what a runtime without Redis does, and what the one that made the
    /// change does at once).
    pub(crate) fn apply(&self, change: &Override, set: bool) {
        let mut all: Vec<Override> = self
            .list()
            .into_iter()
            .filter(|o| o.field() != change.field())
            .collect();
        if set {
            all.push(change.clone());
        }
        self.replace(Table::from_overrides(all));
    }

    pub(crate) fn list(&self) -> Vec<Override> {
        self.table.load().overrides()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_values_round_trip_for_any_text() {
        for o in [
            Override::prefix("rate_limit:emp:").max(10),
            Override::key("p:", "a:b\n{c}").window(Duration::from_millis(1500)),
            Override::key("", "").max(1).window(Duration::from_secs(1)),
            Override::prefix("3:x").max(0),
        ] {
            assert_eq!(Override::parse(&o.field(), &o.value()), Some(o));
        }
        assert_ne!(
            Override::prefix("ab").field(),
            Override::key("a", "b").field()
        );
        assert_eq!(Override::parse("junk", "max=1"), None);
        assert_eq!(Override::parse("p:1:a", "max=x"), None);
    }

    #[test]
    fn a_key_override_wins_over_its_prefix_and_is_completed_by_it() {
        let overrides = Overrides::default();
        overrides.apply(
            &Override::prefix("p:")
                .max(10)
                .window(Duration::from_secs(5)),
            true,
        );
        overrides.apply(&Override::key("p:", "vip").max(100), true);
        assert_eq!(overrides.lookup("p:", "anyone").unwrap().max, Some(10));
        let vip = overrides.lookup("p:", "vip").unwrap();
        assert_eq!(
            (vip.max, vip.window),
            (Some(100), Some(Duration::from_secs(5)))
        );
        assert_eq!(overrides.lookup("q:", "vip"), None);
        overrides.apply(&Override::prefix("p:"), false);
        assert_eq!(overrides.lookup("p:", "anyone"), None);
        assert_eq!(overrides.list().len(), 1);
    }
}
