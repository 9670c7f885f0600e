//! The builder's limits from data: policies it defines, and the limits file it reads.

use std::path::PathBuf;

use super::LimiterBuilder;
use crate::rule::Defaults;
use crate::{Error, Rule};

impl LimiterBuilder {
    /// Defines the policy `name`: what `rule` sets (its limits, its [plans](crate::Plan)) wins over what a
    /// rule that names the policy sets (`policy = "search"` on the attribute, [`Rule::policy`] in code); what
    /// it leaves out is the naming rule's, then the defaults'. A policy defined here (or in the limits file)
    /// and given no prefix anywhere is counted under the defaults' prefix followed by its name and `:`
    /// (`rate_limit:search:`). Defining a name again replaces it.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Plan, Rule};
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::builder()
    ///     .policy("search", Rule::new().max(100).plan("pro", Plan::new().max(1_000)))
    ///     .build()
    ///     .unwrap();
    /// // A rule that names the policy, as `#[rate_limit(policy = "search", plan = tenant.plan)]` does.
    /// let search = Rule::new().policy("search");
    /// assert_eq!(limiter.check(&search, "acme").plan("pro").await.limit, 1_000);
    /// assert_eq!(limiter.check(&search, "initech").await.limit, 100);
    /// # }
    /// ```
    pub fn policy(mut self, name: impl Into<String>, rule: Rule) -> Self {
        let name = name.into();
        let rule = rule.policy(name.clone());
        self.defaults.set_policy(name, rule);
        self
    }

    /// Reads the limits from the TOML file at `path`: policies by name (what `policy = "search"` on the attribute,
    /// or [`Rule::policy`], refers to), their [plans](crate::Plan), and defaults; `LIMITER_LIMITS=path` in
    /// the environment does the same (see `guide::limits` for the file's grammar). The file is read and
    /// checked whole when the limiter is built: a mistake is an [`Error::Limits`] naming the file, the line
    /// and the column, and so is a policy an annotated function of the binary names that the file does not
    /// define. What the file sets of a policy wins over the attribute's (or rule's) own values; its
    /// `[defaults]` win over the crate-wide defaults set here.
    ///
    /// Then the file is watched (four times a second, from a limiter built within a Tokio runtime): a change is read
    /// and checked again, and, good, applies at once here and, through Redis, on every node of the service
    /// (versioned: each node reports the version in force, see [`Overview::nodes`](crate::Overview::nodes));
    /// refused, the limits in force stay, and the refusal is logged, counted
    /// (`limiter_limits_reloads_total{outcome="refused"}`) and reported beside the node's version. What was
    /// counted carries over (`guide::limits`): a reload never resets a count nor refills a bucket.
    pub fn limits_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.limits_file = Some((path.into(), false));
        self
    }

    /// Forgets the limits file (the environment's, which could not be used).
    pub(crate) fn without_limits_file(mut self) -> Self {
        self.limits_file = None;
        self
    }
}

/// Reads and checks the limits file at `path` (named by `LIMITER_LIMITS` if `from_env`) against every
/// annotated function of the binary, and returns it with its version.
pub(super) fn read(
    path: &std::path::Path,
    from_env: bool,
    defaults: &Defaults,
) -> Result<(crate::limits::LimitsFile, String), Error> {
    let text = crate::limits::read_text(path)?;
    let file = crate::limits::LimitsFile::parse(path, &text)?;
    let file =
        crate::limiter::limits::checked(path, file, |name| defaults.defined_by_builder(name))?;
    if from_env {
        tracing::info!(path = %path.display(), "rate limiter: limits file from LIMITER_LIMITS");
    }
    Ok((file, crate::limiter::limits::version_of(&text)))
}
