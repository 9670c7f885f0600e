//! The limits file: one TOML file per service holding its policies by name, their plans, and the defaults,
//! read into [`Rule`]s and [`Plan`](crate::Plan)s with the grammar the attribute and the environment read the
//! same texts with; and a watcher that reads it again when it changes.
//!
//! ```toml
//! [defaults]                      # crate-wide defaults: any policy field but `in_flight` and `period`
//! window = "1m"
//! on_error = "local"
//!
//! [policies.search]               # a policy, by name ([A-Za-z0-9_.-]+): the rule's `name`
//! prefix = "rate_limit:search:"
//! algorithm = "sliding_window"
//! max = 100
//! window = "1m"                   # a duration's text, or whole seconds: `window = 60`
//! penalty = "1m..1h"
//! reserve = "critical 20%"
//!
//! [policies.search.plans.pro]     # a plan: `max`, `window`, `burst`, `reserve`, `penalty`, `in_flight`
//! max = 1000
//! ```
//!
//! Files: `error` (the error and its position), `disk` (reading the file, capped), `syntax` (TOML's own
//! errors), `fields` (which field goes where), `values` (one value, through the grammar), `tables` (the
//! tables, top-down), `checks` (how a policy's fields fit together), `watch` (polling the file). The errors are
//! the errors' own (`crate::error::limits`). What the limiter does with a file read, `crate::limiter::limits`.

mod checks;
mod disk;
mod fields;
mod syntax;
mod tables;
mod values;
mod watch;

#[cfg(test)]
mod tests;

use std::path::Path;

use toml::de::DeTable;

use self::error::Source;
// The file's errors are the errors' own (a layer below): named here as the limits' `error`.
use crate::error::limits as error;
use crate::Rule;

pub(crate) use self::disk::read_text;
pub(crate) use self::error::LimitsError;
pub(crate) use self::watch::spawn as watch;

/// A limits file, read: the defaults, and each policy (a [`Rule`] named after its table, with its plans), in
/// the order the file writes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LimitsFile {
    /// `[defaults]`: what a policy, or an attribute, leaves out (a rule without a name, nor plans).
    pub(crate) defaults: Rule,
    /// `[policies.<name>]`, each a rule whose `name` is `<name>`.
    pub(crate) policies: Vec<Rule>,
}

impl LimitsFile {
    /// Reads the limits in `text`, the content of the file at `path` (which only names it in errors). A mistake
    /// is refused with its line and column: only the first found, reading from the top.
    pub(crate) fn parse(path: &Path, text: &str) -> Result<LimitsFile, LimitsError> {
        let source = Source { path, text };
        let root = DeTable::parse(text).map_err(|error| syntax::error(source, &error))?;
        tables::file(source, root.get_ref())
    }

    /// Reads the limits file at `path`: refused when it is missing, not a regular file, larger than
    /// [`MOST_BYTES`] (told by its length, before any of it is read) or not UTF-8, and as
    /// [`parse`](LimitsFile::parse) refuses its text. Only `path` is read (an editor's swap file beside it
    /// is not). (The limiter reads the text itself, to push it to the other nodes.)
    #[cfg(test)]
    pub(crate) fn read(path: &Path) -> Result<LimitsFile, LimitsError> {
        let text = disk::read_text(path)?;
        LimitsFile::parse(path, &text)
    }

    /// Returns the policy named `name`, if the file has one.
    pub(crate) fn policy(&self, name: &str) -> Option<&Rule> {
        self.policies
            .iter()
            .find(|rule| rule.name.as_deref() == Some(name))
    }

    /// Returns the names of the plans of the policy `policy`, in the file's order, or `None` when the file has
    /// no such policy: what a caller checks a plan it names against.
    pub(crate) fn plans_named(&self, policy: &str) -> Option<Vec<&str>> {
        let rule = self.policy(policy)?;
        let plans = rule.plans.iter().flat_map(|plans| plans.iter());
        Some(plans.map(|(name, _)| name).collect())
    }

    /// Returns whether the policy `policy` has the plan `plan`.
    pub(crate) fn has_plan(&self, policy: &str, plan: &str) -> bool {
        self.plans_named(policy)
            .is_some_and(|plans| plans.contains(&plan))
    }
}
