//! The admin API's bans: list the blocks in force, ban a key, lift a block ([`Limiter::ban`] and its
//! siblings), each a thin reading into JSON.
//!
//! [`Limiter::ban`]: crate::Limiter::ban

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::api::{error, fresh, json, ms, rule_of};
use super::record::changed;
use super::Door;

/// The longest ban the API sets: a year.
const LONGEST: u64 = 365 * 24 * 3600 * 1000;

/// Answers `GET /api/bans?policy=P`: every policy's without `policy`.
pub(super) async fn bans(
    State(door): State<Door>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let policy = query.get("policy").map_or("", String::as_str);
    match door.limiter.bans(policy).await {
        Ok(bans) => fresh(Value::Array(
            bans.iter()
                .map(|b| {
                    json!({
                        "policy": b.policy,
                        "prefix": b.prefix,
                        "key": b.key,
                        "remaining_ms": ms(b.remaining),
                        "banned": b.banned,
                        "paused": b.paused,
                        "offences": b.offences,
                    })
                })
                .collect(),
        )),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Returns the policy and key a body names: `{"policy", "key"}`; else why not.
fn named(body: &Value) -> Result<(String, String), String> {
    let text = |field: &str| match body.get(field) {
        Some(Value::String(text)) if !text.is_empty() => Ok(text.clone()),
        _ => Err(format!("{field} is a non-empty string")),
    };
    Ok((text("policy")?, text("key")?))
}

/// Answers `PUT /api/bans` `{"policy", "key", "duration_ms"}`: bans the key on every node.
pub(super) async fn ban(State(door): State<Door>, body: Bytes) -> Response {
    let asked = json(&body).and_then(|body| {
        let (policy, key) = named(&body)?;
        // Required: no null, unlike an override's numbers.
        match body.get("duration_ms").and_then(Value::as_u64) {
            Some(ms) if (1..=LONGEST).contains(&ms) => Ok((policy, key, ms)),
            _ => Err("duration_ms is a whole number of milliseconds, from 1 to a year".to_owned()),
        }
    });
    let (policy, key, duration) = match asked {
        Ok(asked) => asked,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let rule = match rule_of(&door, &policy).await {
        Ok(rule) => rule,
        Err(answer) => return answer,
    };
    let length = Duration::from_millis(duration);
    match door.limiter.ban(&rule, &key, length).await {
        Ok(()) => changed(
            StatusCode::NO_CONTENT.into_response(),
            format!("banned key {key:?} of policy {policy:?} for {length:?}"),
        ),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Answers `DELETE /api/bans` `{"policy", "key"}`: lifts the key's block on every node; `{"lifted": bool}`.
pub(super) async fn unban(State(door): State<Door>, body: Bytes) -> Response {
    let (policy, key) = match json(&body).and_then(|body| named(&body)) {
        Ok(named) => named,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let rule = match rule_of(&door, &policy).await {
        Ok(rule) => rule,
        Err(answer) => return answer,
    };
    match door.limiter.unban(&rule, &key).await {
        Ok(lifted) => changed(
            fresh(json!({ "lifted": lifted })),
            match lifted {
                true => format!("lifted the block of key {key:?} of policy {policy:?}"),
                false => {
                    format!("lifted no block of key {key:?} of policy {policy:?}: it had none")
                }
            },
        ),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}
