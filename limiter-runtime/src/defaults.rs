//! What a rule leaves out resolves to: defaults for a module (by the longest matching module path, like log
//! targets), then crate-wide defaults, which the environment can set.

use std::borrow::Cow;
use std::time::Duration;

use crate::rule::{Parts, Resolved};
use crate::{Algorithm, Error, OnError, Rule};

/// The crate-wide defaults, and the defaults of modules.
#[derive(Debug, Clone)]
pub(crate) struct Defaults {
    pub(crate) prefix: Cow<'static, str>,
    pub(crate) window: Duration,
    pub(crate) max: u64,
    pub(crate) message: Cow<'static, str>,
    pub(crate) algorithm: Algorithm,
    pub(crate) on_error: OnError,
    /// Module path and its defaults, longest path first.
    modules: Vec<(String, Rule)>,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            prefix: Cow::Borrowed("rate_limit:"),
            window: Duration::from_secs(60),
            max: 100,
            message: Cow::Borrowed("too many requests, please try again later"),
            algorithm: Algorithm::SlidingLog,
            on_error: OnError::Open,
            modules: Vec::new(),
        }
    }
}

impl Defaults {
    pub(crate) fn set_module(&mut self, module: String, defaults: Rule) {
        self.modules.retain(|(path, _)| *path != module);
        self.modules.push((module, defaults));
        self.modules
            .sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    }

    /// The defaults of the configured modules containing `module`, innermost first (`a::b` contains `a::b::c`,
    /// not `a::bc`).
    fn enclosing<'s, 'm>(
        &'s self,
        module: &'m str,
    ) -> impl Iterator<Item = &'s Rule> + Clone + use<'s, 'm> {
        self.modules
            .iter()
            .filter(move |(path, _)| {
                module
                    .strip_prefix(path.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
            })
            .map(|(_, rule)| rule)
    }

    /// Every part of `rule`, from `rule` itself, else from the innermost enclosing module that sets it, else
    /// the crate-wide default.
    pub(crate) fn resolve<'a>(&'a self, rule: &'a Rule, module: &str) -> Resolved<'a> {
        if self.modules.is_empty() {
            // No module has defaults (the common case): nothing to walk for each part.
            return self.resolve_within(rule, std::iter::empty());
        }
        self.resolve_within(rule, self.enclosing(module))
    }

    fn resolve_within<'a>(
        &'a self,
        rule: &'a Rule,
        modules: impl Iterator<Item = &'a Rule> + Clone,
    ) -> Resolved<'a> {
        macro_rules! pick {
            ($field:ident) => {
                rule.$field
                    .or_else(|| modules.clone().find_map(|m| m.$field))
            };
        }
        Resolved {
            prefix: rule
                .prefix
                .as_deref()
                .or_else(|| modules.clone().find_map(|m| m.prefix.as_deref()))
                .unwrap_or(&self.prefix),
            message: rule
                .message
                .as_ref()
                .or_else(|| modules.clone().find_map(|m| m.message.as_ref()))
                .unwrap_or(&self.message),
            parts: Parts {
                window: pick!(window).unwrap_or(self.window),
                max: pick!(max).unwrap_or(self.max),
                algorithm: pick!(algorithm).unwrap_or(self.algorithm),
                burst: pick!(burst),
                wait: pick!(wait),
                on_error: pick!(on_error).unwrap_or(self.on_error),
                shadow: pick!(shadow).unwrap_or(false),
            },
        }
    }
}

/// Reads `LIMITER_<NAME>`: `None` when unset or empty.
pub(crate) fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Parses an environment value, with an error naming the variable.
pub(crate) fn parse_env<T>(
    name: &'static str,
    value: &str,
    expected: &'static str,
    parse: impl FnOnce(&str) -> Option<T>,
) -> Result<T, Error> {
    parse(value.trim()).ok_or_else(|| Error::InvalidEnv {
        name,
        value: value.to_owned(),
        expected,
    })
}

/// `"500ms"`, `"10s"`, `"1m"`, `"1h"`, or whole seconds (`"10"`).
pub(crate) fn duration(text: &str) -> Option<Duration> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().ok()?;
    let millis = match unit {
        "ms" => number,
        "" | "s" => number.checked_mul(1_000)?,
        "m" => number.checked_mul(60_000)?,
        "h" => number.checked_mul(3_600_000)?,
        _ => return None,
    };
    Some(Duration::from_millis(millis))
}

pub(crate) fn algorithm(text: &str) -> Option<Algorithm> {
    Some(match text {
        "sliding_log" => Algorithm::SlidingLog,
        "fixed_window" => Algorithm::FixedWindow,
        "sliding_window" => Algorithm::SlidingWindow,
        "token_bucket" => Algorithm::TokenBucket,
        "leaky_bucket" => Algorithm::LeakyBucket,
        _ => return None,
    })
}

pub(crate) fn on_error(text: &str) -> Option<OnError> {
    Some(match text {
        "open" => OnError::Open,
        "closed" => OnError::Closed,
        "local" => OnError::Local,
        _ => return None,
    })
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
        assert_eq!(
            defaults.resolve(&rule, "app::billing::invoices").parts.max,
            2
        );
        assert_eq!(defaults.resolve(&rule, "app::billing").prefix, "billing:");
        assert_eq!(defaults.resolve(&rule, "app::billing_v2").parts.max, 1);
        assert_eq!(defaults.resolve(&rule, "app").parts.max, 1);
        assert_eq!(defaults.resolve(&rule, "other").parts.max, 100);
        // What the rule says wins over every default.
        assert_eq!(
            defaults
                .resolve(&Rule::new().max(7), "app::billing")
                .parts
                .max,
            7
        );
        // What a module leaves out comes from the crate.
        assert_eq!(
            defaults.resolve(&rule, "app::billing").parts.window,
            Duration::from_secs(60)
        );
    }

    #[test]
    fn durations_read_like_the_attribute() {
        assert_eq!(duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(duration("10"), Some(Duration::from_secs(10)));
        assert_eq!(duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(duration("10x"), None);
        assert_eq!(duration("s"), None);
    }
}
