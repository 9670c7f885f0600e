//! The record of changes made through the admin door: each one a `tracing` event at `info`, and an entry the
//! store keeps, the newest [`KEPT`] (in Redis, where every node lists them; in memory, this node's own).

use std::time::{SystemTime, UNIX_EPOCH};

use axum::response::Response;
use serde_json::{json, Value};

use super::Caller;
use crate::{Error, Limiter};

/// How many changes the record keeps: the newest.
pub(super) const KEPT: usize = 100;

/// What a route changed, in a few words, as it tells the door in its response's extensions (else the door
/// records the request's method and target).
#[derive(Debug, Clone)]
pub(super) struct Changed(pub(super) String);

/// Returns `answer`, telling the door it changed `what`.
pub(super) fn changed(mut answer: Response, what: String) -> Response {
    answer.extensions_mut().insert(Changed(what));
    answer
}

/// Records that `caller` changed `what` through `limiter`'s door: an event, and an entry every node lists.
pub(super) async fn add(limiter: &Limiter, caller: &Caller, what: &str) {
    let backend = &limiter.pipeline.backend;
    tracing::info!(
        role = caller.role.as_str(),
        client = caller.client.as_str(),
        change = what,
        "limiter changed through the admin door"
    );
    let at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64);
    let entry = json!({
        "at_ms": at_ms,
        "node": backend.operations().node(),
        "role": caller.role.as_str(),
        "client": caller.client,
        "change": what,
    });
    if let Err(e) = backend.operations().record(&entry.to_string(), KEPT).await {
        tracing::warn!(
            change = what,
            "a change made through the admin door is in this log alone, not on the record: {e}"
        );
    }
}

/// Lists the newest changes, newest first: `[{"at_ms", "node", "role", "client", "change"}]`.
pub(super) async fn list(limiter: &Limiter) -> Result<Vec<Value>, Error> {
    let recorded = limiter.pipeline.backend.operations().recorded(KEPT).await?;
    Ok(recorded
        .iter()
        .filter_map(|entry| serde_json::from_str(entry).ok())
        .collect())
}
