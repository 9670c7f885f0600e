//! [`RateLimitLayer`]: a limiter, the rules a request is decided under, and how its key is found.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use http::request::Parts;
use tower_layer::Layer;

use super::{Key, RateLimitService};
use std::borrow::Borrow;

use crate::call::Ask;
use crate::key::StoreKey;
use crate::limiter::current;
use crate::observe::Notice;
use crate::{Algorithm, Limit, Limiter, Permit, Priority, RateLimited, Rule};

/// A tower [`Layer`] that limits each request under one or more rules, its key taken from the request.
///
/// The handlers behind the layer decide in the layer's limiter too (see
/// [`scope_handlers`](RateLimitLayer::scope_handlers)): give it the limiter you install, and the whole
/// service counts in one.
///
/// The rules of one layer are one decision, as stacked `#[rate_limit]` attributes are: checked in the order
/// given, a request goes through only when every rule admits it, and a refused request is charged to none of
/// them. A request the [`Key`] finds nothing in is counted under its peer's address, unless the layer is told
/// otherwise ([`fallback`](RateLimitLayer::fallback), [`pass_unidentified`](RateLimitLayer::pass_unidentified)).
/// A refused request gets the answer a [`RateLimited`] gives: `429` (or `503` when the limiter
/// cannot decide and fails closed) with `Retry-After` and the quota fields, or, for a gRPC request, the
/// status `RESOURCE_EXHAUSTED` (or `UNAVAILABLE`) with the retry delay in its metadata. A misconfigured rule
/// (a limit of zero) refuses every request as the server's mistake: `500`, or `INTERNAL` over gRPC. A
/// handler's refusal behind the layer (`RateLimited`'s response) is answered in the same format as the layer's own: a
/// `quota-exceeded` problem document for a client that accepts `application/problem+json`.
///
/// The permits of the layer's in-flight rules ([`Rule::in_flight`]) are held until the response body ends,
/// whatever the handler returns.
///
/// Every response from behind the layer carries the quota fields (`RateLimit-Policy`, `RateLimit`) of every
/// limit decided while serving it: the layer's own, and those of the handlers behind it (annotated functions,
/// the plain API), one list member per policy. See [`crate::http`] for the fields.
///
/// Cheap to clone.
pub struct RateLimitLayer {
    config: Arc<Config>,
}

/// What every service of one layer shares.
#[derive(Clone)]
pub(super) struct Config {
    limiter: Limiter,
    /// The rules, resolved against the limiter's defaults (once, and again when its limits file is reloaded).
    rules: Vec<Limit>,
    key: Key,
    unidentified: Unidentified,
    /// When a request the key found nothing in was last told of (at most once a minute).
    told: Arc<Notice>,
    /// Whether the handlers behind the layer decide in its limiter (the default).
    pub(super) scoped: bool,
    /// What a request's priority is (`Normal` for every request, unless set).
    priority: Option<PriorityOf>,
    /// Which plan a request is on (none for every request, unless set).
    plan: Option<PlanOf>,
}

/// A function of a request that says how much it matters.
type PriorityOf = Arc<dyn Fn(&Parts) -> Priority + Send + Sync>;

/// A function of a request that names its plan.
type PlanOf = Arc<dyn Fn(&Parts) -> Option<String> + Send + Sync>;

/// The key every request shares that has no key and no peer address: the server did not record its peers'
/// addresses (axum's `serve` without `into_make_service_with_connect_info`).
pub(super) const NO_PEER: &str = "no-peer-address";

/// What a layer does with a request its key finds nothing in.
#[derive(Debug, Clone)]
enum Unidentified {
    /// Counts it under its peer's address (the default).
    Peer,
    /// Counts it under one key that all such requests share.
    Shared(Cow<'static, str>),
    /// Lets it through, unlimited.
    Pass,
}

impl RateLimitLayer {
    /// Creates a layer deciding with `limiter`, under `rules` (one decision, checked in order), keyed by `key`.
    /// `rules` is an array, a `Vec` or a slice of them: a list read from configuration fits.
    ///
    /// Each rule is resolved once, here, against the limiter's defaults (as [`Limiter::resolve`] does); the
    /// limiter's run-time overrides and switches apply on every request. Give each rule its own prefix, and
    /// a [`policy`](Rule::policy) name for the quota headers.
    pub fn new(
        limiter: &Limiter,
        rules: impl IntoIterator<Item = impl Borrow<Rule>>,
        key: Key,
    ) -> Self {
        let rules = rules
            .into_iter()
            .map(|rule| limiter.resolve(rule.borrow()))
            .collect();
        current::layered(limiter);
        RateLimitLayer {
            config: Arc::new(Config {
                limiter: limiter.clone(),
                rules,
                key,
                unidentified: Unidentified::Peer,
                told: Arc::default(),
                scoped: true,
                priority: None,
                plan: None,
            }),
        }
    }

    /// Sets whether the handlers behind the layer decide in its limiter (default: yes): their `#[rate_limit]`
    /// functions, and [`Limiter::current`], while they serve a request the layer let through, as
    /// [`Limiter::scope`] does. So the layer and the attributes behind it count in one limiter, with its
    /// deadline and `on_error`, even when none was installed. `false` leaves the handlers to the installed
    /// limiter. (Tasks a handler spawns do not inherit the scope: they use the installed limiter.)
    pub fn scope_handlers(mut self, scoped: bool) -> Self {
        Arc::make_mut(&mut self.config).scoped = scoped;
        self
    }

    /// Sets the key of every request the [`Key`] finds nothing in (no such header, a forwarding chain missing or
    /// too short, no peer address, ...): all such requests share one count, instead of each counting under
    /// its peer's address (the default).
    pub fn fallback(mut self, key: impl Into<Cow<'static, str>>) -> Self {
        Arc::make_mut(&mut self.config).unidentified = Unidentified::Shared(key.into());
        self
    }

    /// Sets how much each request matters ([`Priority`]), from its head (a header, its route, an extension an
    /// authentication layer set): a request must leave free the shares its rules
    /// [`reserve`](Rule::reserve) for the priorities above its own. Every request is
    /// [`Normal`](Priority::Normal) unless set. The quota fields of its answer count against its own
    /// ceiling: a `Low` client sees what is left to `Low` calls.
    ///
    /// ```
    /// use limiter_runtime::tower::{Key, RateLimitLayer};
    /// use limiter_runtime::{Limiter, Priority, Rule};
    ///
    /// let rule = Rule::new().prefix("api:").max(100).reserve(Priority::Critical, 20);
    /// let layer = RateLimitLayer::new(&Limiter::in_memory(), [rule], Key::header("x-api-key"))
    ///     .priority(|request| match request.headers.get("x-priority") {
    ///         Some(value) => value.to_str().ok().and_then(|p| p.parse().ok()).unwrap_or_default(),
    ///         None => Priority::Normal,
    ///     });
    /// # let _ = layer;
    /// ```
    pub fn priority(
        mut self,
        priority: impl Fn(&Parts) -> Priority + Send + Sync + 'static,
    ) -> Self {
        Arc::make_mut(&mut self.config).priority = Some(Arc::new(priority));
        self
    }

    /// Names each request's plan ([`Plan`](crate::Plan)), from its head (an extension an authentication layer
    /// set, a header): each value the plan of that name sets, of a rule's plans, replaces the rule's for the
    /// request (see [`Request::plan`](crate::Request::plan)); `None` leaves it on the rule's own values. The
    /// quota fields name the plan (`plan="pro"`).
    ///
    /// ```
    /// use limiter_runtime::tower::{Key, RateLimitLayer};
    /// use limiter_runtime::{Limiter, Plan, Rule};
    ///
    /// #[derive(Clone)]
    /// struct Tenant {
    ///     plan: String,
    /// }
    ///
    /// let rule = Rule::new().prefix("api:").max(100).plan("pro", Plan::new().max(1_000));
    /// let layer = RateLimitLayer::new(&Limiter::in_memory(), [rule], Key::header("x-api-key"))
    ///     .plan(|request| request.extensions.get::<Tenant>().map(|tenant| tenant.plan.clone()));
    /// # let _ = layer;
    /// ```
    pub fn plan(mut self, plan: impl Fn(&Parts) -> Option<String> + Send + Sync + 'static) -> Self {
        Arc::make_mut(&mut self.config).plan = Some(Arc::new(plan));
        self
    }

    /// Lets every request the [`Key`] finds nothing in through, unlimited, instead of counting it under its
    /// peer's address (the default). Each is still counted in the metric
    /// `limiter_unidentified_requests_total` (`outcome = "passed"`) and told of in a warning at most once a
    /// minute.
    pub fn pass_unidentified(mut self) -> Self {
        Arc::make_mut(&mut self.config).unidentified = Unidentified::Pass;
        self
    }
}

impl Config {
    /// Returns the plan `request` is on: as the layer's function says, else none.
    pub(super) fn plan_of(&self, request: &Parts) -> Option<String> {
        self.plan.as_ref().and_then(|plan| plan(request))
    }

    /// Returns how much `request` matters: as the layer's function says, else `Normal`.
    pub(super) fn priority_of(&self, request: &Parts) -> Priority {
        self.priority
            .as_ref()
            .map_or(Priority::Normal, |priority| priority(request))
    }

    /// Returns the key of `request`: what the [`Key`] finds; else its peer's address, the fallback key, or none (not
    /// limited, only with [`pass_unidentified`](RateLimitLayer::pass_unidentified)), as the layer says, each
    /// counted and told of. A request with no peer address either counts under [`NO_PEER`], with an error in
    /// the log: a server that records no peer address never turns a per-IP limit off.
    pub(super) fn key_of(&self, request: &Parts) -> Option<String> {
        if let Some(key) = self.key.extract(request) {
            return Some(key.into_owned());
        }
        let (key, outcome, then) = match &self.unidentified {
            Unidentified::Peer => match self.key.peer_of(request) {
                Some(peer) => (
                    Some(peer.into_owned()),
                    "peer",
                    "counted it under its peer's address",
                ),
                None => (Some(NO_PEER.to_owned()), "no_peer", ""),
            },
            Unidentified::Shared(key) => (
                Some(key.to_string()),
                "fallback",
                "counted it under the layer's fallback key",
            ),
            Unidentified::Pass => (None, "passed", "let it through (pass_unidentified)"),
        };
        let policy = self.rules.first().map(|limit| limit.rule.policy_name());
        let policy = policy.as_deref().unwrap_or("");
        crate::observe::unidentified(policy, outcome);
        if !self.told.due() {
            return key;
        }
        if outcome == "no_peer" {
            tracing::error!(
                policy,
                key = ?self.key,
                "rate limiter: the server records no peer address, so the layer cannot tell clients apart: \
                 every such request counts under one shared key, {NO_PEER:?}, as one client. Serve the app \
                 with its peers' addresses: axum::serve(listener, \
                 app.into_make_service_with_connect_info::<std::net::SocketAddr>()) (told at most once a \
                 minute; the metric limiter_unidentified_requests_total counts each, outcome = \"no_peer\")",
            );
        } else {
            tracing::warn!(
                policy,
                key = ?self.key,
                "rate limiter: a request's key was not found ({}); the layer {then} (told at most once a \
                 minute; the metric limiter_unidentified_requests_total counts each)",
                self.key.describe(),
            );
        }
        key
    }

    /// Returns the limiter the layer decides in.
    pub(super) fn limiter(&self) -> &Limiter {
        &self.limiter
    }

    /// Decides a request keyed `key` under every rule, as one call of the pipeline: admitted (after its slot,
    /// for a leaky bucket that waits), with the permits of its limits in flight when it has any (held until
    /// the response's body is done), or refused.
    pub(super) async fn decide(
        &self,
        key: &str,
        priority: Priority,
        plan: Option<&str>,
    ) -> Result<Option<Permit>, RateLimited> {
        let pipeline = &self.limiter.pipeline;
        let call = pipeline.call(self.rules.iter().map(|limit| {
            let rule = limit.current();
            let key = StoreKey::of_str(rule.prefix_value(), key);
            Ask::of(rule, key, 1, priority).on_plan(plan)
        }));
        let (call, decided) = self.limiter.admit(call, priority).await?;
        let in_flight = self
            .rules
            .iter()
            .any(|limit| limit.rule.algorithm == Some(Algorithm::InFlight));
        Ok(in_flight.then(|| Permit::new(self.limiter.clone(), call.detached(), decided)))
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimitService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimitService::new(inner, Arc::clone(&self.config))
    }
}

impl Clone for RateLimitLayer {
    fn clone(&self) -> Self {
        RateLimitLayer {
            config: Arc::clone(&self.config),
        }
    }
}

impl fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.config, f)
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("rules", &self.rules)
            .field("key", &self.key)
            .field("unidentified", &self.unidentified)
            .finish()
    }
}
