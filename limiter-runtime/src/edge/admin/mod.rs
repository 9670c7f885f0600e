//! The operators' admin router (feature `admin`, axum 0.8): JSON under one prefix, behind a bearer token,
//! and a live page.
//!
//! ```no_run
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! use limiter_runtime::{admin, Limiter};
//!
//! let limiter = Limiter::builder().redis("redis://127.0.0.1/").build()?;
//! let token = std::env::var("ADMIN_TOKEN")?;
//! let app = axum::Router::new().nest_service("/admin", admin::router(limiter, token)?);
//! # let _: axum::Router = app; Ok(()) }
//! ```
//!
//! | route | answers |
//! |---|---|
//! | `GET /` | (`/admin` and `/admin/`, mounted as above) the live page: one HTML page, its script inline, updated every second (no token in its URL: it asks for it once, and keeps it in the tab's session storage) |
//! | `GET /api/policies` | `[{"policy", "prefix", "decided_per_s", "refused_per_s", "decided", "refused", "busiest": [{"key", "decided"}]}]`, for the whole service |
//! | `GET /api/top?n=10` | the most refused keys over the last minute, `[{"policy", "key", "refused"}]`, highest first (n at most 100) |
//! | `GET /api/inspect?policy=P&key=K` | a key's state ([`Limiter::inspect`]), `{"policy", "key", "limit", "window_ms", "used", "remaining", "retry_after_ms", "reset_after_ms", "in_flight", "deny_cached", "blocked_ms", "banned", "offences"}`; under the policy as the node that decided it counts it (this one, or another, from its report through Redis); 404 for a policy no node has used |
//! | `GET /api/nodes` | `[{"node", "this", "store", "redis", "degraded", "enabled", "seen_ms_ago"}]` |
//! | `GET`, `PUT`, `DELETE /api/overrides` | the overrides in force, `[{"prefix", "key", "max", "window_ms"}]`; `PUT` one (`{"prefix", "key", "max", "window_ms"}`: `key` null or absent for every key of the prefix; `max` or `window_ms` null or absent for the limit's own, not both; each at least 1, as on the attribute; 404 for a prefix no node has used, as for bans: a typo would set an override no limit reads, and [`Limiter::set_override`] sets one ahead of any use), `DELETE` one (`{"prefix", "key"}`, whatever the prefix) |
//! | `GET`, `PUT`, `DELETE /api/bans` | the blocks in force ([`Limiter::bans`]), `[{"policy", "prefix", "key", "remaining_ms", "banned", "offences"}]` (`?policy=P` for one); `PUT` a ban (`{"policy", "key", "duration_ms"}`, on every node: [`Limiter::ban`], under any policy; 404 for a policy no node has used), `DELETE` one, or a penalty's block (`{"policy", "key"}`; answers `{"lifted": bool}`) |
//! | `GET`, `PUT /api/switch` | `{"enabled": true}`: limiting on or off for every node ([`Limiter::set_enabled`]) |
//!
//! Every `/api` route wants `Authorization: Bearer <token>` (the scheme in any case, the token compared in
//! constant time) and answers 401 without it, saying whether the token is missing or wrong; errors are
//! `{"error": "..."}`, a sentence saying what is wrong (400 for a bad input). Keys are shown as the key
//! expression made them, without the store prefix. Policies, the most limited keys and the nodes come from
//! every node's report through Redis (see [`Limiter::overview`]); when Redis does not answer, the nodes and
//! policies are this node's alone, and the top keys answer 503.

mod api;
mod auth;
mod bans;

use axum::routing::get;
use axum::Router;

use crate::{Error, Limiter};

/// What the admin routes share: the limiter they show, and the token's digest.
#[derive(Clone)]
struct Admin {
    limiter: Limiter,
    token: [u8; 20],
}

/// Returns the admin router of `limiter`, behind `token`, to mount under a prefix of your choice with
/// `nest_service("/admin", ..)`: the page answers at `/admin` and `/admin/` alike. (Mounted with axum 0.8's
/// `nest`, only `/admin` would: a nested router's root is its prefix, without the slash.) A token shorter
/// than 8 characters is refused ([`Error::InvalidAdminToken`]): the API changes limits for the whole
/// service.
pub fn router(limiter: Limiter, token: impl AsRef<str>) -> Result<Router, Error> {
    let token = token.as_ref().trim();
    if token.len() < 8 {
        return Err(Error::InvalidAdminToken);
    }
    let admin = Admin {
        limiter,
        token: auth::digest(token),
    };
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
        .route("/bans", get(bans::bans).put(bans::ban).delete(bans::unban))
        .route_layer(axum::middleware::from_fn_with_state(
            admin.clone(),
            auth::bearer,
        ))
        .with_state(admin);
    Ok(Router::new().route("/", get(api::page)).nest("/api", api))
}
