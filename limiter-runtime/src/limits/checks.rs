//! How a policy's fields fit together, as the attribute checks its arguments: a calendar quota (`period`)
//! and a limit of calls in flight (`in_flight`) each take no field of a rate, `tz` and `anchor` need a period,
//! and a plan varies only what its policy's kind has.

use std::ops::Range;

use super::error::{LimitsError, Source};
use super::fields::Place;
use super::tables::Read;
use super::values::Setting;
use crate::calendar::Period;
use crate::Algorithm;

/// What a policy limits, which decides the fields its plans may vary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Calls per window.
    Rate,
    /// Calls running at once (`in_flight`).
    InFlight,
    /// Calls per period of the calendar (`period`).
    Calendar,
}

/// Why a period leaves nothing for a field to apply to.
const NO_SLOTS: &str = "a period hands out no slots to wait for, and a call over `max` is refused until the period ends";
const NO_LEASE: &str =
    "a period's count is decided by the store, on its own clock, and no node can spend part of it alone";

/// Checks that the fields of the policy at `place` fit together (the first that does not, in the file's order,
/// is refused at its key), and returns the policy's kind.
pub(crate) fn check_policy(
    source: Source<'_>,
    place: Place<'_>,
    settings: &[Read],
) -> Result<Kind, LimitsError> {
    let period = settings.iter().find_map(|(setting, _)| match setting {
        Setting::Period(period) => Some(*period),
        _ => None,
    });
    let in_flight = settings
        .iter()
        .any(|(setting, _)| matches!(setting, Setting::InFlight(_)));
    for (setting, key) in settings {
        let refusal = match period {
            Some(period) => beside_period(setting, place, period),
            None if in_flight => beside_in_flight(setting, place),
            None => without_period(setting, place),
        };
        if let Some(refusal) = refusal {
            return Err(source.limits(key, refusal));
        }
    }
    Ok(match (period, in_flight) {
        (Some(_), _) => Kind::Calendar,
        (None, true) => Kind::InFlight,
        (None, false) => Kind::Rate,
    })
}

/// Returns why `setting`, at `place`, cannot go beside `period = ...`, if it cannot.
fn beside_period(setting: &Setting, place: Place<'_>, period: Period) -> Option<String> {
    let why = match setting {
        Setting::Algorithm(Algorithm::FixedWindow) => return None,
        Setting::Algorithm(algorithm) => {
            return Some(format!(
                "`algorithm = \"{algorithm}\"` {place} cannot be used with `period`: a period counts by the \
                 calendar's periods, a fixed window of the calendar; leave `algorithm` out"
            ))
        }
        Setting::Anchor(_) if period != Period::Month => {
            return Some(format!(
                "`anchor` {place} is the billing day of a month: it needs `period = \"month\"`, not `period = \
                 \"{period}\"`"
            ))
        }
        Setting::Window(_) => {
            "the period is the window (a day, a week or a month of the calendar, from its first instant in `tz`)"
        }
        Setting::Burst(_) => "a period counts like a fixed window, with no token bucket to fill",
        Setting::MaxWait(_) => NO_SLOTS,
        Setting::Lease(_) | Setting::LeaseTtl(_) => NO_LEASE,
        Setting::InFlight(_) => {
            "it limits calls running at once, not calls per period; give it a policy of its own"
        }
        Setting::InFlightTtl(_) => {
            "it is how long a permit of `in_flight` lives, and `in_flight` limits calls running at once, not calls \
             per period"
        }
        _ => return None,
    };
    Some(format!(
        "`{}` {place} cannot be used with `period`: {why}",
        setting.field()
    ))
}

/// Returns why `setting`, at `place`, cannot go beside `in_flight = ...` (without a period), if it cannot: a
/// policy is one limit, and one of calls in flight has no rate.
fn beside_in_flight(setting: &Setting, place: Place<'_>) -> Option<String> {
    match setting {
        Setting::Max(_)
        | Setting::Window(_)
        | Setting::Algorithm(_)
        | Setting::Burst(_)
        | Setting::MaxWait(_)
        | Setting::Lease(_)
        | Setting::LeaseTtl(_) => Some(format!(
            "`{}` {place} cannot be used with `in_flight`: a policy is one limit, and `in_flight` limits calls \
             running at once (each holds one permit), not a rate; give the rate a policy of its own",
            setting.field()
        )),
        other => without_period(other, place),
    }
}

/// Returns why `setting`, at `place`, needs a period, if it does: `tz` and `anchor`.
fn without_period(setting: &Setting, place: Place<'_>) -> Option<String> {
    match setting {
        Setting::Tz(_) => Some(format!(
            "`tz` {place} is the time zone a calendar quota counts its periods in: it needs `period = \"day\"`, \
             `\"week\"` or `\"month\"` (or put it in [defaults], for every calendar quota)"
        )),
        Setting::Anchor(_) => Some(format!(
            "`anchor` {place} is the billing day of a month: it needs `period = \"month\"` (or put it in \
             [defaults], for every monthly quota)"
        )),
        _ => None,
    }
}

/// Checks that a plan's `setting` (its key at `key`) varies something its policy, of `kind`, has.
pub(crate) fn check_plan(
    source: Source<'_>,
    place: Place<'_>,
    kind: Kind,
    setting: &Setting,
    key: &Range<usize>,
) -> Result<(), LimitsError> {
    let why = match (kind, setting) {
        (Kind::Rate, Setting::InFlight(_)) => {
            "the policy limits a rate, not calls in flight: its plans vary `max` (and `window`, `burst`)"
        }
        (Kind::InFlight, Setting::Max(_) | Setting::Window(_) | Setting::Burst(_)) => {
            "the policy limits calls in flight, not a rate: its plans vary `in_flight`"
        }
        (Kind::Calendar, Setting::Window(_) | Setting::Burst(_)) => {
            "the policy is a calendar quota, whose period is its window: its plans vary `max`"
        }
        (Kind::Calendar, Setting::InFlight(_)) => {
            "the policy is a calendar quota, not a limit of calls in flight: its plans vary `max`"
        }
        _ => return Ok(()),
    };
    let problem = format!("`{}` {place} does not apply: {why}", setting.field());
    Err(source.limits(key, problem))
}
