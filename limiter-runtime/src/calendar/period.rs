//! The periods of the calendar a quota can count in.

use std::fmt;
use std::str::FromStr;

use jiff::civil::Date;
use jiff::ToSpan;

use crate::parse::ParseError;

/// A period of the calendar ([`Rule::period`](crate::Rule::period)): counts start again at each period's
/// first instant in the rule's zone.
///
/// A day is 23 or 25 hours long on the days its zone changes its clocks; a month starts on its billing day
/// ([`Rule::anchor`](crate::Rule::anchor), the 1st by default), or on the month's last day when it is shorter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Period {
    /// From midnight to midnight.
    Day,
    /// From Monday's midnight (ISO 8601 weeks) to the next Monday's.
    Week,
    /// From the billing day's midnight to the next month's billing day's.
    Month,
}

impl Period {
    /// Every period.
    pub const ALL: [Period; 3] = [Period::Day, Period::Week, Period::Month];

    /// Returns its name, as the attribute spells it (`period = month`) and `FromStr` reads it.
    pub const fn name(self) -> &'static str {
        match self {
            Period::Day => "day",
            Period::Week => "week",
            Period::Month => "month",
        }
    }

    /// Returns the first day of the period holding `date` (billing months starting on `anchor`).
    pub(crate) fn start(self, date: Date, anchor: u8) -> Date {
        match self {
            Period::Day => date,
            Period::Week => {
                let back = i64::from(date.weekday().to_monday_zero_offset());
                date.saturating_sub(back.days())
            }
            Period::Month => {
                let this_month = billing_day(date.first_of_month(), anchor);
                if date >= this_month {
                    this_month
                } else {
                    let last_month = date.first_of_month().saturating_sub(1.month());
                    billing_day(last_month, anchor)
                }
            }
        }
    }

    /// Returns the first day of the period after the one starting on `start`.
    pub(crate) fn after(self, start: Date, anchor: u8) -> Date {
        match self {
            Period::Day => start.saturating_add(1.day()),
            Period::Week => start.saturating_add(7.days()),
            Period::Month => billing_day(start.first_of_month().saturating_add(1.month()), anchor),
        }
    }
}

/// Returns the billing day `anchor` of the month starting on `first`: the month's last day when it is shorter.
fn billing_day(first: Date, anchor: u8) -> Date {
    let day = i8::try_from(anchor.max(1)).unwrap_or(i8::MAX);
    let day = day.min(first.days_in_month());
    first.with().day(day).build().unwrap_or(first)
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Period {
    type Err = ParseError;

    /// Parses a period by its [`name`](Period::name).
    fn from_str(name: &str) -> Result<Period, ParseError> {
        Period::ALL
            .into_iter()
            .find(|period| period.name() == name)
            .ok_or_else(|| ParseError::new("period", name, "day, week or month"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::civil::date;

    #[test]
    fn a_billing_month_starts_on_its_anchor_clamped_to_the_months_end() {
        let start = |d, anchor| Period::Month.start(d, anchor);
        assert_eq!(start(date(2026, 3, 14), 15), date(2026, 2, 15));
        assert_eq!(start(date(2026, 3, 15), 15), date(2026, 3, 15));
        // 31 in February: its last day, leap or not; then back to the 31st.
        assert_eq!(start(date(2026, 3, 1), 31), date(2026, 2, 28));
        assert_eq!(start(date(2028, 3, 1), 31), date(2028, 2, 29));
        assert_eq!(
            Period::Month.after(date(2028, 2, 29), 31),
            date(2028, 3, 31)
        );
        assert_eq!(
            Period::Month.after(date(2026, 1, 31), 31),
            date(2026, 2, 28)
        );
        assert_eq!(Period::Month.after(date(2026, 12, 1), 1), date(2027, 1, 1));
        // A day above 31 is the month's last; 0 is the 1st.
        assert_eq!(start(date(2026, 4, 30), 40), date(2026, 4, 30));
        assert_eq!(start(date(2026, 4, 29), 0), date(2026, 4, 1));
    }

    #[test]
    fn a_week_starts_on_monday() {
        // 2026-11-26 is a Thursday.
        assert_eq!(
            Period::Week.start(date(2026, 11, 26), 1),
            date(2026, 11, 23)
        );
        assert_eq!(
            Period::Week.start(date(2026, 11, 23), 1),
            date(2026, 11, 23)
        );
        assert_eq!(Period::Week.start(date(2027, 1, 3), 1), date(2026, 12, 28));
    }

    #[test]
    fn periods_read_their_names() {
        for period in Period::ALL {
            assert_eq!(period.name().parse::<Period>().unwrap(), period);
        }
        assert!("fortnight".parse::<Period>().is_err());
    }
}
