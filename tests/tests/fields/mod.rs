//! The quota fields of a response (`RateLimit-Policy`, `RateLimit`), read as a client reads them: with an
//! independent Structured Fields parser (`sfv`), not by comparing strings. Each test binary uses a part.
#![allow(dead_code)]

use std::collections::BTreeMap;

use sfv::{BareItem, List, ListEntry, Parser};
use tests::http::Response;

/// One list member: the policy it names, its integer parameters (`q`, `w`, `r`, `t`; a boolean one, `override`,
/// as 1) and its string ones (`qu`, `plan`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub policy: String,
    pub params: BTreeMap<String, i64>,
    pub texts: BTreeMap<String, String>,
}

impl Member {
    /// Parameter `name`, which must be there.
    pub fn get(&self, name: &str) -> i64 {
        *self
            .params
            .get(name)
            .unwrap_or_else(|| panic!("no `{name}` in {self:?}"))
    }
}

/// Every member of field `name` (all its lines, in order, as one list); empty when the field is absent.
/// Panics when the field is not a list of strings with integer parameters.
pub fn members(response: &Response, name: &str) -> Vec<Member> {
    let lines: Vec<&str> = response
        .headers
        .iter()
        .filter(|(field, _)| field == name)
        .map(|(_, value)| value.as_str())
        .collect();
    list(name, &lines)
}

/// The members of field `name` whose lines are `lines`.
pub fn list(name: &str, lines: &[&str]) -> Vec<Member> {
    if lines.is_empty() {
        return Vec::new();
    }
    let joined = lines.join(", ");
    let list: List = Parser::new(&joined).parse().unwrap_or_else(|error| {
        panic!("{name}: {joined:?} is not a structured-field list: {error}")
    });
    list.into_iter()
        .map(|entry| {
            let ListEntry::Item(item) = entry else {
                panic!("{name}: an inner list in {joined:?}")
            };
            let policy = match &item.bare_item {
                BareItem::String(policy) => policy.as_str().to_owned(),
                other => panic!("{name}: a member is not a String: {other:?}"),
            };
            let (mut params, mut texts) = (BTreeMap::new(), BTreeMap::new());
            for (key, value) in item.params.iter() {
                let key = key.as_str().to_owned();
                match (value.as_integer(), value.as_string(), value.as_boolean()) {
                    (Some(value), _, _) => drop(params.insert(key, i64::from(value))),
                    (None, Some(text), _) if key == "qu" || key == "plan" => {
                        drop(texts.insert(key, text.as_str().to_owned()))
                    }
                    (None, None, Some(true)) if key == "override" => drop(params.insert(key, 1)),
                    _ => panic!(
                        "{name}: `{key}` is neither an Integer, `qu`, `plan` nor `override` in {joined:?}"
                    ),
                }
            }
            Member {
                policy,
                params,
                texts,
            }
        })
        .collect()
}

/// The member of `members` naming `policy`, which must be there once.
pub fn member<'a>(members: &'a [Member], policy: &str) -> &'a Member {
    let named: Vec<&Member> = members.iter().filter(|m| m.policy == policy).collect();
    assert_eq!(named.len(), 1, "one member for {policy:?} in {members:?}");
    named[0]
}

/// The policies `members` name, in order.
pub fn policies(members: &[Member]) -> Vec<&str> {
    members.iter().map(|m| m.policy.as_str()).collect()
}

/// Checks that a response's two fields agree and are well formed: one member per policy in each, the same
/// policies in the same order, `q`, `w` (at least 1) in the policy, `r` (at most `q`) and `t` in the state.
/// Returns (policy members, state members).
pub fn quota(response: &Response) -> (Vec<Member>, Vec<Member>) {
    let policy = members(response, "ratelimit-policy");
    let state = members(response, "ratelimit");
    assert_eq!(policies(&policy), policies(&state), "{response:?}");
    let mut seen = policies(&policy);
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(
        seen.len(),
        policy.len(),
        "a policy named twice: {response:?}"
    );
    for (p, s) in policy.iter().zip(&state) {
        assert!((0..=p.get("q")).contains(&s.get("r")), "{p:?} {s:?}");
        if p.texts.get("qu").map(String::as_str) == Some("concurrent-requests") {
            // Calls at once: no window, and no time within which a permit comes back.
            assert!(
                !p.params.contains_key("w") && !s.params.contains_key("t"),
                "{p:?} {s:?}"
            );
            continue;
        }
        assert!(p.get("q") >= 0 && p.get("w") >= 1, "{p:?}");
        assert!(s.get("t") >= 0, "{s:?}");
    }
    (policy, state)
}

/// `Retry-After`, in seconds.
pub fn retry_after(response: &Response) -> i64 {
    response
        .header("retry-after")
        .unwrap_or_else(|| panic!("no Retry-After: {response:?}"))
        .parse()
        .unwrap_or_else(|_| panic!("Retry-After is not delay-seconds: {response:?}"))
}
