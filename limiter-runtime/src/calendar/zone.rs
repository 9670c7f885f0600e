//! A time zone a calendar quota counts in.

use std::fmt;

use jiff::tz::TimeZone;

use crate::Error;

/// A time zone, by its IANA name (`"Europe/Berlin"`), from the zone data bundled with this crate (a machine
/// without tzdata works alike).
///
/// ```
/// use limiter_runtime::Zone;
///
/// let berlin = Zone::get("Europe/Berlin").unwrap();
/// assert_eq!(berlin.name(), "Europe/Berlin");
/// assert!(Zone::get("Europe/Berln").is_err());
/// ```
#[derive(Clone)]
pub struct Zone(Repr);

#[derive(Clone)]
enum Repr {
    Utc,
    /// A name the attribute checked at compile time (looked up when used: jiff keeps what it read).
    Checked(&'static str),
    Found(TimeZone),
}

impl Zone {
    /// Coordinated Universal Time: a calendar limit's zone unless it names one.
    pub const UTC: Zone = Zone(Repr::Utc);

    /// The zone named `name` (IANA: `"America/Sao_Paulo"`, `"Pacific/Kiritimati"`, `"UTC"`), or
    /// [`Error::UnknownZone`].
    pub fn get(name: &str) -> Result<Zone, Error> {
        match TimeZone::get(name) {
            Ok(tz) => Ok(Zone(Repr::Found(tz))),
            Err(_) => Err(Error::UnknownZone(name.to_owned())),
        }
    }

    /// A zone whose name `#[rate_limit(tz = "...")]` checked at compile time.
    #[doc(hidden)]
    pub const fn checked(name: &'static str) -> Zone {
        Zone(Repr::Checked(name))
    }

    /// Its IANA name.
    pub fn name(&self) -> &str {
        match &self.0 {
            Repr::Utc => "UTC",
            Repr::Checked(name) => name,
            Repr::Found(tz) => tz.iana_name().unwrap_or("UTC"),
        }
    }

    /// The zone itself (UTC, should a checked name not be found where it was at compile time).
    pub(crate) fn time_zone(&self) -> TimeZone {
        match &self.0 {
            Repr::Utc => TimeZone::UTC,
            Repr::Checked(name) => TimeZone::get(name).unwrap_or(TimeZone::UTC),
            Repr::Found(tz) => tz.clone(),
        }
    }
}

/// Zones are equal when their names are.
impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        self.name() == other.name()
    }
}

impl Eq for Zone {}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Zone").field(&self.name()).finish()
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
