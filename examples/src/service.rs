//! The sources' employee service over HTTP (axum), every limit one global count in Redis.
//!
//! | route | limit |
//! |---|---|
//! | `GET /api/test` | 10 per second for everybody: one shared bucket |
//! | `GET /employees/{id}` | 5 per 10 s per employee, with its own message |
//! | `GET /whoami` | 100 per minute per client IP |
//! | `POST /login/{user}` (the body: the password) | 5 failures per 15 min per user; the sixth blocks the user for 1 min, then 2, 4, ... up to 1 h, on every instance |
//! | `POST /limit/update?prefix=..&key=..&threshold=..&window=..` | an operator's override (`key`, `window` optional; no `threshold` and no `window` clears it) |
//! | `POST /limit/enabled?enabled=false` | switches limiting off on every instance (and `true` on again); `&scope=here` on this one alone |
//! | `/admin/` | the operators' live page and its JSON API (`limiter_runtime::admin`) |
//!
//! In front of the public routes, a tower layer limits each client (its IP address) to 60 requests a minute,
//! on top of each route's own limit, and every response says where both stand: the IETF `RateLimit-Policy`
//! and `RateLimit` fields, one member per policy (`per-client`, and the route's: `api`, `employee`,
//! `whoami`, `login`). A rejection is the `RateLimited` error itself: 429 with `Retry-After` and those fields (503 when
//! Redis is down and a limit fails closed).
//!
//! The `/limit/*` and `/admin/api/*` routes are the operators': they require `Authorization: Bearer <token>`,
//! the token set in `ADMIN_TOKEN` (at least 8 characters), without which the service refuses to start.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{rate_limit, Limiter, Override, RateLimited, Rule};
use serde_json::{json, Value};

/// The token the operators' routes require: at least 8 characters.
#[derive(Clone)]
pub struct AdminToken(Arc<str>);

impl AdminToken {
    /// The token in `ADMIN_TOKEN`: the service refuses to start without one.
    pub fn from_env() -> Result<AdminToken, limiter_runtime::Error> {
        AdminToken::new(std::env::var("ADMIN_TOKEN").unwrap_or_default())
    }

    /// `token`, if it is one: at least 8 characters (the operators' routes change limits for every instance).
    pub fn new(token: impl Into<String>) -> Result<AdminToken, limiter_runtime::Error> {
        let token = token.into();
        match token.trim().len() >= 8 {
            true => Ok(AdminToken(token.trim().into())),
            false => Err(limiter_runtime::Error::InvalidAdminToken),
        }
    }

    /// Whether `authorization` (the request's header) presents the token.
    fn admits(&self, authorization: &str) -> bool {
        let presented = authorization.strip_prefix("Bearer ").unwrap_or_default();
        // Every byte compared, whatever the first difference: how long a refusal takes tells nothing.
        presented.len() == self.0.len()
            && presented
                .bytes()
                .zip(self.0.bytes())
                .fold(0, |diff, (a, b)| diff | (a ^ b))
                == 0
    }
}

/// The service's routes, deciding with `limiter` (each instance of the service may have its own); the
/// operators' routes (`/limit/*`, and the admin router at `/admin`) require `admin`.
pub fn app(limiter: Limiter, admin: AdminToken) -> Router {
    let page = limiter_runtime::admin::router(limiter.clone(), &*admin.0)
        .expect("an AdminToken is a valid admin token");
    let operators = Router::new()
        .route("/limit/update", post(update_limit))
        .route("/limit/enabled", post(set_enabled))
        .route_layer(middleware::from_fn_with_state(admin, require_admin));
    // Clients connect directly: the peer's address is the client's. Behind a proxy that appends to
    // X-Forwarded-For, `Key::x_forwarded_for(1)` would be.
    let per_client = Rule::new()
        .prefix("rate_limit:client:")
        .name("per-client")
        .max(60)
        .window(Duration::from_secs(60));
    let public = Router::new()
        .route("/api/test", get(api_test))
        .route("/employees/{id}", get(employee))
        .route("/whoami", get(whoami))
        .route("/login/{user}", post(login))
        // The layer's limiter is the handlers' too: one count for the service.
        .layer(RateLimitLayer::new(&limiter, [per_client], Key::peer_ip()));
    public
        .merge(operators)
        .with_state(limiter)
        // Not `nest`: it would serve the page at `/admin` alone, and `/admin/` would be a 404.
        .nest_service("/admin", page)
}

/// Lets a request through to an operators' route only with the admin token: 401 without it or with another.
async fn require_admin(State(admin): State<AdminToken>, request: Request, next: Next) -> Response {
    let authorization = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    if !admin.admits(authorization) {
        return (
            StatusCode::UNAUTHORIZED,
            [(WWW_AUTHENTICATE, "Bearer")],
            "the operators' routes require `Authorization: Bearer <ADMIN_TOKEN>`",
        )
            .into_response();
    }
    next.run(request).await
}

#[rate_limit(prefix = "rate_limit:api:", name = "api", max = 10, window = 1)]
async fn api_test() -> Result<&'static str, RateLimited> {
    Ok("success")
}

#[rate_limit(prefix = "rate_limit:emp:", name = "employee", key = id, window = 10, max = 5, message = "slow down, have a cup of tea")]
async fn employee(Path(id): Path<String>) -> Result<Json<Value>, RateLimited> {
    Ok(Json(json!({ "id": id, "name": "Ada Lovelace" })))
}

#[rate_limit(prefix = "rate_limit:ip:", name = "whoami", key = client.ip(), max = 100, window = "1m")]
async fn whoami(ConnectInfo(client): ConnectInfo<SocketAddr>) -> Result<String, RateLimited> {
    Ok(client.ip().to_string())
}

/// Why a login failed: the password (401), or the limit (its refusal: 429, `Retry-After` the block's
/// remaining time once the user is blocked).
#[derive(Debug)]
pub enum LoginError {
    /// Not the user's password: counted.
    WrongPassword,
    /// Refused by the limit, or blocked by its penalty.
    Limited(RateLimited),
}

impl From<RateLimited> for LoginError {
    fn from(refused: RateLimited) -> Self {
        LoginError::Limited(refused)
    }
}

impl IntoResponse for LoginError {
    fn into_response(self) -> Response {
        match self {
            LoginError::WrongPassword => {
                (StatusCode::UNAUTHORIZED, "wrong password").into_response()
            }
            LoginError::Limited(refused) => refused.into_response(),
        }
    }
}

/// Failures count, successes are free; a user that fails a sixth time is blocked for a while, everywhere.
#[rate_limit(prefix = "rate_limit:login:", name = "login", key = user, max = 5, window = "15m", count = failures, penalty = "1m..1h")]
async fn login(Path(user): Path<String>, password: String) -> Result<&'static str, LoginError> {
    match password == "hunter2" {
        true => Ok("welcome"),
        false => Err(LoginError::WrongPassword),
    }
}

/// `POST /limit/update`: sets (or, with neither `threshold` nor `window`, clears) an override for every
/// instance.
async fn update_limit(
    State(limiter): State<Limiter>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let Some(prefix) = params.get("prefix") else {
        return (StatusCode::BAD_REQUEST, "`prefix` is required").into_response();
    };
    let mut change = match params.get("key") {
        Some(key) => Override::key(prefix.as_str(), key),
        None => Override::prefix(prefix.as_str()),
    };
    let threshold = params.get("threshold").map(|t| t.parse::<u64>());
    let window = params.get("window").map(|w| w.parse::<u64>());
    let result = match (threshold, window) {
        (Some(Err(_)), _) | (_, Some(Err(_))) => {
            return (
                StatusCode::BAD_REQUEST,
                "`threshold` and `window` (seconds) are whole numbers",
            )
                .into_response()
        }
        (None, None) => limiter.clear_override(&change).await,
        (threshold, window) => {
            if let Some(Ok(max)) = threshold {
                change = change.max(max);
            }
            if let Some(Ok(secs)) = window {
                change = change.window(Duration::from_secs(secs));
            }
            limiter.set_override(change).await
        }
    };
    match result {
        Ok(()) => Json(json!({ "overrides": limiter.overrides().len() })).into_response(),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response(),
    }
}

/// `POST /limit/enabled?enabled=false`: the switch of every instance sharing the Redis, for a Redis under
/// pressure or an incident; with `&scope=here`, this instance's own switch, for when Redis itself is the
/// problem.
async fn set_enabled(
    State(limiter): State<Limiter>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    let Some(Ok(enabled)) = params.get("enabled").map(|v| v.parse::<bool>()) else {
        return (StatusCode::BAD_REQUEST, "`enabled` is true or false").into_response();
    };
    let result = match params.get("scope").map(String::as_str) {
        None | Some("everywhere") => limiter.set_enabled(enabled).await,
        Some("here") => {
            limiter.set_enabled_here(enabled);
            Ok(())
        }
        Some(_) => {
            return (StatusCode::BAD_REQUEST, "`scope` is everywhere or here").into_response()
        }
    };
    match result {
        Ok(()) => Json(json!({ "enabled": limiter.is_enabled() })).into_response(),
        Err(error) => (StatusCode::SERVICE_UNAVAILABLE, error.to_string()).into_response(),
    }
}
