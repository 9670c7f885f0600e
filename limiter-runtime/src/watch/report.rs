//! What a node tells the others of what it has seen (through Redis, one key per node, renewed with its
//! heartbeat), written as lines of tab-separated fields, and how the nodes' reports make the service's view.
//!
//! ```text
//! node     <id> <breaker open: 0|1> <degraded decisions> <limiting on: 0|1>
//! policy   <name> <prefix> <decisions/s> <refusals/s> <decisions> <refusals>   (the last minute)
//! rule     <name=value>...                                                  (the policy's above: `terms`)
//! refused  <count> <key>                                                     (the policy's above)
//! unlisted <count>                      (the most refusals a key not listed above may have had)
//! decided  <count> <key>
//! limits   <version> <error>     (the limits file in force here, and why the last one offered was refused)
//! ```
//!
//! Text fields escape `\`, tab, newline and carriage return (`\\`, `\t`, `\n`, `\r`): a key holds anything.
//! A line of a kind this version does not know is skipped, so that a later version can add some. (Versions
//! before the `rule` line drop a report that has one: while they run beside this one, their operators' views
//! miss its nodes.)

use std::fmt::Write as _;

use super::terms;
use crate::Rule;

/// One policy as one node saw it over the last minute.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PolicyReport {
    pub(crate) policy: String,
    pub(crate) prefix: String,
    pub(crate) decided_per_s: f64,
    pub(crate) refused_per_s: f64,
    pub(crate) decided: u64,
    pub(crate) refused: u64,
    /// The most refused keys, heaviest first, with their refusals.
    pub(crate) refused_keys: Vec<(String, u64)>,
    /// The most refusals any key not among `refused_keys` may have had (0 from a report without it).
    pub(crate) refused_unlisted: u64,
    /// The most decided keys (sampled), heaviest first, with their decisions.
    pub(crate) decided_keys: Vec<(String, u64)>,
    /// Its rule as the node first saw it (named `policy`, under `prefix`): what any node inspects a key of it
    /// under. `None` from a report without it.
    pub(crate) rule: Option<Rule>,
}

/// What one node reports.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NodeReport {
    pub(crate) node: String,
    pub(crate) breaker_open: bool,
    pub(crate) degraded: u64,
    pub(crate) enabled: bool,
    pub(crate) policies: Vec<PolicyReport>,
    /// The limits file in force here: its version (empty for none), and why the last one offered was refused.
    pub(crate) limits: Limits,
}

/// A node's limits file: the version in force (empty for none) and the last refusal, if one came after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) version: String,
    pub(crate) refused: Option<String>,
}

impl NodeReport {
    /// Writes the report as text.
    pub(crate) fn encode(&self) -> String {
        let mut out = String::new();
        let flag = |b: bool| u8::from(b);
        let _ = writeln!(
            out,
            "node\t{}\t{}\t{}\t{}",
            escape(&self.node),
            flag(self.breaker_open),
            self.degraded,
            flag(self.enabled)
        );
        for p in &self.policies {
            let _ = writeln!(
                out,
                "policy\t{}\t{}\t{}\t{}\t{}\t{}",
                escape(&p.policy),
                escape(&p.prefix),
                p.decided_per_s,
                p.refused_per_s,
                p.decided,
                p.refused
            );
            if let Some(rule) = &p.rule {
                let _ = writeln!(out, "rule\t{}", terms::encode(rule).join("\t"));
            }
            for (kind, keys) in [("refused", &p.refused_keys), ("decided", &p.decided_keys)] {
                for (key, count) in keys {
                    let _ = writeln!(out, "{kind}\t{count}\t{}", escape(key));
                }
                if kind == "refused" && p.refused_unlisted > 0 {
                    let _ = writeln!(out, "unlisted\t{}", p.refused_unlisted);
                }
            }
        }
        if !self.limits.version.is_empty() || self.limits.refused.is_some() {
            let refused = self.limits.refused.as_deref().unwrap_or("");
            let _ = writeln!(
                out,
                "limits\t{}\t{}",
                escape(&self.limits.version),
                escape(refused)
            );
        }
        out
    }

    /// Reads a report written by [`encode`](NodeReport::encode); `None` if it is not one (a newer version's, say).
    pub(crate) fn decode(text: &str) -> Option<NodeReport> {
        let mut lines = text.lines();
        let mut node = lines.next()?.split('\t');
        let mut report = match (
            node.next()?,
            node.next(),
            node.next(),
            node.next(),
            node.next(),
        ) {
            ("node", Some(id), Some(breaker), Some(degraded), Some(enabled)) => NodeReport {
                node: unescape(id),
                breaker_open: breaker == "1",
                degraded: degraded.parse().ok()?,
                enabled: enabled == "1",
                policies: Vec::new(),
                limits: Limits::default(),
            },
            _ => return None,
        };
        for line in lines {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["policy", name, prefix, dps, rps, decided, refused] => {
                    report.policies.push(PolicyReport {
                        policy: unescape(name),
                        prefix: unescape(prefix),
                        decided_per_s: dps.parse().ok()?,
                        refused_per_s: rps.parse().ok()?,
                        decided: decided.parse().ok()?,
                        refused: refused.parse().ok()?,
                        refused_keys: Vec::new(),
                        refused_unlisted: 0,
                        decided_keys: Vec::new(),
                        rule: None,
                    })
                }
                ["limits", version, refused] => {
                    report.limits = Limits {
                        version: unescape(version),
                        refused: Some(unescape(refused)).filter(|r| !r.is_empty()),
                    };
                }
                ["rule", fields @ ..] => {
                    let policy = report.policies.last_mut()?;
                    policy.rule = terms::decode(&policy.policy, &policy.prefix, fields);
                }
                [kind @ ("refused" | "decided"), count, key] => {
                    let policy = report.policies.last_mut()?;
                    let keys = match *kind {
                        "refused" => &mut policy.refused_keys,
                        _ => &mut policy.decided_keys,
                    };
                    keys.push((unescape(key), count.parse().ok()?));
                }
                ["unlisted", count] => {
                    report.policies.last_mut()?.refused_unlisted = count.parse().ok()?;
                }
                ["node" | "policy" | "refused" | "decided" | "unlisted", ..] => return None,
                _ => {}
            }
        }
        Some(report)
    }
}

/// Returns `text` with `\`, tab, newline and carriage return escaped.
fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\\', '\t', '\n', '\r']) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 2);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.into()
}

/// Reads back what [`escape`] wrote.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_back_as_written_whatever_its_keys_hold() {
        let report = NodeReport {
            node: "123-abc".into(),
            breaker_open: true,
            degraded: 7,
            enabled: false,
            policies: vec![PolicyReport {
                policy: "emp".into(),
                prefix: "rate_limit:emp:".into(),
                decided_per_s: 12.5,
                refused_per_s: 0.25,
                decided: 700,
                refused: 15,
                refused_keys: vec![("tab\there\nnewline\\slash".into(), 9), ("".into(), 1)],
                refused_unlisted: 1,
                decided_keys: vec![("ünï cödé".into(), 32)],
                rule: Some(Rule::new().prefix("rate_limit:emp:").policy("emp").max(7)),
            }],
            limits: Limits {
                version: "3f2a9c1e".into(),
                refused: Some("limits.toml:3:7: unknown field\t`maxx`".into()),
            },
        };
        // The rule reads back as the rule it was, every part it left out set.
        let mut read = NodeReport::decode(&report.encode()).unwrap();
        let rule = read.policies[0].rule.take().map(Rule::completed);
        assert_eq!(rule, report.policies[0].rule.clone().map(Rule::completed));
        read.policies[0].rule.clone_from(&report.policies[0].rule);
        assert_eq!(read, report);
        assert_eq!(NodeReport::decode("garbage"), None);
        assert_eq!(NodeReport::decode("node\tx\t0\t0\t1\nrefused\t1\tk"), None);
        assert_eq!(NodeReport::decode("node\tx\t0\t0\t1\npolicy\tp"), None);
        // A line of a kind a later version added is skipped.
        let later = format!("{}future\t1\t2\n", report.encode());
        assert!(NodeReport::decode(&later).is_some());
    }
}
