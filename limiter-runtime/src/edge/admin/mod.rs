//! The operators' admin router (feature `admin`, axum 0.8): JSON under one prefix, behind a door of bearer
//! tokens, and a live page.
//!
//! ```no_run
//! # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! use limiter_runtime::{admin, Limiter};
//!
//! let limiter = Limiter::builder().redis("redis://127.0.0.1/").build()?;
//! let token = std::env::var("ADMIN_TOKEN")?; // at least 16 characters: `openssl rand -hex 16`
//! let app = axum::Router::new().nest_service("/admin", admin::router(limiter, token)?);
//! # let _: axum::Router = app; Ok(()) }
//! ```
//!
//! | route | answers |
//! |---|---|
//! | `GET /` | (`/admin` and `/admin/`, mounted as above) the live page: one HTML page, its script inline, updated every second (no token in its URL: it asks for it once, and keeps it in the tab's session storage) |
//! | `GET /api/policies` | `[{"policy", "prefix", "decided_per_s", "refused_per_s", "decided", "refused", "busiest": [{"key", "decided"}]}]`, for the whole service |
//! | `GET /api/top?n=10` | the most refused keys over the last minute, `[{"policy", "key", "refused"}]`, highest first (n at most 100) |
//! | `GET /api/inspect?policy=P&key=K` | a key's state ([`Limiter::inspect`]), `{"policy", "key", "limit", "window_ms", "used", "remaining", "retry_after_ms", "reset_after_ms", "in_flight", "deny_cached", "blocked_ms", "banned", "offences", "ceilings"}` (`ceilings`: `[{"priority", "ceiling", "remaining"}]`, from the highest priority, when the rule keeps shares for the higher ones); under the policy as the node that decided it counts it (this one, or another, from its report through Redis); 404 for a policy no node has used |
//! | `GET /api/nodes` | `[{"node", "this", "store", "redis", "degraded", "enabled", "seen_ms_ago", "limits", "limits_refused"}]` (`limits`: the version of the limits file in force there, null for none; `limits_refused`: why the last one offered to it was refused) |
//! | `GET`, `PUT /api/limits` | this node's limits file, `{"version", "refused"}`; `PUT` a limits file's text (TOML, the body) in force on every node ([`Limiter::push_limits`]): `{"version"}`, 400 with the file's line and column for a file that is refused (nothing changes anywhere), 503 when Redis does not take it |
//! | `GET`, `PUT`, `DELETE /api/overrides` | the overrides in force, `[{"policy", "prefix", "key", "max", "window_ms", "reserve"}]` (`policy` null when no node has reported the prefix's policy); `PUT` one (`{"policy", "key", "max", "window_ms", "reserve"}`: `policy` a policy's name or its prefix, as everywhere in this API (`prefix` is read for it too); `key` null or absent for every key of the policy; `max`, `window_ms` or `reserve` (`"critical 20%, high 30%"`, the shares kept for the higher priorities) null or absent for the limit's own, not all; each at least 1, as on the attribute; 404 for a policy no node has used, as for bans: a typo would set an override no limit reads, and [`Limiter::set_override`] sets one ahead of any use), `DELETE` one (`{"policy", "key"}`) |
//! | `GET`, `PUT`, `DELETE /api/bans` | the blocks in force ([`Limiter::bans`]), `[{"policy", "prefix", "key", "remaining_ms", "banned", "offences"}]` (`?policy=P` for one); `PUT` a ban (`{"policy", "key", "duration_ms"}`, on every node: [`Limiter::ban`], under any policy; 404 for a policy no node has used), `DELETE` one, or a penalty's block (`{"policy", "key"}`; answers `{"lifted": bool}`) |
//! | `GET`, `PUT /api/switch` | `{"enabled": true}`: limiting on or off for every node ([`Limiter::set_enabled`]) |
//! | `GET /api/changes` | the newest changes made through the door on every node (100, kept in Redis; in memory, this node's), newest first: `[{"at_ms", "node", "role", "client", "change"}]` |
//! | `GET /api/role` | `{"role": "operator" \| "viewer", "client"}`: what the request's token may do, and the address its failed tokens count under |
//!
//! **The door** ([`Door`], made by [`router`] or by a [`builder`](fn@builder)) stands before every route:
//!
//! - **Tokens and roles.** Every `/api` route wants `Authorization: Bearer <token>` (the scheme in any case,
//!   the token compared in constant time), and answers 401 without it, saying whether the token is missing
//!   or wrong. The operator's token may do everything; a viewer's ([`Builder::viewer_token`]) reads the page
//!   and every `GET`, and a change answers it 403 with a sentence. A token has at least 16 characters
//!   (`openssl rand -hex 16` makes one).
//! - **Failed tokens limited.** A missing or wrong token counts against its client address, through this
//!   limiter (the policy `admin-failed-tokens`, on every node through Redis; per node without one, or while
//!   Redis fails): past 5 a minute, the address is blocked for a minute, then 2, 4, ... up to an hour
//!   ([`Builder::failed_tokens`]), and every request from it, the right token's and the page's too, is
//!   answered 429 with `Retry-After`. Other addresses are served. The address is the peer's, or where
//!   [`Builder::client`] finds it behind proxies; without one, one key shared by all such requests.
//! - **Every change on the record.** Each override, switch, ban, unban and limits file pushed through the door is a
//!   `tracing` event at `info` (fields `role`, `client`, `change`) and an entry under `/api/changes`.
//!
//! Errors are `{"error": "..."}`, a sentence saying what is wrong (400 for a bad input). Keys are shown as
//! the key expression made them, without the store prefix. Policies, the most limited keys and the nodes
//! come from every node's report through Redis (see [`Limiter::overview`]); when Redis does not answer, the
//! nodes and policies are this node's alone, and the top keys and the changes answer 503.

mod api;
mod bans;
mod builder;
mod door;
mod record;
mod tokens;

use crate::{Error, Limiter};

pub use self::builder::Builder;
pub use self::door::{Caller, Door};

/// What a token may do at the door.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// Reads the page and every `GET` route; changes nothing.
    Viewer,
    /// Reads everything, and changes overrides, the switch and bans.
    Operator,
}

impl Role {
    /// Returns its name in the record, the log and `/api/role`: `viewer` or `operator`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
        }
    }
}

/// Returns the admin router of `limiter`, behind `token` (the operator's: every power), to mount under a
/// prefix of your choice with `nest_service("/admin", ..)`: the page answers at `/admin` and `/admin/`
/// alike. (Mounted with axum 0.8's `nest`, only `/admin` would: a nested router's root is its prefix,
/// without the slash.) A token shorter than 16 characters is refused ([`Error::InvalidAdminToken`]): the
/// API changes limits for the whole service. For a viewer's token, proxies or your own operators' routes
/// behind the same door, see [`builder`](fn@builder).
pub fn router(limiter: Limiter, token: impl AsRef<str>) -> Result<axum::Router, Error> {
    Ok(builder(limiter)
        .operator_token(token.as_ref())
        .build()?
        .router())
}

/// Starts building the admin door of `limiter` ([`Builder`]).
pub fn builder(limiter: Limiter) -> Builder {
    Builder::new(limiter)
}
