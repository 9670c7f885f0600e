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
//! The `/limit/*` and `/admin/api/*` routes are the operators': they stand behind the admin door
//! (`limiter_runtime::admin::Door`), which wants `Authorization: Bearer <token>`: the token set in
//! `ADMIN_TOKEN` (at least 16 characters), without which the service refuses to start, or for reading alone
//! the one in `ADMIN_VIEWER_TOKEN`. An address that keeps sending wrong tokens is answered 429 for a while,
//! and every change made through the door is on its record (`/admin/api/changes`).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{admin, rate_limit, Limiter, Override, RateLimited, Rule};
use serde_json::{json, Value};

/// The operators' door: `ADMIN_TOKEN` the operator's token (the service refuses to start without one), and
/// `ADMIN_VIEWER_TOKEN`, if set, a viewer's (read only); each at least 16 characters (`openssl rand -hex
/// 16`). Failed tokens are limited per client address (clients connect directly: the peer's address).
pub fn door_from_env(limiter: &Limiter) -> Result<admin::Door, limiter_runtime::Error> {
    let mut door = admin::builder(limiter.clone())
        .operator_token(std::env::var("ADMIN_TOKEN").unwrap_or_default());
    if let Ok(viewer) = std::env::var("ADMIN_VIEWER_TOKEN") {
        door = door.viewer_token(viewer);
    }
    door.build()
}

/// The service's routes, deciding with `limiter` (each instance of the service may have its own); the
/// operators' routes (`/limit/*`, and the admin router at `/admin`) stand behind `door`.
pub fn app(limiter: Limiter, door: admin::Door) -> Router {
    let operators = door.guard(
        Router::new()
            .route("/limit/update", post(update_limit))
            .route("/limit/enabled", post(set_enabled)),
    );
    // Clients connect directly: the peer's address is the client's. Behind a proxy that appends to
    // X-Forwarded-For, `Key::x_forwarded_for(1)` would be.
    let per_client = Rule::new()
        .prefix("rate_limit:client:")
        .policy("per-client")
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
        .nest_service("/admin", door.router())
}

#[rate_limit(prefix = "rate_limit:api:", policy = "api", max = 10, window = 1)]
async fn api_test() -> Result<&'static str, RateLimited> {
    Ok("success")
}

#[rate_limit(prefix = "rate_limit:emp:", policy = "employee", key = id, window = 10, max = 5, message = "slow down, have a cup of tea")]
async fn employee(Path(id): Path<String>) -> Result<Json<Value>, RateLimited> {
    Ok(Json(json!({ "id": id, "name": "Ada Lovelace" })))
}

#[rate_limit(prefix = "rate_limit:ip:", policy = "whoami", key = client.ip(), max = 100, window = "1m")]
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
#[rate_limit(prefix = "rate_limit:login:", policy = "login", key = user, max = 5, window = "15m", count = failures, penalty = "1m..1h")]
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
        None => Override::policy(prefix.as_str()),
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
