//! How many runtimes share this Redis: each keeps a heartbeat in its group's set while Redis is healthy, and
//! remembers the last count, which `on_error = local` divides limits by while Redis is down. Each heartbeat
//! also stores the runtime's report of what it has seen (`crate::watch`), which any runtime reads back, for
//! the whole service's views.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::backend::redis::wire::LuaScript;

static HEARTBEAT: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../../../scripts/instances.lua")));

/// The live runtimes, whose reports to read (`scripts/reports.lua`).
static REPORTS: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../../../scripts/reports.lua")));

#[derive(Debug)]
pub(crate) struct Instances {
    /// The group's sorted set of live instances.
    key: String,
    /// Where each runtime's report is: this, then its id (in the set's Cluster slot).
    reports: String,
    /// This runtime's member in it.
    id: String,
    pub(crate) every: Duration,
    /// The number of live instances last seen (this one included).
    live: AtomicU64,
}

impl Instances {
    pub(crate) fn new(group: &str, every: Duration) -> Self {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let salt = std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), nanos);
        let key = format!("limiter:instances:{group}");
        Instances {
            reports: reports_at(&key),
            key,
            id: format!("{}-{:x}", std::process::id(), salt),
            every,
            live: AtomicU64::new(1),
        }
    }

    /// Returns this runtime's id among them.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Reads every live runtime's report, and how long ago it was written: the live runtimes and Redis's time in
    /// one script call, then their reports in one `MGET` (in the set's slot).
    pub(crate) async fn reports<C: redis::aio::ConnectionLike>(
        &self,
        connection: &mut C,
    ) -> redis::RedisResult<Vec<(String, Duration)>> {
        let command = REPORTS.command(&[&self.key], 1);
        let live: Vec<redis::Value> = REPORTS.run(connection, &command).await?;
        let Some((redis::Value::Int(now), ids)) = live.split_first() else {
            return Ok(Vec::new());
        };
        let keys: Vec<String> = ids
            .iter()
            .filter_map(|id| match id {
                redis::Value::BulkString(id) => {
                    Some(format!("{}{}", self.reports, String::from_utf8_lossy(id)))
                }
                _ => None,
            })
            .collect();
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let stored: Vec<Option<String>> = redis::cmd("MGET")
            .arg(&keys)
            .query_async(connection)
            .await?;
        let mut reports = Vec::new();
        for report in stored.into_iter().flatten() {
            // "<written, ms> <report>"
            if let Some((at, text)) = report.split_once(' ') {
                let age = now.saturating_sub(at.parse().unwrap_or(*now));
                let age = Duration::from_millis(u64::try_from(age).unwrap_or(0));
                reports.push((text.to_owned(), age));
            }
        }
        Ok(reports)
    }

    pub(crate) fn live(&self) -> u64 {
        self.live.load(Ordering::Relaxed).max(1)
    }

    /// Sends one heartbeat: renews this runtime's entry (and its `report`, if any), forgets expired ones, and learns
    /// the count.
    pub(crate) async fn beat<C: redis::aio::ConnectionLike>(
        &self,
        connection: &mut C,
        report: Option<&str>,
    ) -> redis::RedisResult<u64> {
        // An entry outlives three missed heartbeats.
        let lifetime = u64::try_from((3 * self.every).as_micros()).unwrap_or(u64::MAX);
        let report_key = format!("{}{}", self.reports, self.id);
        let mut command = HEARTBEAT.command(&[&self.key, &report_key], 1);
        command.arg(&self.id).arg(lifetime).arg(report);
        let live: u64 = HEARTBEAT.run(connection, &command).await?;
        self.live.store(live.max(1), Ordering::Relaxed);
        Ok(live)
    }
}

/// Returns where the reports of the instances in the set `key` are: `limiter:report:{<key>}:` and each one's id, the
/// set's whole name their Cluster hash tag, so that they share its slot; or, when `key` holds a tag of its
/// own, `key:report:`. (A group named with an empty tag and a `}`, `a{}b`, has no key in its slot but itself:
/// its reports then work on one server, not on a Cluster.)
fn reports_at(key: &str) -> String {
    let tagged = key
        .find('{')
        .and_then(|open| key[open + 1..].find('}').filter(|&len| len > 0));
    match tagged {
        Some(_) => format!("{key}:report:"),
        None => format!("limiter:report:{{{key}}}:"),
    }
}

#[cfg(test)]
mod tests {
    use super::reports_at;

    /// Checks that a report's key is in the instances' set's slot: the set's whole name as its tag, or the tag it has.
    #[test]
    fn a_report_key_shares_its_sets_slot() {
        for (key, report) in [
            (
                "limiter:instances:default",
                "limiter:report:{limiter:instances:default}:n1",
            ),
            (
                "limiter:instances:a{b}c",
                "limiter:instances:a{b}c:report:n1",
            ),
        ] {
            let made = format!("{}n1", reports_at(key));
            assert_eq!(made, report);
            assert_eq!(
                redis::cluster_routing::Slot::for_key(made.as_str()),
                redis::cluster_routing::Slot::for_key(key)
            );
        }
    }
}
