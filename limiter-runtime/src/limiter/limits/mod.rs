//! The limits file while the limiter runs: watched where this node reads one, pushed to every node through
//! Redis, and applied wherever it comes from by one function ([`crate::limits::offer`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

mod offer;

pub(crate) use self::offer::{checked, put_in_force, version_of};
use self::offer::{offer, refused, Offered};
use crate::limits;
use crate::overrides::Change;
use crate::pipeline::Pipeline;
use crate::{Error, Limiter};

/// How often a limits file is looked at: a change applies everywhere within a second.
const EVERY: Duration = Duration::from_millis(250);

/// What names a pushed file in its errors when this node reads none.
const PUSHED: &str = "limits.toml (pushed)";

impl Limiter {
    /// Puts the limits in `text` (a limits file's content: see
    /// [`LimiterBuilder::limits_file`](crate::LimiterBuilder::limits_file)) in force on every node of the service:
    /// read and checked here first (a mistake is [`Error::Limits`], naming the line and column, and changes
    /// nothing anywhere), then stored in Redis and announced, applied by each node within a second, and here
    /// at once. Returns its version (the first 8 hex digits of the text's SHA-1), which each node reports
    /// ([`Overview::nodes`](crate::Overview::nodes)). Redis failing, nothing changes anywhere: the error says
    /// so. In memory, it applies to this limiter. The admin API's `PUT /api/limits` calls it.
    ///
    /// The same text pushed again changes nothing: no count reset, no bucket refilled.
    pub async fn push_limits(&self, text: &str) -> Result<String, Error> {
        let pipeline = &self.pipeline;
        let path = limits_path(pipeline);
        let defaults = pipeline.defaults.load();
        let file = limits::LimitsFile::parse(&path, text)?;
        checked(&path, file, |name| defaults.defined_by_builder(name))?;
        drop(defaults);
        self.change(Change::Limits(text.to_owned())).await?;
        Ok(version_of(text))
    }

    /// Returns the version of the limits file in force on this node (the first 8 hex digits of its text's
    /// SHA-1), if it reads one; and why the last one offered to it was refused, if one was since.
    pub fn limits_version(&self) -> (Option<String>, Option<String>) {
        let limits = self
            .pipeline
            .observers
            .watch
            .limits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        (
            Some(limits.version).filter(|v| !v.is_empty()),
            limits.refused,
        )
    }

    /// Returns every policy this limiter knows before any call of it, when it defines policies (a limits file,
    /// the builder's): those the annotated functions of the binary name (or whose prefix names them), those
    /// the file defines and those the builder does, each as `(name, prefix)`, resolved against the defaults in
    /// force, once each. None for a limiter that defines none (the functions of the binary may be another
    /// limiter's).
    pub(crate) fn known_policies(&self) -> Vec<(String, String)> {
        let defaults = self.pipeline.defaults.load();
        if defaults.defined().next().is_none() {
            return Vec::new();
        }
        let sites = crate::registry::registered().flat_map(|site| {
            site.rules()
                .map(|rule| defaults.resolve(&rule, site.module))
        });
        let defined = defaults
            .defined()
            .map(|name| defaults.resolve(&crate::Rule::new().policy(name.to_owned()), ""));
        let mut known: Vec<(String, String)> = sites
            .chain(defined)
            .map(|rule| {
                (
                    rule.policy_name().to_string(),
                    rule.prefix_value().to_owned(),
                )
            })
            .collect();
        known.sort();
        known.dedup();
        known
    }

    /// Makes each limits file pushed through Redis apply here (as a file read here does).
    pub(super) fn apply_pushed_limits(&self) {
        let pipeline: Weak<Pipeline> = Arc::downgrade(&self.pipeline);
        self.pipeline.overrides.pushed.on_push(move |text| {
            if let Some(pipeline) = pipeline.upgrade() {
                let _ = offer(&pipeline, &limits_path(&pipeline), text);
            }
        });
    }

    /// Watches the limits file at `path`, every quarter of a second, from now (within a Tokio runtime; else it
    /// is read once, and says so): each change is applied here and pushed to every node.
    pub(super) fn watch_limits(&self, path: PathBuf) {
        let _ = self.pipeline.limits_file.set(path.clone());
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                path = %path.display(),
                "rate limiter: the limiter was built outside a Tokio runtime: its limits file is read once, \
                 not watched"
            );
            return;
        };
        let (mut readings, _task) = limits::watch(&runtime, path.clone(), EVERY);
        let limiter = Arc::downgrade(&self.pipeline);
        runtime.spawn(async move {
            // The first reading is the file the limiter was built with: pushed, so that the fleet takes it.
            let mut first = true;
            loop {
                if !first && readings.changed().await.is_err() {
                    return;
                }
                first = false;
                let reading = readings.borrow_and_update().clone();
                let Some(pipeline) = limiter.upgrade() else {
                    return;
                };
                let limiter = Limiter { pipeline };
                match reading {
                    Ok(read) => limiter.took(&path, &read.text).await,
                    Err(error) => refused(&limiter.pipeline, &error),
                }
            }
        });
    }

    /// Applies `text`, read from the file at `path`, here, and pushes it to every node: Redis failing, it applies
    /// here alone, and says so.
    async fn took(&self, path: &Path, text: &str) {
        if !self.pipeline.backend.is_shared() {
            let _ = offer(&self.pipeline, path, text);
            return;
        }
        if let Ok(Offered::Applied(_) | Offered::Unchanged(_)) = offer(&self.pipeline, path, text) {
            if let Err(error) = self.change(Change::Limits(text.to_owned())).await {
                tracing::warn!(
                    %error,
                    path = %path.display(),
                    "rate limiter: the limits file applies here, but could not be pushed to the other nodes"
                );
            }
        }
    }
}

/// Returns what names a limits file in the errors of this node: its own file's path, else a pushed file's name.
fn limits_path(pipeline: &Pipeline) -> PathBuf {
    match pipeline.limits_file.get() {
        Some(path) => path.clone(),
        None => PathBuf::from(PUSHED),
    }
}
