//! The wording of the errors built in more than one place, or from more than a literal: the arguments and
//! their examples, the refusals of an integer or a duration (a literal's, checked by `attr.rs`, and a
//! constant's, checked by the code `constant.rs` generates, in the same words), a duration string's, and an
//! unknown time zone's. An error raised at one site alone keeps its words there.

use limiter_grammar::duration::{self, DurationError};

/// Every argument, in the order error messages list them, with an example value for the error that says one
/// is missing ("`max` needs a value, e.g. `max = 100`"). Adding an argument is a field in
/// [`Args`](crate::attr::Args), a line here, an arm in [`Args::read`](crate::attr::Args::read), and its
/// validation.
pub(crate) const ARGUMENTS: [(&str, &str); 27] = [
    ("prefix", "\"rate_limit:emp:\""),
    ("key", "id"),
    ("window", "10"),
    ("max", "100"),
    ("message", "\"slow down\""),
    ("policy", "\"employees\""),
    ("algorithm", "token_bucket"),
    ("burst", "20"),
    ("cost", "items.len()"),
    ("mode", "wait"),
    ("max_wait", "\"2s\""),
    ("lease", "50"),
    ("lease_ttl", "\"100ms\""),
    ("on_error", "closed"),
    ("skip_if", "user.is_admin()"),
    ("shadow", "true"),
    ("count", "failures"),
    ("in_flight", "4"),
    ("in_flight_ttl", "\"30s\""),
    ("period", "month"),
    ("tz", "\"Europe/Berlin\""),
    ("anchor", "15"),
    ("penalty", "\"10m\""),
    ("priority", "tier.priority()"),
    ("plan", "tenant.plan"),
    ("reserve", "\"critical 20%\""),
    ("crate", "\"my_app::limiter\""),
];

/// Returns the example value of the argument `name`.
pub(crate) fn example(name: &str) -> &'static str {
    ARGUMENTS
        .iter()
        .find(|(known, _)| *known == name)
        .map_or("", |(_, example)| example)
}

/// Lists every argument's name: "expected one of: `prefix`, `key`, ...".
pub(crate) fn expected_arguments() -> String {
    let names: Vec<String> = ARGUMENTS
        .iter()
        .map(|(name, _)| format!("`{name}`"))
        .collect();
    format!("expected one of: {}", names.join(", "))
}

/// Explains why a positive integer argument cannot be zero (a literal's error, and a constant's).
pub(crate) fn zero(name: &str) -> String {
    match name {
        "lease" => "`lease` must be at least 1: a lease of zero units spares no call".to_owned(),
        "in_flight" => {
            "`in_flight` must be at least 1: a limit of zero would refuse every call".to_owned()
        }
        _ => format!("`{name}` must be at least 1: a limit of zero would reject every call"),
    }
}

/// Explains why an integer argument cannot be negative (a literal's error, and a constant's).
pub(crate) fn negative(name: &str) -> String {
    format!("`{name}` cannot be negative")
}

/// Explains why an integer argument cannot be over `u64::MAX` (a literal's error, and a constant's).
pub(crate) fn too_large(name: &str) -> String {
    format!("`{name}` is too large: at most {}", u64::MAX)
}

/// Explains why a duration argument cannot be zero (a literal's error, and a constant's).
pub(crate) fn not_longer_than_zero(name: &str) -> String {
    format!("`{name}` must be longer than zero")
}

/// Explains why a duration argument cannot be over `u64::MAX` milliseconds (a literal's error, and a
/// constant's).
pub(crate) fn too_long(name: &str) -> String {
    format!("`{name}` is too long")
}

/// Explains why the text of a duration argument is refused (the grammar's `limiter_grammar::duration`).
pub(crate) fn refused_duration(text: &str, name: &str, refused: DurationError) -> String {
    match refused {
        DurationError::Empty | DurationError::Malformed { .. } => format!(
            "invalid duration {text:?}: expected whole numbers, each followed by a unit, `d`, `h`, `m`, `s` or \
             `ms`, the largest first (e.g. \"500ms\", \"10s\", \"1m30s\", \"1h\", \"1d12h\")"
        ),
        DurationError::NoUnit { number, .. } => format!(
            "duration {text:?} has no unit: write `{name} = \"{number}s\"` (or `{name} = {number}`) for seconds, \
             or use `ms`, `m`, `h` or `d`"
        ),
        DurationError::OutOfOrder { unit, after, .. } => {
            let problem = if unit == after {
                format!("`{unit}` is written twice")
            } else {
                format!("`{unit}` comes after the smaller `{after}`")
            };
            match duration::reordered(text) {
                Some(reordered) => format!(
                    "invalid duration {text:?}: {problem}; write the units largest first: \"{reordered}\""
                ),
                None => format!(
                    "invalid duration {text:?}: {problem}; write each unit once, the largest first (e.g. \
                     \"1h30m\")"
                ),
            }
        }
        DurationError::TooLong { .. } => too_long(name),
    }
}

/// Explains why `name` is no time zone, with the closest known name when `closest` finds one close (it is
/// asked only about a name that is not blank).
pub(crate) fn unknown_zone(name: &str, closest: impl FnOnce(&str) -> Option<String>) -> String {
    if name.trim().is_empty() {
        return "`tz = \"\"` names no time zone: write an IANA name, e.g. `tz = \"Europe/Berlin\"`, or leave \
                `tz` out to count in UTC"
            .to_owned();
    }
    match closest(name) {
        Some(known) => format!("unknown time zone `{name}`; did you mean `{known}`?"),
        None => format!(
            "unknown time zone `{name}`: `tz` takes an IANA time zone name, e.g. `\"Europe/Berlin\"`, \
             `\"America/New_York\"` or `\"UTC\"`"
        ),
    }
}
