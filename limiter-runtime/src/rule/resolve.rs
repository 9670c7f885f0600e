//! What a part left out of a rule resolves to, in one place. The first layer that sets a part wins:
//!
//! 1. a run-time override of the key, then of a pattern of keys, then of its prefix (`max`, `window` and the
//!    reserves, when a call is built);
//! 2. the plan the call names, of its policy's (when a call is built);
//! 3. the policy the rule names, as the limits file (or the builder) defines it;
//! 4. the rule itself (the attribute's arguments, or the plain API's `Rule`);
//! 5. the defaults of the innermost enclosing module that sets it ([`Defaults::resolve`]);
//! 6. the limits file's defaults;
//! 7. the crate-wide defaults (the builder, or the environment: `env.rs`);
//! 8. the built-in defaults, which the readers below hold.
//!
//! A policy that the file (or the builder) defines and no layer gives a prefix is counted under the
//! crate-wide prefix followed by its name and `:`, so that two policies never share a count.
//!
//! Every layer is a [`Rule`]; resolving is [`Rule::or`] from the first layer to the last.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Duration;

use super::Rule;
use crate::policy::PolicyName;
use crate::priority::Reserves;
use crate::{Algorithm, OnError};

/// The built-in prefix and message.
pub(crate) const PREFIX: &str = "rate_limit:";
const MESSAGE: Cow<'static, str> = Cow::Borrowed("too many requests, please try again later");

/// The crate-wide defaults, and the defaults of modules.
#[derive(Debug, Clone, Default)]
pub(crate) struct Defaults {
    /// Whatever the builder or the environment set.
    pub(crate) crate_wide: Rule,
    /// Module path and its defaults, longest path first.
    modules: Vec<(String, Rule)>,
    /// The policies the builder defines, by name: what they set wins over the rules that name them.
    policies: HashMap<String, Rule>,
    /// What the limits file defines, replaced whole by a reload.
    file: std::sync::Arc<FileLimits>,
}

/// What the limits file defines: its policies (over the builder's of the same name) and its defaults (over the
/// crate-wide ones), and the version of the text they were read from.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileLimits {
    pub(crate) defaults: Rule,
    pub(crate) policies: HashMap<String, Rule>,
    /// The first 8 hex digits of the SHA-1 of the file's text (empty without a file).
    pub(crate) version: String,
}

impl Defaults {
    pub(crate) fn set_module(&mut self, module: String, defaults: Rule) {
        self.modules.retain(|(path, _)| *path != module);
        self.modules.push((module, defaults));
        self.modules
            .sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    }

    /// Returns `rule` as written in `module`, with every part it leaves out taken from the innermost enclosing module
    /// that sets it, else from the crate-wide defaults (`a::b` encloses `a::b::c`, not `a::bc`). What none
    /// sets reads as its built-in default.
    pub(crate) fn resolve(&self, rule: &Rule, module: &str) -> Rule {
        let enclosing = self.modules.iter().filter(|(path, _)| {
            module
                .strip_prefix(path.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        });
        let policy = self.policy_of(rule);
        let rule = match policy {
            // The limit of calls in flight beside a rate takes its policy's plans (their `in_flight`) alone.
            Some(policy) if rule.beside_rate => Rule {
                plans: rule.plans.clone().or_else(|| policy.plans.clone()),
                ..rule.clone()
            },
            Some(policy) => policy.clone().or(rule),
            None => rule.clone(),
        };
        // A defined policy without a prefix of its own is counted apart from every other: under the defaults'
        // prefix followed by its name.
        let apart = policy.is_some() && rule.prefix.is_none();
        let mut resolved = enclosing
            .fold(rule, |rule, (_, defaults)| rule.or(defaults))
            .or(&self.file.defaults)
            .or(&self.crate_wide);
        if let (true, Some(name)) = (apart, resolved.name.as_deref()) {
            let prefix = format!("{}{name}:", resolved.prefix_value());
            resolved.prefix = Some(Cow::Owned(prefix));
        }
        if resolved.beside_rate {
            // Counted apart from the rate beside it: under its prefix, as resolved, and `in_flight:`.
            let prefix = format!("{}in_flight:", resolved.prefix_value());
            resolved.prefix = Some(Cow::Owned(prefix));
            resolved.beside_rate = false;
        }
        resolved
    }
}

impl Defaults {
    /// Returns the policy `rule` names, if the limits file (or the builder) defines it.
    #[inline]
    fn policy_of(&self, rule: &Rule) -> Option<&Rule> {
        if self.policies.is_empty() && self.file.policies.is_empty() {
            return None;
        }
        let name = rule.name.as_deref()?;
        self.file
            .policies
            .get(name)
            .or_else(|| self.policies.get(name))
    }

    /// Defines the policy `rule` (by its name), replacing one of the same name.
    pub(crate) fn set_policy(&mut self, name: String, rule: Rule) {
        self.policies.insert(name, rule);
    }

    /// Replaces what the limits file defines.
    pub(crate) fn set_file(&mut self, file: FileLimits) {
        self.file = std::sync::Arc::new(file);
    }

    /// Returns what the limits file defines.
    pub(crate) fn file(&self) -> &FileLimits {
        &self.file
    }

    /// Returns whether the builder defines the policy named `name`.
    pub(crate) fn defined_by_builder(&self, name: &str) -> bool {
        self.policies.contains_key(name)
    }

    /// Returns the name of every policy defined, in the file or by the builder (a name both define, twice).
    pub(crate) fn defined(&self) -> impl Iterator<Item = &str> {
        let file = self.file.policies.keys();
        file.chain(self.policies.keys()).map(String::as_str)
    }
}

impl Defaults {
    /// Returns what [`resolve`](Defaults::resolve) gives for a rule of the plain API (no module): the rule itself,
    /// borrowed, when no default would change it (the common case: a rule that sets what the defaults set).
    #[inline]
    pub(crate) fn resolved<'r>(&self, rule: &'r Rule) -> Cow<'r, Rule> {
        let unchanged = !rule.beside_rate
            && self.policy_of(rule).is_none()
            && (self.file.version.is_empty() || rule.covers(&self.file.defaults))
            && rule.covers(&self.crate_wide)
            && self
                .modules
                .iter()
                .all(|(path, defaults)| !path.is_empty() || rule.covers(defaults));
        match unchanged {
            true => Cow::Borrowed(rule),
            false => Cow::Owned(self.resolve(rule, "")),
        }
    }
}

impl Rule {
    /// Returns whether `self` sets every part `fallback` sets: `self.or(fallback)` is `self`.
    fn covers(&self, fallback: &Rule) -> bool {
        (self.prefix.is_some() || fallback.prefix.is_none())
            && (self.name.is_some() || fallback.name.is_none())
            && (self.window.is_some() || fallback.window.is_none())
            && (self.max.is_some() || fallback.max.is_none())
            && (self.message.is_some() || fallback.message.is_none())
            && (self.algorithm.is_some() || fallback.algorithm.is_none())
            && (self.burst.is_some() || fallback.burst.is_none())
            && (self.carry.is_some() || fallback.carry.is_none())
            && (self.wait.is_some() || fallback.wait.is_none())
            && (self.on_error.is_some() || fallback.on_error.is_none())
            && (self.shadow.is_some() || fallback.shadow.is_none())
            && (self.lease.is_some() || fallback.lease.is_none())
            && (self.lease_ttl.is_some() || fallback.lease_ttl.is_none())
            && (self.in_flight_ttl.is_some() || fallback.in_flight_ttl.is_none())
            && (self.penalty.is_some() || fallback.penalty.is_none())
            && (self.reserves.is_some() || fallback.reserves.is_none())
            && (self.plans.is_some() || fallback.plans.is_none())
            && self.calendar.covers(&fallback.calendar)
    }

    /// Returns `self`, with every part it leaves out taken from `fallback`.
    pub(crate) fn or(self, fallback: &Rule) -> Rule {
        Rule {
            prefix: self.prefix.or_else(|| fallback.prefix.clone()),
            name: self.name.or_else(|| fallback.name.clone()),
            window: self.window.or(fallback.window),
            max: self.max.or(fallback.max),
            message: self.message.or_else(|| fallback.message.clone()),
            algorithm: self.algorithm.or(fallback.algorithm),
            burst: self.burst.or(fallback.burst),
            carry: self.carry.or(fallback.carry),
            wait: self.wait.or(fallback.wait),
            on_error: self.on_error.or(fallback.on_error),
            shadow: self.shadow.or(fallback.shadow),
            lease: self.lease.or(fallback.lease),
            lease_ttl: self.lease_ttl.or(fallback.lease_ttl),
            in_flight_ttl: self.in_flight_ttl.or(fallback.in_flight_ttl),
            penalty: self.penalty.or(fallback.penalty),
            reserves: self.reserves.or(fallback.reserves),
            calendar: self.calendar.or(&fallback.calendar),
            plans: self.plans.or_else(|| fallback.plans.clone()),
            beside_rate: self.beside_rate,
            ignores_switch: self.ignores_switch,
        }
    }

    /// Returns this rule with every part set, the built-in defaults included: resolved again anywhere (under another
    /// limiter's defaults too), it is itself.
    pub(crate) fn completed(self) -> Rule {
        Rule {
            window: Some(self.window_value()),
            max: Some(self.max_value()),
            message: Some(self.message_value().clone()),
            algorithm: Some(self.algorithm_value()),
            on_error: Some(self.on_error_value()),
            shadow: Some(self.shadow_value()),
            prefix: Some(self.prefix.unwrap_or(Cow::Borrowed(PREFIX))),
            // Left out, they mean "named after the prefix", "as `max`" and "never wait", whatever resolves those.
            name: self.name,
            burst: self.burst,
            carry: self.carry,
            wait: self.wait,
            lease: self.lease,
            lease_ttl: self.lease_ttl,
            in_flight_ttl: self.in_flight_ttl,
            penalty: self.penalty,
            reserves: self.reserves,
            calendar: self.calendar,
            plans: self.plans,
            beside_rate: self.beside_rate,
            ignores_switch: self.ignores_switch,
        }
    }

    /// Returns the policy name of this rule (resolved: its prefix is the one its store keys start with): its `name`,
    /// else one derived from its prefix.
    pub(crate) fn policy_name(&self) -> PolicyName {
        match (&self.name, &self.prefix) {
            (Some(name), _) => PolicyName::named(name.clone()),
            (None, Some(prefix)) => PolicyName::derived(prefix.clone()),
            (None, None) => PolicyName::derived(Cow::Borrowed(PREFIX)),
        }
    }

    /// Returns the store key's namespace.
    #[inline]
    pub(crate) fn prefix_value(&self) -> &str {
        self.prefix.as_deref().unwrap_or(PREFIX)
    }

    pub(crate) fn window_value(&self) -> Duration {
        self.window.unwrap_or(Duration::from_secs(60))
    }

    pub(crate) fn max_value(&self) -> u64 {
        self.max.unwrap_or(100)
    }

    pub(crate) fn message_value(&self) -> &Cow<'static, str> {
        self.message.as_ref().unwrap_or(&MESSAGE)
    }

    #[inline]
    pub(crate) fn algorithm_value(&self) -> Algorithm {
        self.algorithm.unwrap_or_default()
    }

    pub(crate) fn on_error_value(&self) -> OnError {
        self.on_error.unwrap_or_default()
    }

    /// Returns the shares kept for calls of a priority and above (none unless set).
    #[inline]
    pub(crate) fn reserves_value(&self) -> Reserves {
        self.reserves.unwrap_or_default()
    }

    #[inline]
    pub(crate) fn shadow_value(&self) -> bool {
        self.shadow.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_matching_module_wins_on_segment_boundaries() {
        let mut defaults = Defaults::default();
        defaults.set_module("app".into(), Rule::new().max(1));
        defaults.set_module("app::billing".into(), Rule::new().max(2).prefix("billing:"));
        let rule = Rule::new();
        let max = |rule: &Rule, module| defaults.resolve(rule, module).max_value();
        assert_eq!(max(&rule, "app::billing::invoices"), 2);
        assert_eq!(
            defaults.resolve(&rule, "app::billing").prefix_value(),
            "billing:"
        );
        assert_eq!(max(&rule, "app::billing_v2"), 1);
        assert_eq!(max(&rule, "app"), 1);
        assert_eq!(max(&rule, "other"), 100);
        // What the rule says wins over every default.
        assert_eq!(max(&Rule::new().max(7), "app::billing"), 7);
        // What a module leaves out comes from the crate.
        assert_eq!(
            defaults.resolve(&rule, "app::billing").window_value(),
            Duration::from_secs(60)
        );
    }

    /// Checks that a completed rule sets every part, so the defaults of any limiter leave it as it is.
    #[test]
    fn a_completed_rule_resolves_to_itself_anywhere() {
        let defaults = Defaults {
            crate_wide: Rule::new().max(7).prefix("p:").on_error(OnError::Local),
            ..Defaults::default()
        };
        let completed = defaults.resolve(&Rule::new().max(3), "").completed();
        assert_eq!(completed.prefix_value(), "p:");
        let other = Defaults {
            crate_wide: Rule::new()
                .max(50)
                .window(Duration::from_secs(1))
                .algorithm(Algorithm::TokenBucket),
            ..Defaults::default()
        };
        assert_eq!(other.resolve(&completed, "m"), completed);
    }

    /// Checks that the plain API's shortcut borrows a rule only when the defaults would leave it as it is.
    #[test]
    fn resolved_is_resolve_borrowed_when_nothing_changes() {
        let defaults = Defaults {
            crate_wide: Rule::new().max(7).on_error(OnError::Local),
            ..Defaults::default()
        };
        let full = Rule::new().max(3).on_error(OnError::Open).prefix("p:");
        let partial = Rule::new().prefix("p:");
        assert!(matches!(defaults.resolved(&full), Cow::Borrowed(_)));
        assert!(matches!(defaults.resolved(&partial), Cow::Owned(_)));
        for rule in [&full, &partial] {
            assert_eq!(*defaults.resolved(rule), defaults.resolve(rule, ""));
        }
        let mut with_root = Defaults::default();
        with_root.set_module(String::new(), Rule::new().window(Duration::from_secs(5)));
        assert_eq!(
            with_root.resolved(&full).window_value(),
            Duration::from_secs(5)
        );
    }

    /// Checks the policies' layer: a defined policy's values win over the rule that names it, the file's over
    /// the builder's; a policy without a prefix is counted apart, under the defaults' prefix and its name; the
    /// limit in flight beside a rate takes the policy's plans alone, under the rate's prefix.
    #[test]
    fn a_defined_policy_wins_over_the_rule_that_names_it() {
        let mut defaults = Defaults {
            crate_wide: Rule::new().prefix("app:").window(Duration::from_secs(9)),
            ..Defaults::default()
        };
        defaults.set_policy("search".into(), Rule::new().policy("search").max(5));
        defaults.set_policy("built".into(), Rule::new().policy("built").max(6));
        let file = Rule::new()
            .policy("search")
            .max(7)
            .plan("pro", crate::Plan::new().in_flight(3));
        defaults.set_file(FileLimits {
            defaults: Rule::new().max(8),
            policies: [("search".to_owned(), file)].into(),
            version: "v".into(),
        });
        let named = Rule::new().policy("search").max(100).message("slow");
        let search = defaults.resolve(&named, "m");
        assert_eq!(
            (search.max_value(), search.prefix_value()),
            (7, "app:search:")
        );
        assert_eq!(
            search.message_value(),
            "slow",
            "what the policy leaves out is the rule's"
        );
        assert_eq!(search.window_value(), Duration::from_secs(9));
        assert_eq!(
            defaults
                .resolve(&Rule::new().policy("built"), "")
                .max_value(),
            6
        );
        assert_eq!(
            defaults.resolve(&Rule::new(), "").max_value(),
            8,
            "the file's defaults"
        );
        let own = defaults.resolve(&Rule::new().policy("search").prefix("own:"), "");
        assert_eq!(own.prefix_value(), "own:");
        let beside = Rule::new().policy("search").in_flight(2).beside_rate();
        let beside = defaults.resolve(&beside, "");
        assert_eq!(beside.prefix_value(), "app:search:in_flight:");
        assert_eq!(beside.max_value(), 2);
        assert!(beside.plans.is_some());
        assert!(matches!(defaults.resolved(&named), Cow::Owned(_)));
    }
}
