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
mod switch;
mod table;

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use self::banning::Banning;
pub use self::change::Override;
pub(crate) use self::change::{parse_switch, Change, SWITCH};
use self::switch::Switch;
use self::table::Table;
use crate::clock::Clock;
use crate::priority::Reserves;

/// The Redis hash of overrides, and the channel changes are announced on.
pub(crate) const OVERRIDES: &str = "limiter:overrides";

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
    /// The version of the Redis hash the table holds (0 before any change): changes are applied one at a
    /// time, under this lock.
    version: Mutex<u64>,
    /// Off: every call goes ahead with no store traffic at all.
    switch: Switch,
    /// The policies with bans in force, whose calls read their keys' blocks.
    banning: Banning,
}

/// An announced change came after one this runtime has not seen: the whole table must be read again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MissedChanges;

impl Default for Overrides {
    fn default() -> Self {
        Overrides {
            table: Table::default(),
            version: Mutex::new(0),
            switch: Switch::default(),
            banning: Banning::default(),
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
        let mut current = self.lock_version();
        self.change(change);
        if version == Some(*current + 1) {
            *current += 1;
        }
    }

    /// Applies a change announced as `version`: says whether it was new (a change already applied is
    /// announced again to the runtime that made it); [`MissedChanges`] if one came in between unseen.
    pub(crate) fn announced(&self, change: &Change, version: u64) -> Result<bool, MissedChanges> {
        let mut current = self.lock_version();
        if version <= *current {
            return Ok(false);
        }
        if version > *current + 1 {
            return Err(MissedChanges);
        }
        self.change(change);
        *current = version;
        Ok(true)
    }

    fn change(&self, change: &Change) {
        match change {
            Change::Set(o) => self.table.change(o, true),
            Change::Clear(o) => self.table.change(o, false),
            Change::Switch(on) => self.switch.turn_everywhere(*on),
            Change::Banning { prefix, until } => self.banning.note(prefix, *until),
        }
    }

    /// Installs every override, the switch of every runtime and the bans noted (prefix, until) as read from
    /// Redis at `version`; says whether that version differs from the table's.
    pub(crate) fn install(
        &self,
        overrides: Vec<Override>,
        on_everywhere: bool,
        banning: Vec<(String, u64)>,
        version: u64,
    ) -> bool {
        let mut current = self.lock_version();
        self.table.replace(overrides);
        self.banning.replace(banning);
        self.switch.turn_everywhere(on_everywhere);
        let moved = *current != version;
        *current = version;
        moved
    }

    /// Returns the version of the Redis hash the table holds.
    pub(crate) fn version(&self) -> u64 {
        *self.lock_version()
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
    fn lock_version(&self) -> std::sync::MutexGuard<'_, u64> {
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
        assert!(overrides.install(Vec::new(), true, Vec::new(), 9));
        assert!(!overrides.install(Vec::new(), true, Vec::new(), 9));
        assert_eq!((overrides.version(), overrides.len()), (9, 0));
        assert!(overrides.is_enabled());
    }
}
