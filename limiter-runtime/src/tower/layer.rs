//! [`RateLimitLayer`]: a limiter, the rules a request is decided under, and how its key is found.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use http::request::Parts;
use tower_layer::Layer;

use super::{Key, RateLimitService};
use crate::decide::{Decided, Request};
use crate::key::StoreKey;
use crate::{Limiter, RateLimited, Rule};

/// A tower [`Layer`] that limits each request under one or more rules, its key taken from the request.
///
/// The rules of one layer are one decision, as stacked `#[rate_limit]` attributes are: checked in the order
/// given, a request goes through only when every rule admits it, and a refused request is charged to none of
/// them. A request the [`Key`] finds nothing in is not limited, unless a [`fallback`](RateLimitLayer::fallback)
/// key is set. A refused request gets the answer a [`RateLimited`] gives: `429` (or `503` when the limiter
/// cannot decide and fails closed) with `Retry-After` and the quota fields, or, for a gRPC request, the
/// status `RESOURCE_EXHAUSTED` (or `UNAVAILABLE`) with the retry delay in its metadata.
///
/// Every response from behind the layer carries the quota fields (`RateLimit-Policy`, `RateLimit`) of every
/// limit decided while serving it: the layer's own, and those of the handlers behind it (annotated functions,
/// the plain API), one list member per policy. See [`crate::http`] for the fields.
///
/// `N` is the number of rules. Cheap to clone.
pub struct RateLimitLayer<const N: usize = 1> {
    config: Arc<Config<N>>,
}

/// What every service of one layer shares.
#[derive(Clone)]
pub(super) struct Config<const N: usize> {
    limiter: Limiter,
    /// The rules, resolved once against the limiter's defaults, every part set.
    rules: [Rule; N],
    key: Key,
    fallback: Option<Cow<'static, str>>,
}

impl<const N: usize> RateLimitLayer<N> {
    /// A layer deciding with `limiter`, under `rules` (one decision, checked in order), keyed by `key`.
    ///
    /// Each rule is resolved once, here, against the limiter's defaults (as [`Limiter::limit`] does); the
    /// limiter's run-time overrides and switches apply on every request. Give each rule its own prefix, and
    /// a [`name`](Rule::name) for the quota headers.
    pub fn new(limiter: &Limiter, rules: [Rule; N], key: Key) -> Self {
        let rules = rules.map(|rule| limiter.inner.defaults.resolve(&rule, "").completed());
        RateLimitLayer {
            config: Arc::new(Config {
                limiter: limiter.clone(),
                rules,
                key,
                fallback: None,
            }),
        }
    }

    /// The key of a request the [`Key`] finds nothing in (no peer address, no such header, a malformed
    /// `Forwarded`, ...): all such requests share one count. Without it, such a request is not limited.
    pub fn fallback(mut self, key: impl Into<Cow<'static, str>>) -> Self {
        Arc::make_mut(&mut self.config).fallback = Some(key.into());
        self
    }
}

impl<const N: usize> Config<N> {
    /// The key of `request`: what the [`Key`] finds, else the fallback, else none (not limited).
    pub(super) fn key_of(&self, request: &Parts) -> Option<String> {
        match self.key.extract(request) {
            Some(key) => Some(key.into_owned()),
            None => self.fallback.as_deref().map(str::to_owned),
        }
    }

    /// Decides a request keyed `key` under every rule, as one call of the pipeline: admitted (after its slot,
    /// for a leaky bucket that waits), or refused.
    pub(super) async fn decide(&self, key: &str) -> Result<(), RateLimited> {
        let keys: [StoreKey; N] =
            std::array::from_fn(|i| StoreKey::of_str(self.rules[i].prefix_value(), key));
        let batch: [Request<'_, '_>; N] =
            std::array::from_fn(|i| Request::new(&self.rules[i], keys[i].parts(), 1));
        self.limiter.enforce_batch(&batch, ignore).await
    }
}

/// What an admitted request keeps of its decision: nothing (the quotas were recorded on the way).
fn ignore<const N: usize>(_: Decided<N>) {}

impl<S, const N: usize> Layer<S> for RateLimitLayer<N> {
    type Service = RateLimitService<S, N>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService::new(inner, Arc::clone(&self.config))
    }
}

impl<const N: usize> Clone for RateLimitLayer<N> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            config: Arc::clone(&self.config),
        }
    }
}

impl<const N: usize> fmt::Debug for RateLimitLayer<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.config, f)
    }
}

impl<const N: usize> fmt::Debug for Config<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("rules", &self.rules)
            .field("key", &self.key)
            .field("fallback", &self.fallback)
            .finish()
    }
}
