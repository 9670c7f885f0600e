//! Calendar quotas: periods of the calendar (a day, a week, a month from a billing day) in a time zone.
//!
//! A calendar limit counts like a fixed window whose windows are the periods: at most `max` units per
//! period, reset at the period's start. The client computes where the periods around "now" end, in the
//! rule's zone ([`CalendarTerms::ends`]); the store decides which of them "now" is in on its own clock (Redis's
//! `TIME`), so that a client whose clock is off by less than a period changes nothing.

mod period;
mod recent;
mod usage;
mod zone;

pub use self::period::Period;
pub use self::usage::Usage;
pub use self::zone::Zone;

use jiff::tz::TimeZone;
use jiff::Timestamp;

/// What a rule says of its calendar, every part optional (resolved as the rule's other parts are).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CalendarTerms {
    pub(crate) period: Option<Period>,
    pub(crate) zone: Option<Zone>,
    pub(crate) anchor: Option<u8>,
}

impl CalendarTerms {
    /// Returns whether `self` sets every part `fallback` sets.
    pub(crate) fn covers(&self, fallback: &CalendarTerms) -> bool {
        (self.period.is_some() || fallback.period.is_none())
            && (self.zone.is_some() || fallback.zone.is_none())
            && (self.anchor.is_some() || fallback.anchor.is_none())
    }

    /// Returns `self`, with every part it leaves out taken from `fallback`.
    pub(crate) fn or(self, fallback: &CalendarTerms) -> CalendarTerms {
        CalendarTerms {
            period: self.period.or(fallback.period),
            zone: self.zone.or_else(|| fallback.zone.clone()),
            anchor: self.anchor.or(fallback.anchor),
        }
    }

    /// Returns the zone of a call: its own (`tz = <expr>`), else the rule's, else UTC.
    pub(crate) fn zone<'z>(&'z self, call: Option<&'z Zone>) -> &'z Zone {
        call.or(self.zone.as_ref()).unwrap_or(&Zone::UTC)
    }

    /// Returns where the periods around `now` (µs since the Unix epoch) end, in `zone`, months starting on `anchor`
    /// (the call's own billing day), else the rule's: the previous period's (the current one's start), the
    /// current one's and the next one's, strictly increasing.
    pub(crate) fn ends(&self, now: u64, zone: &Zone, anchor: Option<u8>) -> [u64; 3] {
        let period = self.period.unwrap_or(Period::Day);
        let anchor = anchor.or(self.anchor).unwrap_or(1);
        recent::ends(now, period, anchor, zone, || {
            ends(now, period, anchor, &zone.time_zone())
        })
    }
}

/// Computes [`CalendarTerms::ends`], of `period` (billing months starting on `anchor`) in `tz`.
pub(crate) fn ends(now: u64, period: Period, anchor: u8, tz: &TimeZone) -> [u64; 3] {
    let now_ts = timestamp(now);
    let today = now_ts.to_zoned_datetime(tz.clone()).date();
    let start = period.start(today, anchor);
    let next = period.after(start, anchor);
    let after_next = period.after(next, anchor);
    let first = start_of(start, tz).min(now);
    let second = start_of(next, tz).max(first + 1);
    let third = start_of(after_next, tz).max(second + 1);
    [first, second, third]
}

/// Returns `now` (µs since the Unix epoch) as a timestamp, clamped to what the calendar can name.
fn timestamp(micros: u64) -> Timestamp {
    let micros = i64::try_from(micros).unwrap_or(i64::MAX);
    Timestamp::from_microsecond(micros).unwrap_or(Timestamp::MAX)
}

/// Returns when `date` starts in `tz` (µs since the Unix epoch): its first instant, after a gap at midnight, or the
/// first of two midnights.
fn start_of(date: jiff::civil::Date, tz: &TimeZone) -> u64 {
    let start = date
        .to_zoned_datetime(tz.clone())
        .and_then(|midnight| midnight.start_of_day())
        .map(|start| start.timestamp().as_microsecond());
    start.map_or(u64::MAX, |micros| u64::try_from(micros).unwrap_or(0))
}

/// Formats `micros` (since the Unix epoch) in `zone`, as RFC 3339 (`2026-12-01T00:00:00+01:00`).
pub(crate) fn rfc3339(micros: u64, zone: &Zone) -> String {
    let tz = zone.time_zone();
    let at = timestamp(micros);
    at.display_with_offset(tz.to_offset(at)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Returns the µs since the Unix epoch of an RFC 3339 instant.
    fn at(text: &str) -> u64 {
        text.parse::<Timestamp>().unwrap().as_microsecond() as u64
    }

    fn tz(name: &str) -> TimeZone {
        TimeZone::get(name).unwrap()
    }

    #[test]
    fn days_end_at_midnight_in_their_zone_23_or_25_hours_apart() {
        let berlin = tz("Europe/Berlin");
        assert_eq!(
            ends(at("2026-03-29T12:00:00+02:00"), Period::Day, 1, &berlin),
            [
                at("2026-03-29T00:00:00+01:00"),
                at("2026-03-30T00:00:00+02:00"),
                at("2026-03-31T00:00:00+02:00"),
            ]
        );
        let [start, end, _] = ends(at("2026-10-25T12:00:00+01:00"), Period::Day, 1, &berlin);
        assert_eq!(end - start, 25 * 3_600_000_000);
    }

    /// Checks that where midnight does not exist (Santiago moves its clocks from 24:00 to 01:00), the day starts at
    /// 01:00.
    #[test]
    fn a_day_without_a_midnight_starts_after_the_gap() {
        let [start, end, _] = ends(
            at("2026-09-06T12:00:00-03:00"),
            Period::Day,
            1,
            &tz("America/Santiago"),
        );
        assert_eq!(start, at("2026-09-06T01:00:00-03:00"));
        assert_eq!(end, at("2026-09-07T00:00:00-03:00"));
    }

    #[test]
    fn billing_months_and_weeks_end_where_the_calendar_says() {
        let utc = TimeZone::UTC;
        assert_eq!(
            ends(at("2028-02-29T12:00:00Z"), Period::Month, 31, &utc),
            [
                at("2028-02-29T00:00:00Z"),
                at("2028-03-31T00:00:00Z"),
                at("2028-04-30T00:00:00Z"),
            ]
        );
        assert_eq!(
            ends(at("2026-12-31T23:59:59Z"), Period::Week, 1, &utc),
            [
                at("2026-12-28T00:00:00Z"),
                at("2027-01-04T00:00:00Z"),
                at("2027-01-11T00:00:00Z"),
            ]
        );
    }

    /// Checks that the zones come from the data bundled with the crate, never the machine's tzdata: a machine without
    /// it counts alike (and every machine by the same rules).
    #[test]
    fn the_zone_data_is_the_bundled_one() {
        assert_eq!(
            format!("{:?}", jiff::tz::db()),
            "TimeZoneDatabase(Bundled(available))"
        );
        assert!(Zone::get("Pacific/Kiritimati").is_ok());
    }

    /// Checks that what a thread keeps is what it would find: across a period's end, for rules and zones of every kind,
    /// more of them than it keeps.
    #[test]
    fn the_ends_a_thread_keeps_are_the_ones_it_would_find() {
        let zones = [
            "Europe/Berlin",
            "Asia/Kolkata",
            "America/Sao_Paulo",
            "UTC",
            "Pacific/Kiritimati",
        ];
        let mut now = at("2026-03-28T20:00:00Z");
        for step in 0..2_000u64 {
            now += (step % 7) * 1_800_000_000 + 1;
            for name in zones {
                let zone = Zone::get(name).unwrap();
                for (period, anchor) in [(Period::Day, 1), (Period::Week, 1), (Period::Month, 31)] {
                    let terms = CalendarTerms {
                        period: Some(period),
                        zone: Some(zone.clone()),
                        anchor: Some(anchor),
                    };
                    let found = ends(now, period, anchor, &zone.time_zone());
                    assert_eq!(
                        terms.ends(now, &zone, None),
                        found,
                        "{name} {period} at {now}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_instant_is_written_in_its_zone() {
        let kolkata = Zone::get("Asia/Kolkata").unwrap();
        assert_eq!(
            rfc3339(at("2026-11-26T18:30:00Z"), &kolkata),
            "2026-11-27T00:00:00+05:30"
        );
        assert_eq!(
            rfc3339(at("2026-11-26T18:30:00Z"), &Zone::UTC),
            "2026-11-26T18:30:00+00:00"
        );
    }
}
