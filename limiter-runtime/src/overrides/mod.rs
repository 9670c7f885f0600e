//! What operators change at run time: a limit's `max` and `window` ([`Override`]), and the switch.
//!
//! Overrides live in one Redis hash (`limiter:overrides`), with a version that counts the changes; every
//! change is announced on a channel of the same name, with its version. Each runtime keeps every override in
//! memory ([`Table`]) and applies each change as it is announced (`sync`), so a decision never pays an extra
//! round trip to read its limit, and neither a decision nor a change pays for the number of overrides. A
//! version that skips tells a runtime it missed a change: it then reloads the whole hash.

mod operator;
pub(crate) mod sync;
mod table;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use self::table::Table;

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
    limits: Limits,
}

impl Override {
    /// An override of every limit whose prefix is `prefix`.
    pub fn prefix(prefix: impl Into<String>) -> Override {
        Override {
            prefix: prefix.into(),
            key: None,
            limits: Limits::default(),
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
        self.limits.max = Some(max);
        self
    }

    /// The new window.
    pub fn window(mut self, window: Duration) -> Override {
        self.limits.window = Some(window);
        self
    }

    pub(crate) fn with(prefix: String, key: Option<String>, limits: Limits) -> Override {
        Override {
            prefix,
            key,
            limits,
        }
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
        let mut limits = Limits::default();
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

/// What an override sets: `max` and `window`, each if it does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) max: Option<u64>,
    pub(crate) window: Option<Duration>,
}

impl Limits {
    /// These limits, completed by `fallback` where they set nothing.
    fn or(self, fallback: Limits) -> Limits {
        Limits {
            max: self.max.or(fallback.max),
            window: self.window.or(fallback.window),
        }
    }
}

/// This runtime's copy of the overrides, and the switch: read on every decision, without a lock.
#[derive(Debug)]
pub(crate) struct Overrides {
    table: Table,
    /// The version of the Redis hash the table holds (0 before any change): changes are applied one at a
    /// time, under this lock.
    version: Mutex<u64>,
    /// Off: every call goes ahead with no store traffic at all.
    enabled: AtomicBool,
}

/// An announced change came after one this runtime has not seen: the whole table must be read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MissedChanges;

impl Default for Overrides {
    fn default() -> Self {
        Overrides {
            table: Table::default(),
            version: Mutex::new(0),
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
    pub(crate) fn lookup(&self, prefix: &str, key: &str) -> Option<Limits> {
        self.table.lookup(prefix, key)
    }

    /// Applies a change made by this runtime, at once: `version` is the one Redis gave it, if it went through
    /// Redis. The table takes that version only if it follows the table's own; otherwise the announcements
    /// in between are still to come and will bring it there.
    pub(crate) fn apply(&self, change: &Override, set: bool, version: Option<u64>) {
        let mut current = self.lock_version();
        self.table.change(change, set);
        if version == Some(*current + 1) {
            *current += 1;
        }
    }

    /// Applies a change announced as `version`: says whether it was new (a change already applied is
    /// announced again to the runtime that made it); [`MissedChanges`] if one came in between unseen.
    pub(crate) fn announced(
        &self,
        change: &Override,
        set: bool,
        version: u64,
    ) -> Result<bool, MissedChanges> {
        let mut current = self.lock_version();
        if version <= *current {
            return Ok(false);
        }
        if version > *current + 1 {
            return Err(MissedChanges);
        }
        self.table.change(change, set);
        *current = version;
        Ok(true)
    }

    /// Installs every override as read from Redis at `version`; says whether that version differs from the
    /// table's.
    pub(crate) fn install(&self, overrides: Vec<Override>, version: u64) -> bool {
        let mut current = self.lock_version();
        self.table.replace(overrides);
        let moved = *current != version;
        *current = version;
        moved
    }

    /// The version of the Redis hash the table holds.
    pub(crate) fn version(&self) -> u64 {
        *self.lock_version()
    }

    /// How many overrides are in force.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    pub(crate) fn list(&self) -> Vec<Override> {
        self.table.list()
    }

    /// The version's lock. It guards a number and the table's single-step changes, so a poisoned lock is
    /// taken as is.
    fn lock_version(&self) -> std::sync::MutexGuard<'_, u64> {
        self.version.lock().unwrap_or_else(PoisonError::into_inner)
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

    /// Announced changes apply in order; one already applied is not applied again; a gap asks for a reload.
    #[test]
    fn versions_tell_a_new_change_from_a_seen_one_and_from_a_gap() {
        let overrides = Overrides::default();
        let one = Override::key("p:", "a").max(1);
        assert_eq!(overrides.announced(&one, true, 1), Ok(true));
        assert_eq!(overrides.announced(&one, true, 1), Ok(false));
        assert_eq!(
            overrides.announced(&one, false, 3),
            Err(MissedChanges),
            "version 2 was missed"
        );
        assert_eq!(overrides.lookup("p:", "a").unwrap().max, Some(1));
        // This runtime's own change, version 2, applies at once; its announcement is then not new.
        overrides.apply(&Override::key("p:", "b").max(2), true, Some(2));
        assert_eq!(overrides.version(), 2);
        assert_eq!(
            overrides.announced(&Override::key("p:", "b").max(2), true, 2),
            Ok(false)
        );
        // Its own change at version 4 while 3 is still on its way: applied, but the version waits for 3.
        overrides.apply(&Override::key("p:", "d").max(4), true, Some(4));
        assert_eq!(overrides.version(), 2);
        assert_eq!(overrides.lookup("p:", "d").unwrap().max, Some(4));
        assert_eq!(overrides.announced(&one, false, 3), Ok(true));
        assert_eq!(
            overrides.announced(&Override::key("p:", "d").max(4), true, 4),
            Ok(true)
        );
        assert_eq!((overrides.version(), overrides.len()), (4, 2));
        assert!(overrides.install(Vec::new(), 9));
        assert!(!overrides.install(Vec::new(), 9));
        assert_eq!((overrides.version(), overrides.len()), (9, 0));
    }
}
