//! What operators change at run time: a limit's `max` and `window` ([`Override`]), the switch, and which
//! policies read their keys' blocks because a ban is in force under them.
//!
//! Overrides live in one Redis hash (`limiter:overrides`), with a version that counts the changes; every
//! change is announced on a channel of the same name, with its version. Each runtime keeps every override in
//! memory ([`Table`]) and applies each change as it is announced (`sync`), so a decision never pays an extra
//! round trip to read its limit, and neither a decision nor a change pays for the number of overrides. A
//! version that skips tells a runtime it missed a change: it then reloads the whole hash.

mod banning;
mod change;
mod pauses;
mod pushed;
mod switch;
mod table;

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use self::banning::Banning;
pub use self::change::Override;
pub(crate) use self::change::{parse_switch, Change, SWITCH};
pub(crate) use self::pauses::Pauses;
use self::pushed::Pushed;
use self::switch::Switch;
use self::table::Table;
use crate::clock::Clock;
use crate::priority::Reserves;

/// The Redis hash of overrides, and the channel changes are announced on.
pub(crate) const OVERRIDES: &str = "limiter:overrides";

/// The hash's field that holds the limits file the fleet shares (its text).
pub(crate) const LIMITS: &str = "limits";

/// What an override sets: `max`, `window` and the reserves, each if it does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) max: Option<u64>,
    pub(crate) window: Option<Duration>,
    /// The shares kept for the priorities above others ([`Rule::reserve`](crate::Rule::reserve)).
    pub(crate) reserves: Option<Reserves>,
}

impl Limits {
    /// Returns these limits, completed by `fallback` where they set nothing.
    fn or(self, fallback: Limits) -> Limits {
        Limits {
            max: self.max.or(fallback.max),
            window: self.window.or(fallback.window),
            reserves: self.reserves.or(fallback.reserves),
        }
    }
}

/// This runtime's copy of the overrides, and the switch: read on every decision, without a lock.
#[derive(Debug)]
pub(crate) struct Overrides {
    table: Table,
    /// The version of the Redis hash the table holds, and how many changes it has applied: changes are
    /// applied one at a time, under this lock.
    version: Mutex<Seen>,
    /// Off: every call goes ahead with no store traffic at all.
    switch: Switch,
    /// The policies with bans in force, whose calls read their keys' blocks.
    banning: Banning,
    /// The keys an upstream paused, as this node heard.
    pub(crate) pauses: Pauses,
    /// The limits file the fleet shares, as last pushed.
    pub(crate) pushed: Pushed,
}

/// The version of the Redis hash the table holds (0 before any change) and how many changes were applied
/// to it one by one: a whole hash read before one of them was applied is older than the table.
#[derive(Debug, Clone, Copy, Default)]
struct Seen {
    version: u64,
    changes: u64,
}

/// A mark taken before the whole hash is read ([`Overrides::mark`]): what was read is installed only if no
/// change was applied since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark(u64);

/// An announced change came after one this runtime has not seen: the whole table must be read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MissedChanges;

impl Default for Overrides {
    fn default() -> Self {
        Overrides {
            table: Table::default(),
            version: Mutex::new(Seen::default()),
            switch: Switch::default(),
            banning: Banning::default(),
            pauses: Pauses::default(),
            pushed: Pushed::default(),
        }
    }
}

impl Overrides {
    /// Returns whether limiting is on: this runtime's switch and the one of every runtime both are.
    #[inline]
    pub(crate) fn is_enabled(&self) -> bool {
        self.switch.is_on()
    }

    /// Returns whether this runtime's own switch is on: while it is off, nothing is sent to Redis, not even in the
    /// background.
    pub(crate) fn is_enabled_here(&self) -> bool {
        self.switch.is_on_here()
    }

    pub(crate) fn set_enabled_here(&self, enabled: bool) {
        self.switch.turn_here(enabled);
    }

    /// Returns what overrides `key` under `prefix`, if anything: the key's own override, completed by its prefix's.
    #[inline]
    pub(crate) fn lookup(&self, prefix: &str, key: &str) -> Option<Limits> {
        self.table.lookup(prefix, key)
    }

    /// Returns whether calls under `prefix` read their keys' blocks, penalty or not: a ban under it is in force.
    #[inline]
    pub(crate) fn reads_blocks(&self, prefix: &str, clock: &dyn Clock) -> bool {
        self.banning.reads_blocks(prefix, clock)
    }

    /// Applies a change made by this runtime, at once: `version` is the one Redis gave it, if it went through
    /// Redis. The table takes that version only if it follows the table's own; otherwise the announcements
    /// in between are still to come and will bring it there.
    pub(crate) fn apply(&self, change: &Change, version: Option<u64>) {
        let mut seen = self.lock_version();
        self.change(change);
        seen.changes += 1;
        if version == Some(seen.version + 1) {
            seen.version += 1;
        }
    }

    /// Applies a change announced as `version`: says whether it was new (a change already applied is
    /// announced again to the runtime that made it); [`MissedChanges`] if one came in between unseen.
    pub(crate) fn announced(&self, change: &Change, version: u64) -> Result<bool, MissedChanges> {
        let mut seen = self.lock_version();
        if version <= seen.version {
            return Ok(false);
        }
        if version > seen.version + 1 {
            return Err(MissedChanges);
        }
        self.change(change);
        *seen = Seen {
            version,
            changes: seen.changes + 1,
        };
        Ok(true)
    }

    fn change(&self, change: &Change) {
        match change {
            Change::Set(o) => self.table.change(o, true),
            Change::Clear(o) => self.table.change(o, false),
            Change::Switch(on) => self.switch.turn_everywhere(*on),
            Change::Banning { prefix, until } => self.banning.note(prefix, *until),
            Change::Limits(text) => self.pushed.heard(text),
        }
    }

    /// Marks the table before the whole hash is read, for [`install`](Self::install).
    pub(crate) fn mark(&self) -> Mark {
        Mark(self.lock_version().changes)
    }

    /// Installs every override, the switch of every runtime and the bans noted (prefix, until) as read from
    /// Redis at `version`, and says whether the table moved to another version; `None`, installing nothing,
    /// when a change was applied here since `mark` (the read may be older than the table: read again).
    pub(crate) fn install(
        &self,
        mark: Mark,
        overrides: Vec<Override>,
        on_everywhere: bool,
        banning: Vec<(String, u64)>,
        (version, limits): (u64, Option<String>),
    ) -> Option<bool> {
        let mut seen = self.lock_version();
        if Mark(seen.changes) != mark {
            return None;
        }
        if let Some(text) = limits {
            self.pushed.heard(&text);
        }
        self.table.replace(overrides);
        self.banning.replace(banning);
        self.switch.turn_everywhere(on_everywhere);
        let moved = seen.version != version;
        seen.version = version;
        Some(moved)
    }

    /// Returns the version of the Redis hash the table holds.
    pub(crate) fn version(&self) -> u64 {
        self.lock_version().version
    }

    /// Returns how many overrides are in force.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    pub(crate) fn list(&self) -> Vec<Override> {
        self.table.list()
    }

    /// Takes the version's lock. It guards a number and the table's single-step changes, so a poisoned lock is
    /// taken as is.
    fn lock_version(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.version.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that announced changes apply in order; one already applied is not applied again; a gap asks for a reload.
    #[test]
    fn versions_tell_a_new_change_from_a_seen_one_and_from_a_gap() {
        let overrides = Overrides::default();
        let set = |key: &str, max| Change::Set(Override::key("p:", key).max(max));
        let one = set("a", 1);
        let cleared = Change::Clear(Override::key("p:", "a"));
        assert_eq!(overrides.announced(&one, 1), Ok(true));
        assert_eq!(overrides.announced(&one, 1), Ok(false));
        assert_eq!(
            overrides.announced(&cleared, 3),
            Err(MissedChanges),
            "version 2 was missed"
        );
        assert_eq!(overrides.lookup("p:", "a").unwrap().max, Some(1));
        // This runtime's own change, version 2, applies at once; its announcement is then not new.
        overrides.apply(&set("b", 2), Some(2));
        assert_eq!(overrides.version(), 2);
        assert_eq!(overrides.announced(&set("b", 2), 2), Ok(false));
        // Its own change at version 4 while 3 is still on its way: applied, but the version waits for 3.
        overrides.apply(&set("d", 4), Some(4));
        assert_eq!(overrides.version(), 2);
        assert_eq!(overrides.lookup("p:", "d").unwrap().max, Some(4));
        assert_eq!(overrides.announced(&cleared, 3), Ok(true));
        assert_eq!(overrides.announced(&set("d", 4), 4), Ok(true));
        assert_eq!((overrides.version(), overrides.len()), (4, 2));
        // The switch of every runtime is a change like the others.
        assert_eq!(overrides.announced(&Change::Switch(false), 5), Ok(true));
        assert!(!overrides.is_enabled() && overrides.is_enabled_here());
        let mark = overrides.mark();
        assert_eq!(
            overrides.install(mark, Vec::new(), true, Vec::new(), (9, None)),
            Some(true)
        );
        assert_eq!(
            overrides.install(mark, Vec::new(), true, Vec::new(), (9, None)),
            Some(false)
        );
        assert_eq!((overrides.version(), overrides.len()), (9, 0));
        assert!(overrides.is_enabled());
    }

    /// Checks that a whole hash read before this runtime's own change landed does not undo it: the read is
    /// older than the table (the race a CI run met: an override set, then inspected as if it were not).
    #[test]
    fn a_reload_read_before_a_change_does_not_undo_it() {
        let overrides = Overrides::default();
        let mark = overrides.mark();
        // The reload's HGETALL answers the hash as it was, at version 0; meanwhile the change goes through.
        overrides.apply(&Change::Set(Override::key("p:", "vip").max(100)), Some(1));
        assert_eq!(
            overrides.install(mark, Vec::new(), true, Vec::new(), (0, None)),
            None
        );
        assert_eq!(overrides.lookup("p:", "vip").unwrap().max, Some(100));
        assert_eq!(overrides.version(), 1);
        // A read marked after it installs, even a version that went back (a Redis that lost its data).
        let mark = overrides.mark();
        assert_eq!(
            overrides.install(mark, Vec::new(), true, Vec::new(), (0, None)),
            Some(true)
        );
        assert_eq!((overrides.version(), overrides.len()), (0, 0));
    }
}
