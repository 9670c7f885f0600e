//! A policy's terms in a node's report: what another node needs to read a key under the policy as this one
//! counts it ([`Limiter::inspect`](crate::Limiter::inspect) through the admin API), though it never decided
//! a call of it. Fields of `name=value`, each value free of tabs and newlines:
//!
//! ```text
//! algorithm=token_bucket  max=10  window_us=3600000000  burst=4
//! wait=window | wait_us=<µs>  in_flight_ttl_us=<µs>  period=month  zone=Asia/Tokyo  anchor=15
//! penalty_us=<first µs>..<longest µs>
//! ```
//!
//! The first three always; the others when the rule sets them. A field this version does not know is
//! skipped (a later one may add some); a field it knows that does not read makes the terms unreadable.

use std::fmt::Write as _;
use std::time::Duration;

use crate::calendar::{Period, Zone};
use crate::rule::Wait;
use crate::{Algorithm, Penalty, Rule};

/// Writes `rule`'s terms as fields (see the module's documentation).
pub(super) fn encode(rule: &Rule) -> Vec<String> {
    let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    let mut fields = vec![
        format!("algorithm={}", rule.algorithm_value().name()),
        format!("max={}", rule.max_value()),
        format!("window_us={}", micros(rule.window_value())),
    ];
    let mut add = |name: &str, value: &dyn std::fmt::Display| {
        let mut field = String::new();
        let _ = write!(field, "{name}={value}");
        fields.push(field);
    };
    if let Some(burst) = rule.burst {
        add("burst", &burst);
    }
    match rule.wait {
        None => {}
        Some(Wait::Window) => add("wait", &"window"),
        Some(Wait::Up(wait)) => add("wait_us", &micros(wait)),
    }
    if let Some(ttl) = rule.in_flight_ttl {
        add("in_flight_ttl_us", &micros(ttl));
    }
    if let Some(period) = rule.calendar.period {
        add("period", &period.name());
    }
    if let Some(zone) = &rule.calendar.zone {
        add("zone", &zone.name());
    }
    if let Some(anchor) = rule.calendar.anchor {
        add("anchor", &anchor);
    }
    if let Some(penalty) = rule.penalty {
        add(
            "penalty_us",
            &format!("{}..{}", micros(penalty.first()), micros(penalty.cap())),
        );
    }
    fields
}

/// Reads the rule of the policy named `policy`, counted under `prefix`, with the terms `fields`; `None` if they do
/// not read.
pub(super) fn decode(policy: &str, prefix: &str, fields: &[&str]) -> Option<Rule> {
    let mut rule = Rule::new()
        .prefix(prefix.to_owned())
        .policy(policy.to_owned());
    let (mut algorithm, mut max, mut window) = (None, None, None);
    let micros = |value: &str| value.parse().ok().map(Duration::from_micros);
    for field in fields {
        let (name, value) = field.split_once('=')?;
        match name {
            "algorithm" => algorithm = Some(algorithm_named(value)?),
            "max" => max = Some(value.parse().ok()?),
            "window_us" => window = Some(micros(value)?),
            "burst" => rule.burst = Some(value.parse().ok()?),
            "wait" if value == "window" => rule.wait = Some(Wait::Window),
            "wait" => return None,
            "wait_us" => rule.wait = Some(Wait::Up(micros(value)?)),
            "in_flight_ttl_us" => rule.in_flight_ttl = Some(micros(value)?),
            "period" => rule.calendar.period = Some(value.parse::<Period>().ok()?),
            "zone" => rule.calendar.zone = Some(Zone::get(value).ok()?),
            "anchor" => rule.calendar.anchor = Some(value.parse().ok()?),
            "penalty_us" => {
                let (first, cap) = value.split_once("..")?;
                let penalty = Penalty::escalating(micros(first)?, micros(cap)?);
                rule.penalty = Some(penalty);
            }
            _ => {}
        }
    }
    Some(rule.algorithm(algorithm?).max(max?).window(window?))
}

/// Returns the algorithm named `name`: a rate's (those `FromStr` reads), or a limit in flight's, or a calendar's.
fn algorithm_named(name: &str) -> Option<Algorithm> {
    let every = Algorithm::ALL.into_iter();
    let mut every = every.chain([Algorithm::InFlight, Algorithm::Calendar]);
    every.find(|algorithm| algorithm.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that every part a read of a key depends on comes back as written.
    #[test]
    fn terms_read_back_as_written() {
        let second = Duration::from_secs(1);
        let named = |rule: Rule| rule.prefix("p:").policy("policy");
        for rule in [
            Rule::new().max(5).window(second * 10),
            Rule::new()
                .algorithm(Algorithm::TokenBucket)
                .max(10)
                .burst(4),
            Rule::new()
                .algorithm(Algorithm::LeakyBucket)
                .max_wait(Duration::from_millis(250)),
            Rule::new().algorithm(Algorithm::LeakyBucket).wait(),
            Rule::new().in_flight(3).in_flight_ttl(second * 5),
            Rule::new()
                .max(5)
                .penalty(Penalty::escalating(second, second * 60)),
            Rule::new()
                .period(Period::Month)
                .anchor(15)
                .tz(Zone::get("Asia/Tokyo").unwrap())
                .max(1_000),
        ] {
            let fields = encode(&rule);
            let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
            let read = decode("policy", "p:", &fields).unwrap();
            let written = named(rule).completed();
            assert_eq!(read.completed(), written, "{fields:?}");
        }
    }

    #[test]
    fn unknown_fields_are_skipped_and_known_ones_must_read() {
        let read = decode(
            "p",
            "p:",
            &["algorithm=fixed_window", "max=3", "window_us=5", "new=1"],
        );
        assert_eq!(read.map(|r| r.max_value()), Some(3));
        for broken in [
            &["algorithm=fixed_window", "max=3"][..],
            &["algorithm=nope", "max=3", "window_us=5"],
            &["algorithm=fixed_window", "max=x", "window_us=5"],
            &[
                "algorithm=fixed_window",
                "max=3",
                "window_us=5",
                "zone=Mars/Olympus",
            ],
            &["algorithm=fixed_window", "max=3", "window_us=5", "garbage"],
        ] {
            assert_eq!(decode("p", "p:", broken), None, "{broken:?}");
        }
    }
}
