//! A time zone a calendar quota counts in.

use std::fmt;
use std::sync::{Mutex, PoisonError};

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

    /// Returns the zone named `name` (IANA: `"America/Sao_Paulo"`, `"Pacific/Kiritimati"`, `"UTC"`), or
    /// [`Error::UnknownZone`].
    pub fn get(name: &str) -> Result<Zone, Error> {
        match TimeZone::get(name) {
            Ok(tz) => Ok(Zone(Repr::Found(tz))),
            Err(_) => Err(Error::UnknownZone(name.to_owned())),
        }
    }

    /// Creates a zone whose name `#[rate_limit(tz = "...")]` checked at compile time.
    #[doc(hidden)]
    pub const fn checked(name: &'static str) -> Zone {
        Zone(Repr::Checked(name))
    }

    /// Returns its IANA name.
    pub fn name(&self) -> &str {
        match &self.0 {
            Repr::Utc => "UTC",
            Repr::Checked(name) => name,
            Repr::Found(tz) => tz.iana_name().unwrap_or("UTC"),
        }
    }

    /// Returns the zone itself. A name checked at compile time that this build's zone data does not have (the
    /// attribute's and the runtime's data of different versions) counts in UTC, and says so, once, at error
    /// level.
    pub(crate) fn time_zone(&self) -> TimeZone {
        match &self.0 {
            Repr::Utc => TimeZone::UTC,
            Repr::Checked(name) => TimeZone::get(name).unwrap_or_else(|_| {
                unknown_at_run_time(name);
                TimeZone::UTC
            }),
            Repr::Found(tz) => tz.clone(),
        }
    }
}

/// Says, once for each, that the zone `name` checked at compile time is unknown at run time.
fn unknown_at_run_time(name: &'static str) {
    static SAID: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(PoisonError::into_inner);
    if said.contains(&name) {
        return;
    }
    said.push(name);
    tracing::error!(
        zone = name,
        "rate limiter: the time zone {name} was checked when the program was built, but this build's zone \
         data does not have it: its calendar limits count their periods in UTC"
    );
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
