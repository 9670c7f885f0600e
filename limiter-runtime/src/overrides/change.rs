//! What the overrides' hash holds, field by field: an [`Override`], or the switch of every runtime; and how
//! each is written in the hash and in an announcement.

use std::fmt;
use std::time::Duration;

use super::Limits;
use crate::priority::ReservesError;
use crate::{Error, Priority};

/// The hash's field that holds the switch of every runtime: `on` or `off` (absent: on).
pub(crate) const SWITCH: &str = "switch";

/// A run-time change to a limit: every key of a policy, or one key of it.
///
/// A policy is named as everywhere else (bans, inspection, the admin API, the page): by its name (the
/// rule's [`policy`](crate::Rule::policy), the attribute's `policy = ".."`), or by its prefix. A name is resolved to
/// its policy's prefix when the override is set, by what this node has decided, else by what the nodes
/// report; anything no node knows as a name is taken as a prefix (an override may be set before its limit's
/// first call).
///
/// What an override sets wins over everything else (see the crate's resolution order); what it leaves out
/// is resolved as usual. A key's own override wins over its policy's.
///
/// ```
/// use limiter_runtime::Override;
/// use std::time::Duration;
///
/// // Every employee: 10 lookups per 5 s (the policy by its prefix; its name would do).
/// let all = Override::policy("rate_limit:emp:").max(10).window(Duration::from_secs(5));
/// // Employee 1001 alone: 1 per window.
/// let one = Override::key("rate_limit:emp:", "1001").max(1);
/// ```
#[derive(Debug, Clone)]
pub struct Override {
    /// The prefix of the limits overridden (until resolved, what the caller named: a name or a prefix).
    pub(super) prefix: String,
    /// The key, as its store key writes it after its prefix.
    pub(super) key: Option<String>,
    /// The key as the caller wrote it, until the policy is resolved (its store key depends on the prefix).
    pub(super) key_text: Option<String>,
    /// Whether `key` is a pattern: the keys that start with it, written as it is with a `*` after it.
    pub(super) pattern: bool,
    pub(super) limits: Limits,
}

/// Two overrides are equal when they aim at the same target with the same limits (however the key was given).
impl PartialEq for Override {
    fn eq(&self, other: &Override) -> bool {
        (&self.prefix, &self.key, self.pattern, &self.limits)
            == (&other.prefix, &other.key, other.pattern, &other.limits)
    }
}

impl Eq for Override {}

impl Override {
    /// Creates an override of every key of `policy`: its name, or its prefix.
    pub fn policy(policy: impl Into<String>) -> Override {
        Override {
            prefix: policy.into(),
            key: None,
            key_text: None,
            pattern: false,
            limits: Limits::default(),
        }
    }

    /// Creates an override of one key of `policy` (its name, or its prefix; the key as the attribute formats
    /// it: the parts of a key list joined with `:`).
    pub fn key(policy: impl Into<String>, key: impl fmt::Display) -> Override {
        let policy = policy.into();
        let key = key.to_string();
        Override {
            // Escaped and bounded as store keys are, so that the override finds its limit.
            key: Some(crate::key::StoreKey::rest_of(
                &policy,
                format_args!("{key}"),
            )),
            key_text: Some(key),
            ..Override::policy(policy)
        }
    }

    /// Creates an override of every key of `policy` that matches `pattern`: its start, then `*` (`acme*`:
    /// `acme`, `acme-eu`, `acme:42`...). Where a key matches several patterns the longest wins; a key's own
    /// override wins over any pattern, and a pattern over its policy's. Only a trailing `*` is a pattern:
    /// [`Limiter::set_override`](crate::Limiter::set_override) refuses one without it, or with another `*`.
    /// A key is matched as its store key writes it (see [`key`](Override::key)); a key longer than a store
    /// key keeps is matched by its first part only.
    ///
    /// ```
    /// use limiter_runtime::Override;
    ///
    /// // Every key of Acme's: 10,000 per window (the policy by its prefix; its name would do).
    /// let acme = Override::pattern("rate_limit:search:", "acme*").max(10_000);
    /// assert_eq!(acme.target_key(), Some("acme*"));
    /// ```
    pub fn pattern(policy: impl Into<String>, pattern: impl fmt::Display) -> Override {
        let policy = policy.into();
        let text = pattern.to_string();
        Override {
            key: Some(Override::pattern_key(&policy, &text)),
            key_text: Some(text),
            pattern: true,
            ..Override::policy(policy)
        }
    }

    /// Returns the table's text of `pattern` under `prefix`: its start as a store key writes it, then `*`.
    fn pattern_key(prefix: &str, pattern: &str) -> String {
        let start = pattern.strip_suffix('*').unwrap_or(pattern);
        let mut key = crate::key::StoreKey::rest_of(prefix, format_args!("{start}"));
        key.push('*');
        key
    }

    /// Returns whether it targets the keys that match a pattern ([`Override::pattern`]).
    pub fn is_pattern(&self) -> bool {
        self.pattern
    }

    /// Returns the one key it targets: none for a policy's override or a pattern's.
    pub(crate) fn single_key(&self) -> Option<&str> {
        self.key.as_deref().filter(|_| !self.pattern)
    }

    /// Returns this override aimed at `prefix`, the prefix of the policy it named.
    pub(crate) fn aimed_at(mut self, prefix: String) -> Override {
        if let Some(key) = &self.key_text {
            self.key = Some(match self.pattern {
                true => Override::pattern_key(&prefix, key),
                false => crate::key::StoreKey::rest_of(&prefix, format_args!("{key}")),
            });
        }
        self.prefix = prefix;
        self
    }

    /// Sets the new admissions per window: at least 1. A limit of zero would refuse every call, as `max = 0` on
    /// the attribute would: [`Limiter::set_override`](crate::Limiter::set_override) refuses it
    /// ([`Error::InvalidOverride`](crate::Error::InvalidOverride)).
    pub fn max(mut self, max: u64) -> Override {
        self.limits.max = Some(max);
        self
    }

    /// Sets the share of the limit kept for calls of `priority` and above, as [`Rule::reserve`](crate::Rule::reserve)
    /// does (each call sets one priority's share; the others stay the override's, or none: an override's
    /// reserves replace the rule's whole).
    pub fn reserve(mut self, priority: Priority, percent: u8) -> Override {
        let reserves = self.limits.reserves.unwrap_or_default();
        self.limits.reserves = Some(reserves.with(priority, percent));
        self
    }

    /// Sets the new window: at least a microsecond (windows are counted in microseconds), or
    /// [`Limiter::set_override`](crate::Limiter::set_override) refuses it.
    pub fn window(mut self, window: Duration) -> Override {
        self.limits.window = Some(window);
        self
    }

    pub(crate) fn with(prefix: String, key: Option<String>, limits: Limits) -> Override {
        Override {
            prefix,
            key,
            key_text: None,
            pattern: false,
            limits,
        }
    }

    /// Returns the prefix of the limits overridden.
    pub fn target_prefix(&self) -> &str {
        &self.prefix
    }

    /// Returns the key overridden, if only one; a pattern's text, `*` last, for a pattern's.
    pub fn target_key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// Returns the admissions per window it sets, if it does.
    pub fn max_value(&self) -> Option<u64> {
        self.limits.max
    }

    /// Returns the window it sets, if it does.
    pub fn window_value(&self) -> Option<Duration> {
        self.limits.window
    }

    /// Returns the shares it keeps for the higher priorities, written as the attribute takes them
    /// (`critical 20%, high 30%`; `none`), if it sets them.
    pub fn reserve_value(&self) -> Option<String> {
        self.limits.reserves.map(|reserves| reserves.to_string())
    }

    /// Sets the shares kept for the higher priorities from their text (`critical 20%, high 30%`, or `none`).
    #[cfg_attr(not(feature = "admin"), allow(dead_code))]
    pub(crate) fn reserves_text(mut self, text: &str) -> Result<Override, String> {
        let reserves = text.parse().map_err(|e: ReservesError| e.to_string())?;
        self.limits.reserves = Some(reserves);
        Ok(self)
    }

    /// Returns this override, if it can be set; else [`Error::InvalidOverride`] saying why.
    pub(crate) fn valid(self) -> Result<Override, Error> {
        match self.invalid() {
            None => Ok(self),
            Some(reason) => Err(Error::InvalidOverride {
                target: self.target(),
                reason,
            }),
        }
    }

    /// Returns why no runtime takes this override as a limit, if none does: a `max` of zero (as the attribute refuses
    /// `max = 0`: it would refuse every call), or a window that is no microsecond long.
    pub(crate) fn invalid(&self) -> Option<&'static str> {
        if self.limits.max == Some(0) {
            return Some("max is at least 1: a limit of zero would refuse every call");
        }
        if self.limits.window.is_some_and(|w| w.as_micros() == 0) {
            return Some("the window is at least 1 µs");
        }
        let text = self.key_text.as_deref().or(self.key.as_deref());
        if self.pattern && !text.is_some_and(|t| t.ends_with('*') && t.matches('*').count() == 1) {
            return Some("a pattern is the start of its keys followed by one `*`, its last character (`acme*`)");
        }
        None
    }

    /// Returns its target, for messages: `prefix "p:"`, or `key "k" of prefix "p:"`.
    fn target(&self) -> String {
        match &self.key {
            None => format!("prefix {:?}", self.prefix),
            Some(key) if self.pattern => format!("keys {key:?} of prefix {:?}", self.prefix),
            Some(key) => format!("key {key:?} of prefix {:?}", self.prefix),
        }
    }

    /// Returns the hash field of this override's target: unambiguous for any prefix and key text.
    pub(crate) fn field(&self) -> String {
        match &self.key {
            None => format!("p:{}:{}", self.prefix.len(), self.prefix),
            Some(key) if self.pattern => format!("m:{}:{}{}", self.prefix.len(), self.prefix, key),
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
        if let Some(reserves) = self.limits.reserves {
            parts.push(format!("reserve={reserves}"));
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
            "k" | "m" => Some(rest[len..].to_owned()),
            _ => return None,
        };
        let mut limits = Limits::default();
        for part in value.split(';').filter(|p| !p.is_empty()) {
            match part.split_once('=')? {
                ("max", n) => limits.max = Some(n.parse().ok()?),
                ("window", micros) => {
                    limits.window = Some(Duration::from_micros(micros.parse().ok()?))
                }
                ("reserve", text) => limits.reserves = Some(text.parse().ok()?),
                _ => return None,
            }
        }
        let mut read = Override::with(prefix, key, limits);
        read.pattern = kind == "m";
        (!read.pattern || read.key.as_deref().is_some_and(|k| k.ends_with('*'))).then_some(read)
    }
}

/// One change to the overrides' hash: an override set or cleared, the switch of every runtime turned, or a
/// ban under a prefix noted (its calls read their keys' blocks until `until`, µs on the store's clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    Set(Override),
    Clear(Override),
    Switch(bool),
    Banning {
        prefix: String,
        until: u64,
    },
    /// The limits file the fleet shares: its text.
    Limits(String),
}

/// What the field of a ban noted under a prefix starts with (then the prefix's length, `:` and the prefix).
const BANNING: &str = "b:";

impl Change {
    /// Returns what the script does: `set` the field, or `clear` it.
    pub(crate) fn op(&self) -> &'static str {
        match self {
            Change::Clear(_) => "clear",
            Change::Set(_) | Change::Switch(_) | Change::Banning { .. } | Change::Limits(_) => {
                "set"
            }
        }
    }

    /// Returns the hash's field.
    pub(crate) fn field(&self) -> String {
        match self {
            Change::Set(o) | Change::Clear(o) => o.field(),
            Change::Switch(_) => SWITCH.to_owned(),
            Change::Banning { prefix, .. } => format!("{BANNING}{}:{prefix}", prefix.len()),
            Change::Limits(_) => super::LIMITS.to_owned(),
        }
    }

    /// Returns the field's value.
    pub(crate) fn value(&self) -> String {
        match self {
            Change::Set(o) | Change::Clear(o) => o.value(),
            Change::Switch(on) => switch_value(*on).to_owned(),
            Change::Banning { until, .. } => until.to_string(),
            Change::Limits(text) => text.clone(),
        }
    }

    /// Reads a change back from the script's operation, the field and its value; `None` if any was not written
    /// by this crate, or if it sets an override no runtime takes ([`Override::invalid`]: written by hand, or
    /// by an older runtime).
    pub(crate) fn parse(op: &str, field: &str, value: &str) -> Option<Change> {
        if field == SWITCH {
            return match op {
                "set" => parse_switch(value).map(Change::Switch),
                "clear" => Some(Change::Switch(true)),
                _ => None,
            };
        }
        if field == super::LIMITS {
            return (op == "set").then(|| Change::Limits(value.to_owned()));
        }
        if let Some(rest) = field.strip_prefix(BANNING) {
            let (len, prefix) = rest.split_once(':')?;
            let until = value.parse().ok()?;
            return (op == "set" && len.parse() == Ok(prefix.len())).then(|| Change::Banning {
                prefix: prefix.to_owned(),
                until,
            });
        }
        let o = Override::parse(field, value)?;
        match op {
            "set" if o.invalid().is_none() => Some(Change::Set(o)),
            "clear" => Some(Change::Clear(o)),
            _ => None,
        }
    }
}

fn switch_value(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// Parses the switch's value as the hash holds it.
pub(crate) fn parse_switch(value: &str) -> Option<bool> {
    match value {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_values_round_trip_for_any_text() {
        for o in [
            Override::policy("rate_limit:emp:").max(10),
            Override::key("p:", "a:b\n{c}").window(Duration::from_millis(1500)),
            Override::key("", "").max(1).window(Duration::from_secs(1)),
            Override::policy("3:x").max(0),
        ] {
            assert_eq!(Override::parse(&o.field(), &o.value()), Some(o));
        }
        assert_ne!(
            Override::policy("ab").field(),
            Override::key("a", "b").field()
        );
        assert_eq!(Override::parse("junk", "max=1"), None);
        assert_eq!(Override::parse("p:1:a", "max=x"), None);
    }

    #[test]
    fn a_limit_of_zero_is_invalid() {
        let second = Duration::from_secs(1);
        for (o, why) in [
            (Override::policy("p:").max(0), Some("max is at least 1")),
            (Override::key("p:", "k").max(0).window(second), Some("max")),
            (Override::policy("p:").window(Duration::ZERO), Some("1 µs")),
            (
                Override::policy("p:").window(Duration::from_nanos(999)),
                Some("1 µs"),
            ),
            (
                Override::policy("p:")
                    .max(1)
                    .window(Duration::from_micros(1)),
                None,
            ),
            (Override::policy("p:"), None),
        ] {
            let invalid = o.invalid();
            assert_eq!(invalid.is_some(), why.is_some(), "{o:?}");
            assert!(invalid.unwrap_or("").contains(why.unwrap_or("")), "{o:?}");
        }
        let error = Override::key("p:", "k").max(0).valid().unwrap_err();
        assert_eq!(
            error.to_string(),
            r#"the override of key "k" of prefix "p:" is invalid: max is at least 1: a limit of zero would refuse every call"#
        );
    }

    #[test]
    fn changes_round_trip_through_operation_field_and_value() {
        for change in [
            Change::Set(Override::key("p:", "a\nb").max(3)),
            Change::Clear(Override::policy("p:")),
            Change::Switch(false),
            Change::Switch(true),
            Change::Banning {
                prefix: "p:b:".to_owned(),
                until: 17,
            },
        ] {
            let read = Change::parse(change.op(), &change.field(), &change.value());
            assert_eq!(read.as_ref(), Some(&change));
        }
        assert_eq!(Change::parse("set", SWITCH, "maybe"), None);
        // A limit of zero is set by no runtime; a target is cleared whatever it held.
        let zero = Override::key("p:", "a").max(0);
        assert_eq!(Change::parse("set", &zero.field(), &zero.value()), None);
        let cleared = Change::parse("clear", &zero.field(), &zero.value());
        assert_eq!(cleared, Some(Change::Clear(zero)));
        assert_eq!(Change::parse("drop", "p:1:a", ""), None);
    }
}
