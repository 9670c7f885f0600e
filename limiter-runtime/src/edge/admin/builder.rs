//! [`Builder`]: the admin door's tokens, where a request's client address comes from, and the limit on
//! failed tokens.

use std::time::Duration;

use super::tokens::Tokens;
use super::Door;
use crate::tower::Key;
use crate::{Algorithm, Error, Limiter, OnError, Penalty, Rule};

/// Builds a [`Door`]: an operator's token (both powers), and optionally a viewer's (read only).
///
/// ```no_run
/// # fn build() -> Result<(), Box<dyn std::error::Error>> {
/// use limiter_runtime::tower::Key;
/// use limiter_runtime::{admin, Limiter};
///
/// let limiter = Limiter::builder().redis("redis://127.0.0.1/").build()?;
/// let door = admin::builder(limiter)
///     .operator_token(std::env::var("ADMIN_TOKEN")?)
///     .viewer_token(std::env::var("ADMIN_VIEWER_TOKEN")?)
///     .client(Key::x_forwarded_for(1)) // behind one proxy
///     .build()?;
/// let app = axum::Router::new().nest_service("/admin", door.router());
/// # let _: axum::Router = app; Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until built"]
pub struct Builder {
    limiter: Limiter,
    operator: Option<String>,
    viewer: Option<String>,
    client: Key,
    failed_tokens: Rule,
}

/// Returns the door's own limit on failed tokens, per client address: 5 in any minute (a sliding log: exact, with no
/// window edge to double it at), then blocked for a minute, 2, 4, ... up to an hour; decided on this node alone while
/// Redis fails, and while limiting is switched off.
fn failed_tokens() -> Rule {
    Rule::new()
        .prefix("limiter:admin:failed-tokens:")
        .policy("admin-failed-tokens")
        .algorithm(Algorithm::SlidingLog)
        .max(5)
        .window(Duration::from_secs(60))
        .penalty(Penalty::escalating(
            Duration::from_secs(60),
            Duration::from_secs(3600),
        ))
        .on_error(OnError::Local)
        .shadow(false)
        .message(
            "too many wrong or missing admin tokens from this address: try again after Retry-After",
        )
}

impl Builder {
    pub(super) fn new(limiter: Limiter) -> Builder {
        Builder {
            limiter,
            operator: None,
            viewer: None,
            client: Key::peer_ip(),
            failed_tokens: failed_tokens(),
        }
    }

    /// Sets the operator's token (required): it reads everything and changes overrides, the switch and bans. At
    /// least 16 characters, spaces around it ignored: `openssl rand -hex 16` makes one.
    pub fn operator_token(mut self, token: impl Into<String>) -> Builder {
        self.operator = Some(token.into());
        self
    }

    /// Sets a viewer's token: it reads the page and every `GET` route, and changes nothing (a change answers 403).
    /// At least 16 characters, and not the operator's.
    pub fn viewer_token(mut self, token: impl Into<String>) -> Builder {
        self.viewer = Some(token.into());
        self
    }

    /// Sets where a request's client address comes from, by the rules of the [tower layer's keys](Key): the
    /// peer's address by default ([`Key::peer_ip`]); behind proxies, [`Key::x_forwarded_for`] or
    /// [`Key::forwarded`]. A request whose key finds nothing counts under its peer's address; without one
    /// (a server that records none), under one key shared by all such requests.
    pub fn client(mut self, key: Key) -> Builder {
        self.client = key;
        self
    }

    /// Sets the limit on failed tokens (missing or wrong) per client address, through the door's limiter: past it,
    /// every request from the address is answered 429 with `Retry-After`, the right token's too, until the
    /// limit (and its penalty's block) admits again. What `rule` leaves unset is the default's: 5 failures in
    /// any minute (a sliding log), a penalty of a minute doubling up to an hour, `on_error = local` (each node
    /// goes on counting while Redis fails), under the prefix `limiter:admin:failed-tokens:` and the policy
    /// `admin-failed-tokens`. It is decided while limiting is switched off too.
    pub fn failed_tokens(mut self, rule: Rule) -> Builder {
        self.failed_tokens = rule.or(&failed_tokens());
        self
    }

    /// Builds the door; [`Error::InvalidAdminToken`] without an operator's token, with a token shorter than 16
    /// characters, or with a viewer's token that is the operator's.
    pub fn build(self) -> Result<Door, Error> {
        let tokens = Tokens::new(self.operator.as_deref(), self.viewer.as_deref())?;
        let mut failed = self.failed_tokens;
        failed.ignores_switch = true;
        Ok(Door::new(self.limiter, tokens, self.client, failed))
    }
}
