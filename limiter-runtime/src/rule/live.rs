//! The defaults and policies in force: replaced whole when the limits file is reloaded, read without a lock.
//! Each replacement moves a generation, so that what resolved a rule once (an annotated function, a
//! [`Limit`](crate::Limit), a layer) knows to resolve it again.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};

use super::{Defaults, Rule};

/// The limiter's [`Defaults`], as in force now.
#[derive(Debug)]
pub(crate) struct Live {
    /// The defaults it was built with, read in place (no swap to load) until they are first replaced: a
    /// limiter that reads no limits file never loads the swap on its hot path.
    first: Defaults,
    current: ArcSwap<Defaults>,
    /// Whether they were replaced since: then `current` is read.
    replaced: AtomicBool,
    /// How many times they were replaced.
    generation: AtomicU64,
}

impl Live {
    pub(crate) fn new(defaults: Defaults) -> Live {
        Live {
            first: defaults.clone(),
            current: ArcSwap::from_pointee(defaults),
            replaced: AtomicBool::new(false),
            generation: AtomicU64::new(0),
        }
    }

    /// Returns the defaults in force.
    #[inline]
    pub(crate) fn load(&self) -> Guard<Arc<Defaults>> {
        self.current.load()
    }

    /// Returns how many times the defaults were replaced: a rule resolved at another generation is resolved
    /// again.
    #[inline]
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Returns `rule` as written in `module`, resolved against the defaults in force ([`Defaults::resolve`]).
    pub(crate) fn resolve(&self, rule: &Rule, module: &str) -> Rule {
        match self.replaced.load(Ordering::Acquire) {
            false => self.first.resolve(rule, module),
            true => self.load().resolve(rule, module),
        }
    }

    /// Returns a rule of the plain API, resolved against the defaults in force ([`Defaults::resolved`]).
    #[inline]
    pub(crate) fn resolved<'r>(&self, rule: &'r Rule) -> Cow<'r, Rule> {
        match self.replaced.load(Ordering::Acquire) {
            false => self.first.resolved(rule),
            true => self.load().resolved(rule),
        }
    }

    /// Replaces the defaults with what `change` makes of them, and moves the generation.
    pub(crate) fn replace(&self, change: impl FnOnce(&Defaults) -> Defaults) {
        let next = change(&self.load());
        self.current.store(Arc::new(next));
        self.replaced.store(true, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}
