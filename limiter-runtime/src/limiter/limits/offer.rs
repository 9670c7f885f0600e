//! Applying a limits file while the limiter runs: read, checked against every annotated function of the
//! binary, then put in force in one step, or refused as a whole with the last good limits kept. The same
//! text applies the same way wherever it comes from: the file this node watches, a push through Redis from
//! another node, or the admin API.

use std::path::Path;

use crate::error::limits::LimitsError;
use crate::limits::LimitsFile;
use crate::pipeline::Pipeline;
use crate::rule::FileLimits;
use crate::watch::NodeLimits;

/// What a limits file offered to a node became.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Offered {
    /// In force now, at this version.
    Applied(String),
    /// The version already in force: nothing changed (no count reset, no bucket refilled).
    Unchanged(String),
}

/// Returns the version of a limits file's `text`: the first 8 hex digits of its SHA-1.
pub(crate) fn version_of(text: &str) -> String {
    let digest = sha1_smol::Sha1::from(text).digest().to_string();
    digest[..8].to_owned()
}

/// Reads `text` (the limits file at `path`, which names it in errors) and puts it in force on `pipeline`,
/// unless it is the version in force; refused, the limits in force stay, and the refusal is logged, counted
/// and reported to the operators.
pub(crate) fn offer(pipeline: &Pipeline, path: &Path, text: &str) -> Result<Offered, LimitsError> {
    let version = version_of(text);
    if pipeline.defaults.load().file().version == version {
        // The version in force, offered again (the good file back after a refused one): nothing changes
        // but that no refusal stands any more.
        crate::observe::limits_offered("unchanged");
        let limits = pipeline.observers.watch.limits.lock();
        limits
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .refused = None;
        return Ok(Offered::Unchanged(version));
    }
    let defaults = pipeline.defaults.load();
    let by_builder = |name: &str| defaults.defined_by_builder(name);
    match LimitsFile::parse(path, text).and_then(|file| checked(path, file, by_builder)) {
        Ok(file) => {
            let policies = file.policies.len();
            put_in_force(pipeline, file, version.clone());
            crate::observe::limits_offered("applied");
            tracing::info!(
                path = %path.display(),
                version,
                policies,
                "rate limiter: limits file applied"
            );
            Ok(Offered::Applied(version))
        }
        Err(error) => {
            refused(pipeline, &error);
            Err(error)
        }
    }
}

/// Puts `file` in force, as `version`: the policies and defaults every rule is resolved against from now.
pub(crate) fn put_in_force(pipeline: &Pipeline, file: LimitsFile, version: String) {
    let policies = file
        .policies
        .into_iter()
        .filter_map(|rule| Some((rule.name.as_deref()?.to_owned(), rule)))
        .collect();
    let limits = FileLimits {
        defaults: file.defaults,
        policies,
        version: version.clone(),
    };
    pipeline.defaults.replace(|defaults| {
        let mut next = defaults.clone();
        next.set_file(limits);
        next
    });
    *pipeline
        .observers
        .watch
        .limits
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = NodeLimits {
        version,
        refused: None,
    };
}

/// Records that a limits file was refused for `error`: logged, counted, and reported beside the version kept.
pub(crate) fn refused(pipeline: &Pipeline, error: &LimitsError) {
    crate::observe::limits_offered("refused");
    tracing::error!(
        %error,
        "rate limiter: limits file refused; the limits in force stay as they were"
    );
    let mut limits = pipeline
        .observers
        .watch
        .limits
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    limits.refused = Some(error.to_string());
}

/// Returns `file` if every policy an annotated function of the binary names is one it defines, or the builder
/// does (`by_builder`): a file that leaves out a policy a function names is refused, so that a typo is an
/// error at start, not a limit no one set.
pub(crate) fn checked(
    path: &Path,
    file: LimitsFile,
    by_builder: impl Fn(&str) -> bool,
) -> Result<LimitsFile, LimitsError> {
    for site in crate::registry::registered() {
        for &(policy, _, _, plan) in site.limits {
            let Some(name) = policy else {
                continue;
            };
            if let Some(plan) =
                plan.filter(|plan| file.policy(name).is_some() && !file.has_plan(name, plan))
            {
                return Err(LimitsError::file(
                    path,
                    crate::error::limits::Kind::Limits,
                    format!(
                        "the function `{}` names the plan {plan:?} of the policy {name:?}, which the limits \
                         file does not define; add `[policies.{name}.plans.{plan}]`",
                        site.function
                    ),
                ));
            }
            if file.policy(name).is_none() && !by_builder(name) {
                return Err(LimitsError::file(
                    path,
                    crate::error::limits::Kind::Limits,
                    format!(
                        "the function `{}` names the policy {name:?}, which the limits file does not \
                         define; add `[policies.{name}]`, or name a policy it defines",
                        site.function
                    ),
                ));
            }
        }
    }
    Ok(file)
}
