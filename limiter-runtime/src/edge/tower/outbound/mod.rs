//! A tower layer for *clients* (feature `tower`): [`OutboundLayer`] makes every request through a
//! `Service<http::Request<B>>` (a hyper-util client, a tonic channel) wait its turn under an upstream's limit,
//! fleet-wide, then sends it, reads the answer, tells the fleet what it learned, and settles the tokens it
//! used. See [`guide::outbound`](crate::guide::outbound).
//!
//! ```
//! use std::time::Duration;
//!
//! use limiter_runtime::tower::OutboundLayer;
//! use limiter_runtime::{Algorithm, Limiter, Rule};
//!
//! let limiter = Limiter::in_memory();
//! let partner = Rule::new()
//!     .prefix("partner:")
//!     .algorithm(Algorithm::LeakyBucket)
//!     .max(10)
//!     .window(Duration::from_secs(1))
//!     .max_wait(Duration::from_secs(30));
//! // One line per host the client calls.
//! let layer = OutboundLayer::by_host(&limiter, partner);
//! // tower::ServiceBuilder::new().layer(layer).service(client)
//! # let _ = layer;
//! ```

mod error;
mod service;

use std::fmt;
use std::sync::Arc;

use tower_layer::Layer;

pub use self::error::OutboundError;
pub use self::service::{Outbound, OutboundFuture};
use crate::{Limiter, Priority, Rule};

/// What picks a request's key.
type KeyFn = dyn Fn(&http::request::Parts) -> String + Send + Sync;

/// The tokens a request spends beside it: their rule, the estimate reserved, and what the answer says was
/// used.
#[derive(Clone)]
pub(super) struct Tokens {
    pub(super) rule: Rule,
    pub(super) estimate: fn(&http::request::Parts) -> u64,
    pub(super) used: fn(&http::response::Parts) -> Option<u64>,
}

/// What every request through the layer shares.
pub(super) struct Config {
    pub(super) limiter: Limiter,
    pub(super) rule: Rule,
    pub(super) key: Box<KeyFn>,
    pub(super) priority: Option<fn(&http::request::Parts) -> Priority>,
    pub(super) tokens: Option<Tokens>,
}

/// A layer that makes a client's requests wait their turn under an upstream's limit, shared by every node
/// (see the [module](self)).
#[derive(Clone)]
pub struct OutboundLayer {
    config: Arc<Config>,
}

impl OutboundLayer {
    /// Limits requests under `rule` (a [`LeakyBucket`](crate::Algorithm::LeakyBucket) with a
    /// [`max_wait`](Rule::max_wait): the upstream's published limit and each request's deadline), each keyed
    /// by `key` of the request (an organisation, an API key's name).
    pub fn new(
        limiter: &Limiter,
        rule: Rule,
        key: impl Fn(&http::request::Parts) -> String + Send + Sync + 'static,
    ) -> Self {
        OutboundLayer {
            config: Arc::new(Config {
                limiter: limiter.clone(),
                rule,
                key: Box::new(key),
                priority: None,
                tokens: None,
            }),
        }
    }

    /// Limits requests under `rule`, keyed by the host they go to (the URI's, else the `Host` header).
    pub fn by_host(limiter: &Limiter, rule: Rule) -> Self {
        OutboundLayer::new(limiter, rule, |parts| {
            parts
                .uri
                .host()
                .map(str::to_owned)
                .or_else(|| {
                    let host = parts.headers.get(http::header::HOST)?;
                    host.to_str().ok().map(str::to_owned)
                })
                .unwrap_or_default()
        })
    }

    /// Makes each request's [`Priority`] `priority` of it: on each node, the slots that come go to the most
    /// important request waiting.
    pub fn priority(self, priority: fn(&http::request::Parts) -> Priority) -> Self {
        self.with(|config| config.priority = Some(priority))
    }

    /// Makes each request also spend tokens under `rule` (keyed as the request): `estimate` of the request
    /// reserved before it goes, settled to what `used` reads of the answer (the estimate, when it reads
    /// nothing).
    pub fn tokens(
        self,
        rule: Rule,
        estimate: fn(&http::request::Parts) -> u64,
        used: fn(&http::response::Parts) -> Option<u64>,
    ) -> Self {
        self.with(|config| {
            config.tokens = Some(Tokens {
                rule,
                estimate,
                used,
            })
        })
    }

    fn with(self, change: impl FnOnce(&mut Config)) -> Self {
        let mut config = Arc::try_unwrap(self.config).unwrap_or_else(|shared| Config {
            limiter: shared.limiter.clone(),
            rule: shared.rule.clone(),
            key: Box::new({
                let shared = Arc::clone(&shared);
                move |parts: &http::request::Parts| (shared.key)(parts)
            }),
            priority: shared.priority,
            tokens: shared.tokens.clone(),
        });
        change(&mut config);
        OutboundLayer {
            config: Arc::new(config),
        }
    }
}

impl<S> Layer<S> for OutboundLayer {
    type Service = Outbound<S>;

    fn layer(&self, inner: S) -> Outbound<S> {
        Outbound::new(inner, Arc::clone(&self.config))
    }
}

impl fmt::Debug for OutboundLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutboundLayer")
            .field("rule", &self.config.rule)
            .field("tokens", &self.config.tokens.as_ref().map(|t| &t.rule))
            .finish_non_exhaustive()
    }
}
