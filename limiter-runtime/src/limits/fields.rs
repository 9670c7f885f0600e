//! The fields of a table of limits, by name, and where each may be written: a policy takes every one, the
//! defaults all but the two that choose a policy's kind, a plan the six a plan can vary.

use std::fmt;

/// A field of a table of limits (the same names as the attribute's arguments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Field {
    Prefix,
    Algorithm,
    Max,
    Window,
    Message,
    Penalty,
    Reserve,
    Burst,
    MaxWait,
    InFlight,
    Shadow,
    OnError,
    Lease,
    LeaseTtl,
    InFlightTtl,
    Period,
    Tz,
    Anchor,
}

impl Field {
    /// The fields of a policy, in the order messages list them (its `plans` table aside).
    pub(crate) const POLICY: [Field; 18] = [
        Field::Prefix,
        Field::Algorithm,
        Field::Max,
        Field::Window,
        Field::Message,
        Field::Penalty,
        Field::Reserve,
        Field::Burst,
        Field::MaxWait,
        Field::InFlight,
        Field::Shadow,
        Field::OnError,
        Field::Lease,
        Field::LeaseTtl,
        Field::InFlightTtl,
        Field::Period,
        Field::Tz,
        Field::Anchor,
    ];

    /// The fields a plan varies ([`Plan`](crate::Plan)'s setters).
    pub(crate) const PLAN: [Field; 6] = [
        Field::Max,
        Field::Window,
        Field::Burst,
        Field::Reserve,
        Field::Penalty,
        Field::InFlight,
    ];

    /// Returns its name, as written in the file.
    pub(crate) const fn name(self) -> &'static str {
        match self {
            Field::Prefix => "prefix",
            Field::Algorithm => "algorithm",
            Field::Max => "max",
            Field::Window => "window",
            Field::Message => "message",
            Field::Penalty => "penalty",
            Field::Reserve => "reserve",
            Field::Burst => "burst",
            Field::MaxWait => "max_wait",
            Field::InFlight => "in_flight",
            Field::Shadow => "shadow",
            Field::OnError => "on_error",
            Field::Lease => "lease",
            Field::LeaseTtl => "lease_ttl",
            Field::InFlightTtl => "in_flight_ttl",
            Field::Period => "period",
            Field::Tz => "tz",
            Field::Anchor => "anchor",
        }
    }

    /// Returns the field named `name`, if a policy has one.
    pub(crate) fn named(name: &str) -> Option<Field> {
        Field::POLICY.into_iter().find(|field| field.name() == name)
    }

    /// Returns why the defaults do not take this field, if they do not: `in_flight` and `period` make a limit of
    /// their own kind (of calls in flight, a calendar quota), which a default would make of every policy.
    pub(crate) fn not_a_default(self) -> Option<&'static str> {
        match self {
            Field::InFlight => Some(
                "`in_flight` makes a policy a limit of calls in flight, which as a default would make every \
                 policy one; write it in the policies that are",
            ),
            Field::Period => Some(
                "`period` makes a policy a calendar quota, which as a default would make every policy one; \
                 write it in the policies that are (`tz` and `anchor` may be defaults)",
            ),
            _ => None,
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where in the file a table is: what messages say a field is "in".
#[derive(Debug, Clone, Copy)]
pub(crate) enum Place<'a> {
    /// `[defaults]`.
    Defaults,
    /// `[policies.<name>]`.
    Policy(&'a str),
    /// `[policies.<policy>.plans.<plan>]`.
    Plan { policy: &'a str, plan: &'a str },
}

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Defaults => f.write_str("in [defaults]"),
            Place::Policy(name) => write!(f, "in policy {name:?}"),
            Place::Plan { policy, plan } => write!(f, "in plan {plan:?} of policy {policy:?}"),
        }
    }
}

/// Returns `names` as messages list them: `` `max`, `window`, `burst` ``.
pub(crate) fn listed<'n>(names: impl IntoIterator<Item = &'n str>) -> String {
    let names: Vec<String> = names.into_iter().map(|name| format!("`{name}`")).collect();
    names.join(", ")
}

/// Returns whether `name` may name a policy or a plan: ASCII letters, digits, `_`, `.` and `-`, at least one.
pub(crate) fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}
