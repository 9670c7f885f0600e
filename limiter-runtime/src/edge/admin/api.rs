//! The admin API's routes, each a thin reading of the limiter's own operators' methods into JSON.

use std::collections::HashMap;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{json, Value};

use super::record::changed;
use super::{Caller, Door};
use crate::{Error, Override};

/// The live page.
const PAGE: &str = include_str!("page.html");

/// Builds an error answer: `{"error": text}` with `status`.
pub(super) fn error(status: StatusCode, text: impl std::fmt::Display) -> Response {
    (status, Json(json!({ "error": text.to_string() }))).into_response()
}

/// Builds a JSON answer that no cache keeps.
pub(super) fn fresh(value: Value) -> Response {
    ([(header::CACHE_CONTROL, "no-store")], Json(value)).into_response()
}

/// Returns the milliseconds of `duration`, as JSON numbers.
pub(super) fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Answers `GET /`: the page, its script and style inline, and nothing else allowed.
pub(super) async fn page() -> Response {
    let policy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; \
                  connect-src 'self'; img-src data:; frame-ancestors 'none'";
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
            (header::CONTENT_SECURITY_POLICY, policy),
        ],
        PAGE,
    )
        .into_response()
}

/// Answers `GET /api/policies`.
pub(super) async fn policies(State(door): State<Door>) -> Response {
    let overview = door.limiter.overview().await;
    let policies: Vec<Value> = overview
        .policies
        .iter()
        .map(|p| {
            let busiest: Vec<Value> = p
                .busiest
                .iter()
                .map(|(key, decided)| json!({ "key": key, "decided": decided }))
                .collect();
            json!({
                "policy": p.policy,
                "prefix": p.prefix,
                "decided_per_s": p.decided_per_s,
                "refused_per_s": p.refused_per_s,
                "decided": p.decided,
                "refused": p.refused,
                "busiest": busiest,
            })
        })
        .collect();
    fresh(Value::Array(policies))
}

/// Answers `GET /api/top?n=10`.
pub(super) async fn top(
    State(door): State<Door>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let n = match query.get("n").map(|n| n.parse::<usize>()) {
        None => 10,
        Some(Ok(n)) if (1..=100).contains(&n) => n,
        Some(_) => return error(StatusCode::BAD_REQUEST, "n is a number from 1 to 100"),
    };
    let policy = query.get("policy").map_or("", String::as_str);
    match door.limiter.top_limited(policy, n).await {
        Ok(top) => fresh(Value::Array(
            top.iter()
                .map(|t| json!({ "policy": t.policy, "key": t.key, "refused": t.refused }))
                .collect(),
        )),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Returns the rule of `policy` (by name or by prefix): as this node decided it, else as another node reports it
/// (with the terms it counts it under); else the answer saying why not.
pub(super) async fn rule_of(door: &Door, policy: &str) -> Result<crate::Rule, Response> {
    door.limiter.policy(policy).await.map_err(|e| match e {
        crate::Error::UnknownPolicy { .. } => error(StatusCode::NOT_FOUND, e),
        e => error(StatusCode::SERVICE_UNAVAILABLE, e),
    })
}

/// Answers `GET /api/inspect?policy=P&key=K`.
pub(super) async fn inspect(
    State(door): State<Door>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let (Some(policy), Some(key)) = (query.get("policy"), query.get("key")) else {
        return error(StatusCode::BAD_REQUEST, "policy and key are required");
    };
    let rule = match rule_of(&door, policy).await {
        Ok(rule) => rule,
        Err(answer) => return answer,
    };
    match door.limiter.inspect(&rule, key).await {
        Ok(state) => fresh(json!({
            "policy": state.policy,
            "key": state.key,
            "limit": state.limit,
            "window_ms": ms(state.window),
            "used": state.used,
            "remaining": state.remaining,
            "retry_after_ms": ms(state.retry_after),
            "reset_after_ms": ms(state.reset_after),
            "in_flight": state.in_flight,
            "deny_cached": state.deny_cached,
            "blocked_ms": ms(state.blocked_for),
            "banned": state.banned,
            "paused": state.paused,
            "offences": state.offences,
            "ceilings": state.ceilings.iter().map(|c| json!({
                "priority": c.priority.as_str(),
                "ceiling": c.ceiling,
                "remaining": c.remaining,
            })).collect::<Vec<_>>(),
        })),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Answers `GET /api/nodes`.
pub(super) async fn nodes(State(door): State<Door>) -> Response {
    let overview = door.limiter.overview().await;
    let nodes: Vec<Value> = overview
        .nodes
        .iter()
        .map(|n| {
            let redis = match (n.redis, n.breaker_open) {
                (false, _) => "none",
                (true, false) => "up",
                (true, true) => "breaker open",
            };
            json!({
                "node": n.node,
                "this": n.this,
                "store": if n.redis { "redis" } else { "memory" },
                "redis": redis,
                "degraded": n.degraded,
                "enabled": n.enabled,
                "seen_ms_ago": ms(n.seen_ago),
                "limits": n.limits,
                "limits_refused": n.limits_refused,
            })
        })
        .collect();
    fresh(Value::Array(nodes))
}

/// Answers `GET /api/limits`: this node's limits file, `{"version", "refused"}`.
pub(super) async fn limits(State(door): State<Door>) -> Response {
    let (version, refused) = door.limiter.limits_version();
    fresh(json!({ "version": version, "refused": refused }))
}

/// Answers `PUT /api/limits`: the body, a limits file's text, put in force on every node
/// ([`Limiter::push_limits`](crate::Limiter::push_limits)); 400 for a file that is refused (nothing changed), 503 when Redis did not take it.
pub(super) async fn push_limits(State(door): State<Door>, body: Bytes) -> Response {
    let Ok(text) = std::str::from_utf8(&body) else {
        return error(
            StatusCode::BAD_REQUEST,
            "the body is not UTF-8 text: a limits file is TOML",
        );
    };
    match door.limiter.push_limits(text).await {
        Ok(version) => {
            let answer = fresh(json!({ "version": version }));
            changed(answer, format!("the limits file, version {version}"))
        }
        Err(e @ Error::Limits(_)) => error(StatusCode::BAD_REQUEST, e),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Answers `GET /api/overrides`: each with its policy's name, when a node has reported the policy.
pub(super) async fn overrides(State(door): State<Door>) -> Response {
    let overview = door.limiter.overview().await;
    let name_of = |prefix: &str| {
        let policy = overview.policies.iter().find(|p| p.prefix == prefix);
        policy.map(|p| p.policy.clone())
    };
    let list: Vec<Value> = door
        .limiter
        .overrides()
        .iter()
        .map(|o| {
            json!({
                "policy": name_of(o.target_prefix()),
                "prefix": o.target_prefix(),
                "key": o.single_key(),
                "pattern": o.is_pattern().then(|| o.target_key()),
                "max": o.max_value(),
                "window_ms": o.window_value().map(ms),
                "reserve": o.reserve_value(),
            })
        })
        .collect();
    fresh(Value::Array(list))
}

/// Reads a request's body as JSON; else why not (an error answered like every other, `{"error"}`).
pub(super) fn json(body: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))
}

/// Returns the override a request's body names: `{"policy", "key"}` or `{"policy", "pattern"}`, the policy by its
/// name or its prefix (`"prefix"` is still read for `"policy"`); else why not.
fn target(body: &Value) -> Result<Override, String> {
    let policy = match body.get("policy").or_else(|| body.get("prefix")) {
        Some(Value::String(policy)) if !policy.is_empty() => policy,
        _ => return Err("policy is a non-empty string: a policy's name or its prefix".into()),
    };
    if let Some(pattern) = body.get("pattern").filter(|p| !p.is_null()) {
        return match (pattern, body.get("key")) {
            (Value::String(pattern), None | Some(Value::Null)) => {
                Ok(Override::pattern(policy.as_str(), pattern))
            }
            (Value::String(_), _) => Err("an override names a key or a pattern, not both".into()),
            _ => Err("pattern is a string: the start of its keys and `*` (\"acme*\")".into()),
        };
    }
    Ok(match body.get("key") {
        None | Some(Value::Null) => Override::policy(policy.as_str()),
        Some(Value::String(key)) => Override::key(policy.as_str(), key),
        Some(_) => return Err("key is a string or null".into()),
    })
}

/// Reads a whole number from `body`'s `field`, or `None` when it is null or absent (an override's `max` and
/// `window_ms`: the limit's own); else why not.
fn number(body: &Value, field: &str) -> Result<Option<u64>, String> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("{field} is a whole number or null")),
    }
}

/// Returns the override a `PUT` body sets: its target, and `max`, `window_ms`, `reserve` (`"critical 20%"`) or
/// several; else why not.
fn change(body: &Value) -> Result<Override, String> {
    let mut change = target(body)?;
    let (max, window) = (number(body, "max")?, number(body, "window_ms")?);
    let reserve = match body.get("reserve") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.as_str()),
        Some(_) => {
            return Err("reserve is a string, like \"critical 20%, high 30%\", or null".into())
        }
    };
    if max.is_none() && window.is_none() && reserve.is_none() {
        return Err("an override sets max, window_ms, reserve or several".into());
    }
    if let Some(reserve) = reserve {
        change = change.reserves_text(reserve)?;
    }
    // As strict as the attribute: a limit of zero would refuse every call of every node.
    if max == Some(0) {
        return Err("max is at least 1: a limit of zero would refuse every call".into());
    }
    if window == Some(0) {
        return Err("window_ms is at least 1".into());
    }
    if let Some(max) = max {
        change = change.max(max);
    }
    if let Some(window) = window {
        change = change.window(Duration::from_millis(window));
    }
    Ok(change)
}

/// Returns the prefix of the policy `named` (its name, or its prefix) as the nodes report it; else why an
/// override of it is refused: no node has decided a limit under it (an operator's typo would set an override
/// that no limit reads), as a ban or an inspection is for a policy no node has used.
async fn policy_prefix(door: &Door, named: &str) -> Result<String, Response> {
    let overview = door.limiter.overview().await;
    let policies = &overview.policies;
    if let Some(policy) = policies.iter().find(|p| p.policy == named) {
        return Ok(policy.prefix.clone());
    }
    if policies.iter().any(|p| p.prefix == named) {
        return Ok(named.to_owned());
    }
    Err(match overview.partial {
        true => error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "no node is known to use a policy named or prefixed {named:?}: Redis, which holds the \
                 other nodes' reports, did not answer"
            ),
        ),
        false => error(
            StatusCode::NOT_FOUND,
            format!(
                "no node has used a policy named or prefixed {named:?}: an override of it would change \
                 no limit"
            ),
        ),
    })
}

/// Describes an override as the record tells it: `the override of key "42" of prefix "rate_limit:emp:": max 1`.
fn described(o: &Override) -> String {
    let target = match o.target_key() {
        Some(keys) if o.is_pattern() => format!("keys {keys:?} of prefix {:?}", o.target_prefix()),
        Some(key) => format!("key {key:?} of prefix {:?}", o.target_prefix()),
        None => format!("every key of prefix {:?}", o.target_prefix()),
    };
    let mut terms = Vec::new();
    if let Some(max) = o.max_value() {
        terms.push(format!("max {max}"));
    }
    if let Some(window) = o.window_value() {
        terms.push(format!("window {window:?}"));
    }
    if let Some(reserve) = o.reserve_value() {
        terms.push(format!("reserve {reserve}"));
    }
    match terms.is_empty() {
        true => format!("the override of {target}"),
        false => format!("the override of {target}: {}", terms.join(", ")),
    }
}

/// Answers `PUT /api/overrides`: 404 for a policy no node has used.
pub(super) async fn set_override(State(door): State<Door>, body: Bytes) -> Response {
    let change = match json(&body).and_then(|body| change(&body)) {
        Ok(change) => change,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let change = match policy_prefix(&door, change.target_prefix()).await {
        Ok(prefix) => change.aimed_at(prefix),
        Err(refused) => return refused,
    };
    let what = format!("set {}", described(&change));
    match door.limiter.set_override(change).await {
        Ok(()) => changed(StatusCode::NO_CONTENT.into_response(), what),
        Err(e @ Error::InvalidOverride { .. }) => error(StatusCode::BAD_REQUEST, e),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Answers `DELETE /api/overrides`.
pub(super) async fn clear_override(State(door): State<Door>, body: Bytes) -> Response {
    let target = match json(&body).and_then(|body| target(&body)) {
        Ok(target) => target,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    match door.limiter.clear_override(&target).await {
        Ok(()) => changed(
            StatusCode::NO_CONTENT.into_response(),
            format!("cleared {}", described(&target)),
        ),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Answers `GET /api/switch`.
pub(super) async fn switch(State(door): State<Door>) -> Response {
    fresh(json!({ "enabled": door.limiter.is_enabled() }))
}

/// Answers `PUT /api/switch`.
pub(super) async fn set_switch(State(door): State<Door>, body: Bytes) -> Response {
    let enabled = json(&body).and_then(|body| {
        let enabled = body.get("enabled").and_then(Value::as_bool);
        enabled.ok_or_else(|| "enabled is true or false".to_owned())
    });
    let enabled = match enabled {
        Ok(enabled) => enabled,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    match door.limiter.set_enabled(enabled).await {
        Ok(()) => changed(
            StatusCode::NO_CONTENT.into_response(),
            format!(
                "turned limiting {} for every node",
                if enabled { "on" } else { "off" }
            ),
        ),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Answers `GET /api/changes`.
pub(super) async fn changes(State(door): State<Door>) -> Response {
    match super::record::list(&door.limiter).await {
        Ok(changes) => fresh(Value::Array(changes)),
        Err(e) => error(StatusCode::SERVICE_UNAVAILABLE, e),
    }
}

/// Answers `GET /api/role`.
pub(super) async fn role(Extension(caller): Extension<Caller>) -> Response {
    fresh(json!({ "role": caller.role.as_str(), "client": caller.client }))
}
