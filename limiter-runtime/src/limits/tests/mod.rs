//! Tests of the limits file: a whole file read into the rules and plans written by hand (here), each refusal at
//! its line and column (`refusals`), and the file on disk: cut off, too large, missing, not UTF-8 (`disk`).

mod disk;
mod refusals;

use std::path::Path;
use std::time::Duration;

use super::{LimitsError, LimitsFile};
use crate::calendar::{Period, Zone};
use crate::{Algorithm, OnError, Penalty, Plan, Priority, Rule};

/// A file that sets every field somewhere: each kind of policy, with plans.
pub(super) const FULL: &str = r#"# limits.toml
[defaults]
window = "1m"
on_error = "local"
prefix = "rate_limit:"
message = "too many requests"
algorithm = "sliding_log"
shadow = false
tz = "Europe/Berlin"
anchor = 1
lease_ttl = "100ms"
in_flight_ttl = "30s"

[policies.search]          # the attribute's `policy = "search"`
prefix = "rate_limit:search:"
algorithm = "sliding_window"
max = 100
window = "1m"
message = "slow down"
penalty = "1m..1h"
reserve = "critical 20%"
shadow = true
on_error = "open"

[policies.search.plans.pro]
max = 1000

[policies.search.plans.enterprise]
max = 10000
reserve = "critical 20%, high 30%"

[policies.upload]
algorithm = "token_bucket"
max = 10
window = 60
burst = 20
lease = 50
lease_ttl = "250ms"

[policies.upload.plans.pro]
burst = 40
window = "30s"
penalty = "10m"

[policies.queue]
algorithm = "leaky_bucket"
max = 5
window = "1s"
max_wait = "2s"
on_error = "closed"

[policies.reports]
in_flight = 4
in_flight_ttl = "45s"
plans.enterprise = { in_flight = 16 }

[policies."tokens.monthly"]
period = "month"
tz = "America/Sao_Paulo"
anchor = 15
max = 1_000_000
"#;

/// Reads `text` as the file `limits.toml`.
pub(super) fn parse(text: &str) -> Result<LimitsFile, LimitsError> {
    LimitsFile::parse(Path::new("limits.toml"), text)
}

/// Returns `secs` seconds.
fn secs(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// Returns what [`FULL`] says, built by hand.
fn full() -> LimitsFile {
    let defaults = Rule::new()
        .window(secs(60))
        .on_error(OnError::Local)
        .prefix("rate_limit:")
        .message("too many requests")
        .algorithm(Algorithm::SlidingLog)
        .shadow(false)
        .tz(Zone::get("Europe/Berlin").unwrap())
        .anchor(1)
        .lease_ttl(Duration::from_millis(100))
        .in_flight_ttl(secs(30));
    let search = Rule::new()
        .policy("search")
        .prefix("rate_limit:search:")
        .algorithm(Algorithm::SlidingWindow)
        .max(100)
        .window(secs(60))
        .message("slow down")
        .penalty(Penalty::escalating(secs(60), secs(3600)))
        .reserve(Priority::Critical, 20)
        .shadow(true)
        .on_error(OnError::Open)
        .plan("pro", Plan::new().max(1000))
        .plan(
            "enterprise",
            Plan::new()
                .max(10_000)
                .reserve(Priority::Critical, 20)
                .reserve(Priority::High, 30),
        );
    let upload = Rule::new()
        .policy("upload")
        .algorithm(Algorithm::TokenBucket)
        .max(10)
        .window(secs(60))
        .burst(20)
        .lease(50)
        .lease_ttl(Duration::from_millis(250))
        .plan(
            "pro",
            Plan::new()
                .burst(40)
                .window(secs(30))
                .penalty(Penalty::fixed(secs(600))),
        );
    let queue = Rule::new()
        .policy("queue")
        .algorithm(Algorithm::LeakyBucket)
        .max(5)
        .window(secs(1))
        .max_wait(secs(2))
        .on_error(OnError::Closed);
    let reports = Rule::new()
        .policy("reports")
        .in_flight(4)
        .in_flight_ttl(secs(45))
        .plan("enterprise", Plan::new().in_flight(16));
    let monthly = Rule::new()
        .policy("tokens.monthly")
        .period(Period::Month)
        .tz(Zone::get("America/Sao_Paulo").unwrap())
        .anchor(15)
        .max(1_000_000);
    LimitsFile {
        defaults,
        policies: vec![search, upload, queue, reports, monthly],
    }
}

/// Checks that a file that sets every field reads into the rules and plans written by hand, in the file's order.
#[test]
fn a_full_file_reads_into_the_rules_written_by_hand() {
    let read = parse(FULL).unwrap_or_else(|error| panic!("{error}"));
    let expected = full();
    assert_eq!(read.defaults, expected.defaults);
    for (read, expected) in read.policies.iter().zip(&expected.policies) {
        assert_eq!(read, expected, "policy {:?}", expected.name);
    }
    assert_eq!(read, expected);
}

/// Checks that a caller can ask which plans a policy has.
#[test]
fn a_policys_plans_are_named() {
    let read = parse(FULL).unwrap();
    assert_eq!(read.plans_named("search"), Some(vec!["pro", "enterprise"]));
    assert_eq!(read.plans_named("queue"), Some(vec![]));
    assert_eq!(read.plans_named("nothing"), None);
    assert!(read.has_plan("reports", "enterprise"));
    assert!(!read.has_plan("reports", "pro"));
    assert!(!read.has_plan("nothing", "pro"));
    assert_eq!(
        read.policy("tokens.monthly").and_then(|rule| rule.max),
        Some(1_000_000)
    );
}

/// Checks that an empty file (or one of comments) is no limits, not a mistake; and that a plan may stand alone.
#[test]
fn an_empty_file_and_a_lone_plan_are_limits() {
    assert_eq!(parse("").unwrap(), LimitsFile::default());
    assert_eq!(parse("# nothing yet\n\n").unwrap(), LimitsFile::default());
    let lone = parse("[policies.api.plans.pro]\nmax = 5\n").unwrap();
    let expected = Rule::new().policy("api").plan("pro", Plan::new().max(5));
    assert_eq!(lone.policies, vec![expected]);
}

/// Checks that a period reads as a calendar quota even after `algorithm = "fixed_window"` (which the attribute
/// takes beside a period), and that whole seconds are a duration.
#[test]
fn a_period_is_a_calendar_whatever_is_written_after_it() {
    let read =
        parse("[policies.day]\nperiod = \"day\"\nalgorithm = \"fixed_window\"\nmax = 3\n").unwrap();
    let expected = Rule::new().policy("day").period(Period::Day).max(3);
    assert_eq!(read.policies, vec![expected]);
    let read = parse("[defaults]\nwindow = 90\nmax_wait = 1\n").unwrap();
    assert_eq!(
        read.defaults,
        Rule::new().window(secs(90)).max_wait(secs(1))
    );
}
