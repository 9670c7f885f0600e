//! [`Door`]: what stands before the admin routes. It tells who a request comes from (its client address)
//! and with what power (its token's [`Role`]), limits the failed tokens of each address through the limiter
//! itself, refuses a viewer's change, and puts every change it lets through on the record.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::Router;

use super::api::{self, error};
use super::record::{self, Changed};
use super::tokens::{bearer_token, Tokens};
use super::{bans, Role};
use crate::tower::Key;
use crate::{Limiter, RateLimited, Rule};

/// The admin routes' guard, built by [`Builder`](super::Builder): serves the admin [`router`](Door::router),
/// and [`guard`](Door::guard)s routes of your own behind the same tokens, limit and record. Cloning it is
/// cheap, and clones share everything.
#[derive(Clone)]
pub struct Door {
    pub(super) limiter: Limiter,
    inner: Arc<Inner>,
}

/// What a door's clones share.
struct Inner {
    tokens: Tokens,
    /// Where a request's client address comes from.
    client: Key,
    /// The limit on failed tokens per client address: the door's own rule.
    failed: Rule,
    /// Whether the door has said once that it cannot tell clients apart.
    warned: AtomicBool,
}

/// Who sent a request the door let through: the role of its token, and the client address its failed tokens
/// count under. A route behind [`Door::guard`] finds it in the request's extensions (axum's
/// `Extension<Caller>`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caller {
    /// What its token may do.
    pub role: Role,
    /// Its client address, as the door's [`Key`] found it (`no-client-address` when none could be found).
    pub client: String,
}

/// What every request counts under when the door cannot find its client address: one key for all of them,
/// never none.
const NO_ADDRESS: &str = "no-client-address";

impl Door {
    pub(super) fn new(limiter: Limiter, tokens: Tokens, client: Key, failed: Rule) -> Door {
        let inner = Inner {
            tokens,
            client,
            failed,
            warned: AtomicBool::new(false),
        };
        Door {
            limiter,
            inner: Arc::new(inner),
        }
    }

    /// Returns the admin router, to mount under a prefix of your choice with `nest_service("/admin", ..)` (the page
    /// answers at `/admin` and `/admin/` alike; see [the module](super) for its routes).
    pub fn router(&self) -> Router {
        let api = Router::new()
            .route("/policies", get(api::policies))
            .route("/top", get(api::top))
            .route("/inspect", get(api::inspect))
            .route("/nodes", get(api::nodes))
            .route(
                "/overrides",
                get(api::overrides)
                    .put(api::set_override)
                    .delete(api::clear_override),
            )
            .route("/switch", get(api::switch).put(api::set_switch))
            .route("/limits", get(api::limits).put(api::push_limits))
            .route("/bans", get(bans::bans).put(bans::ban).delete(bans::unban))
            .route("/changes", get(api::changes))
            .route("/role", get(api::role));
        let page =
            Router::new()
                .route("/", get(api::page))
                .route_layer(middleware::from_fn_with_state(
                    self.clone(),
                    Door::admit_to_page,
                ));
        page.nest("/api", self.guard(api)).with_state(self.clone())
    }

    /// Puts `routes` behind this door, as the admin API is: a request needs a token (a viewer's for `GET`, `HEAD`
    /// and `OPTIONS`, the operator's for any other method), its failed tokens count against its address, and
    /// a change answered with a 2xx is put on the record (as its method and target: `POST
    /// /limit/update?prefix=..`). A route finds who sent the request in its extensions ([`Caller`]).
    pub fn guard<S: Clone + Send + Sync + 'static>(&self, routes: Router<S>) -> Router<S> {
        routes.route_layer(middleware::from_fn_with_state(self.clone(), Door::admit))
    }

    /// Admits a request to the page: no token, but an address blocked for its failed tokens is refused it too.
    async fn admit_to_page(State(door): State<Door>, request: Request, next: Next) -> Response {
        let (parts, body) = request.into_parts();
        let client = door.client_of(&parts);
        match door.blocked(&client).await {
            Some(refused) => refused,
            None => next.run(Request::from_parts(parts, body)).await,
        }
    }

    /// Returns the 429 of `client` while its address is blocked for its failed tokens; `None` while it is not (a
    /// call that reads the block and counts nothing).
    async fn blocked(&self, client: &str) -> Option<Response> {
        let checked = self
            .limiter
            .enforce(&self.inner.failed, client)
            .cost(0)
            .await;
        checked.err().map(too_many)
    }

    /// Admits a request to the API, or to a guarded route: see [`guard`](Door::guard).
    async fn admit(State(door): State<Door>, request: Request, next: Next) -> Response {
        let (parts, body) = request.into_parts();
        let client = door.client_of(&parts);
        let mut request = Request::from_parts(parts, body);
        let role = bearer_token(request.headers()).map(|token| door.inner.tokens.role_of(token));
        let role = match role {
            Some(Some(role)) => role,
            failed => return door.failed(&client, failed.is_some()).await,
        };
        // The right token is refused too while its address is blocked.
        if let Some(refused) = door.blocked(&client).await {
            return refused;
        }
        let changes = !matches!(
            *request.method(),
            Method::GET | Method::HEAD | Method::OPTIONS
        );
        if changes && role == Role::Viewer {
            return error(
                StatusCode::FORBIDDEN,
                "the viewer's token may read but not change: this change needs the operator's token",
            );
        }
        let asked = changes.then(|| format!("{} {}", request.method(), target(&request)));
        let caller = Caller { role, client };
        request.extensions_mut().insert(caller.clone());
        let mut response = next.run(request).await;
        if let Some(asked) = asked.filter(|_| response.status().is_success()) {
            let what = match response.extensions_mut().remove::<Changed>() {
                Some(Changed(what)) => what,
                None => asked,
            };
            record::add(&door.limiter, &caller, &what).await;
        }
        response
    }

    /// Answers a request from `client` with no token or a wrong one (`wrong`): counted, and 401 while
    /// its address is within the allowance; 429 past it.
    async fn failed(&self, client: &str, wrong: bool) -> Response {
        if let Err(refused) = self.limiter.enforce(&self.inner.failed, client).await {
            return too_many(refused);
        }
        let why = match wrong {
            true => "wrong token: the bearer token given is not this admin API's",
            false => "a bearer token is required: Authorization: Bearer <token>",
        };
        let mut response = error(StatusCode::UNAUTHORIZED, why);
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        response
    }

    /// Returns the client address of `request`, as the door's key finds it: else its peer's address; else one key
    /// shared by every such request, with an error in the log (once).
    fn client_of(&self, request: &Parts) -> String {
        let client = &self.inner.client;
        if let Some(found) = client.extract(request).or_else(|| client.peer_of(request)) {
            return found.into_owned();
        }
        if !self.inner.warned.swap(true, Ordering::Relaxed) {
            tracing::error!(
                "the admin door finds no client address ({client:?}, and no peer address): every request's \
                 failed tokens count under one key, `{NO_ADDRESS}`. Serve the router with \
                 `into_make_service_with_connect_info::<SocketAddr>()`, or set `Builder::client`."
            );
        }
        NO_ADDRESS.to_owned()
    }
}

/// Returns what a change asked, as the record tells it when its route does not say: its path and query.
fn target(request: &Request) -> String {
    // Under `nest`, the original URI is the full one.
    let uri = request
        .extensions()
        .get::<axum::extract::OriginalUri>()
        .map_or(request.uri(), |original| &original.0);
    uri.path_and_query()
        .map_or_else(|| uri.path().to_owned(), ToString::to_string)
}

/// Answers an address blocked for its failed tokens: 429 with `Retry-After`, and the error as JSON.
fn too_many(refused: RateLimited) -> Response {
    let mut response = error(refused.status(), refused.message());
    response.headers_mut().extend(refused.headers());
    response
}

impl fmt::Debug for Door {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Door")
            .field("client", &self.inner.client)
            .field("failed_tokens", &self.inner.failed)
            .finish_non_exhaustive()
    }
}
