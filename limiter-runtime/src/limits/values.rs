//! Reading one field's value: its TOML type, then its text through the grammar the attribute and the
//! environment read it with (`limiter_grammar`, and the runtime's `FromStr`s over it), so that the file takes
//! exactly what they take.

use std::ops::Range;
use std::time::Duration;

use toml::de::DeValue;
use toml::Spanned;

use super::error::{LimitsError, Source};
use super::fields::{Field, Place};
use crate::calendar::{Period, Zone};
use crate::priority::Reserves;
use crate::{Algorithm, OnError, Penalty};

/// One field's value, read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Setting {
    Prefix(String),
    Algorithm(Algorithm),
    Max(u64),
    Window(Duration),
    Message(String),
    Penalty(Penalty),
    Reserve(Reserves),
    Burst(u64),
    MaxWait(Duration),
    InFlight(u64),
    Shadow(bool),
    OnError(OnError),
    Lease(u64),
    LeaseTtl(Duration),
    InFlightTtl(Duration),
    Period(Period),
    Tz(Zone),
    Anchor(u8),
}

impl Setting {
    /// Returns the field a setting is of.
    pub(crate) fn field(&self) -> Field {
        match self {
            Setting::Prefix(_) => Field::Prefix,
            Setting::Algorithm(_) => Field::Algorithm,
            Setting::Max(_) => Field::Max,
            Setting::Window(_) => Field::Window,
            Setting::Message(_) => Field::Message,
            Setting::Penalty(_) => Field::Penalty,
            Setting::Reserve(_) => Field::Reserve,
            Setting::Burst(_) => Field::Burst,
            Setting::MaxWait(_) => Field::MaxWait,
            Setting::InFlight(_) => Field::InFlight,
            Setting::Shadow(_) => Field::Shadow,
            Setting::OnError(_) => Field::OnError,
            Setting::Lease(_) => Field::Lease,
            Setting::LeaseTtl(_) => Field::LeaseTtl,
            Setting::InFlightTtl(_) => Field::InFlightTtl,
            Setting::Period(_) => Field::Period,
            Setting::Tz(_) => Field::Tz,
            Setting::Anchor(_) => Field::Anchor,
        }
    }
}

/// A field's value as written, with what its errors need: the file, and where the field is.
pub(crate) struct Written<'v, 'i> {
    pub(crate) source: Source<'v>,
    pub(crate) field: Field,
    pub(crate) place: Place<'v>,
    pub(crate) value: &'v Spanned<DeValue<'i>>,
}

/// Reads the value of `written.field`.
pub(crate) fn read(written: &Written<'_, '_>) -> Result<Setting, LimitsError> {
    Ok(match written.field {
        Field::Prefix => Setting::Prefix(
            written
                .text("`prefix = \"rate_limit:search:\"`")?
                .to_owned(),
        ),
        Field::Message => Setting::Message(written.text("`message = \"slow down\"`")?.to_owned()),
        Field::Max => Setting::Max(written.count("`max = 100`")?),
        Field::Burst => Setting::Burst(written.count("`burst = 20`")?),
        Field::InFlight => Setting::InFlight(written.count("`in_flight = 4`")?),
        Field::Lease => Setting::Lease(written.count("`lease = 50`")?),
        Field::Window => Setting::Window(written.length()?),
        Field::MaxWait => Setting::MaxWait(written.length()?),
        Field::LeaseTtl => Setting::LeaseTtl(written.length()?),
        Field::InFlightTtl => Setting::InFlightTtl(written.length()?),
        Field::Shadow => Setting::Shadow(written.switch()?),
        Field::Algorithm => Setting::Algorithm(written.algorithm()?),
        Field::Penalty => Setting::Penalty(written.parsed("`penalty = \"1m..1h\"`", penalty)?),
        Field::Reserve => {
            Setting::Reserve(written.parsed("`reserve = \"critical 20%\"`", reserve)?)
        }
        Field::OnError => Setting::OnError(written.parsed("`on_error = \"local\"`", on_error)?),
        Field::Period => Setting::Period(written.parsed("`period = \"month\"`", period)?),
        Field::Tz => Setting::Tz(written.parsed("`tz = \"Europe/Berlin\"`", zone)?),
        Field::Anchor => Setting::Anchor(written.anchor()?),
    })
}

/// Why a text was refused, and where in it (bytes of the text) when the grammar says.
type Refusal = (String, Option<Range<usize>>);

impl Written<'_, '_> {
    /// Returns the error `problem` at the value.
    fn error(&self, problem: impl Into<String>) -> LimitsError {
        self.source.limits(&self.value.span(), problem)
    }

    /// Returns the error of a value of the wrong type: the field takes `takes`.
    fn wrong_type(&self, takes: &str) -> LimitsError {
        let (field, place) = (self.field, self.place);
        let found = kind_of(self.value.get_ref());
        let hint = match self.value.get_ref() {
            DeValue::String(text) if text.trim().parse::<i128>().is_ok() => {
                " (write it without quotes)"
            }
            _ => "",
        };
        self.error(format!(
            "`{field}` {place} takes {takes}, not {found}{hint}"
        ))
    }

    /// Reads a string.
    fn text(&self, example: &str) -> Result<&str, LimitsError> {
        match self.value.get_ref() {
            DeValue::String(text) => Ok(text),
            _ => Err(self.wrong_type(&format!("a string, e.g. {example}"))),
        }
    }

    /// Reads a whole number, at least 1 (`max`, `burst`, `in_flight`, `lease`): a limit of zero admits nothing.
    fn count(&self, example: &str) -> Result<u64, LimitsError> {
        let field = self.field;
        let number = match self.value.get_ref() {
            DeValue::Integer(number) => i128::from_str_radix(number.as_str(), number.radix()),
            _ => {
                return Err(self.wrong_type(&format!("a whole number, at least 1, e.g. {example}")))
            }
        };
        match number {
            Ok(0) => Err(self.error(format!(
                "`{field} = 0` admits no call: `{field}` is at least 1, e.g. {example}"
            ))),
            Ok(number) if number < 0 => Err(self.error(format!(
                "`{field} = {number}` is negative: `{field}` is a whole number, at least 1, e.g. {example}"
            ))),
            Ok(number) => u64::try_from(number).map_err(|_| self.too_large()),
            Err(_) => Err(self.too_large()),
        }
    }

    /// Returns the error of a whole number past `u64`.
    fn too_large(&self) -> LimitsError {
        let field = self.field;
        self.error(format!(
            "`{field}` is too large: it is at most {}",
            u64::MAX
        ))
    }

    /// Reads a duration longer than zero: whole seconds (`window = 60`), or a duration's text (`"1m30s"`).
    fn length(&self) -> Result<Duration, LimitsError> {
        let field = self.field;
        let takes = format!(
            "whole seconds (`{field} = 10`) or a duration string (`\"500ms\"`, `\"10s\"`, `\"1m30s\"`, `\"1h\"`, \
             `\"1d\"`)"
        );
        let millis = match self.value.get_ref() {
            DeValue::Integer(secs) => match i128::from_str_radix(secs.as_str(), secs.radix()) {
                Ok(secs) if secs < 0 => {
                    let problem = format!("`{field} = {secs}` is negative: {field} takes {takes}");
                    return Err(self.error(problem));
                }
                Ok(secs) => u64::try_from(secs)
                    .ok()
                    .and_then(|secs| secs.checked_mul(1_000)),
                Err(_) => None,
            },
            DeValue::String(text) => {
                let read = limiter_grammar::duration::millis(text).map_err(|error| {
                    let problem = format!("`{field}` {} is not a duration: {error}", self.place);
                    self.error_in_text(text, problem, error.range())
                })?;
                Some(read)
            }
            _ => return Err(self.wrong_type(&takes)),
        };
        match millis {
            Some(0) => Err(self.error(format!(
                "`{field}` must be longer than zero, e.g. `{field} = \"10s\"`"
            ))),
            Some(millis) => Ok(Duration::from_millis(millis)),
            None => Err(self.error(format!(
                "`{field}` is too long: a duration is at most {} milliseconds",
                u64::MAX
            ))),
        }
    }

    /// Reads `true` or `false`.
    fn switch(&self) -> Result<bool, LimitsError> {
        match self.value.get_ref() {
            DeValue::Boolean(on) => Ok(*on),
            _ => Err(self.wrong_type("`true` (count and report, never refuse) or `false`")),
        }
    }

    /// Reads a rate's algorithm by its name, as the grammar reads `algorithm = ...`.
    fn algorithm(&self) -> Result<Algorithm, LimitsError> {
        let expected = limiter_grammar::algorithm::expected();
        let text = self.text(&format!(
            "`algorithm = \"sliding_window\"`, one of {expected}"
        ))?;
        // The runtime's `FromStr` is the grammar's reading; the grammar's error says why a name is refused.
        match limiter_grammar::Algorithm::parse(text) {
            Ok(_) => text.parse().map_err(|error| self.error(format!("{error}"))),
            Err(error) => Err(self.error(format!("`algorithm` {}: {error}", self.place))),
        }
    }

    /// Reads a billing day: a whole number from 1 to 31.
    fn anchor(&self) -> Result<u8, LimitsError> {
        let example = "`anchor = 15`";
        let takes =
            format!("the billing day of a month, a whole number from 1 to 31, e.g. {example}");
        let DeValue::Integer(number) = self.value.get_ref() else {
            return Err(self.wrong_type(&takes));
        };
        match i128::from_str_radix(number.as_str(), number.radix()) {
            Ok(day @ 1..=31) => Ok(day as u8),
            _ => Err(self.error(format!(
                "`anchor = {}` is not a day of a month: the billing day is 1 to 31 (31 is the last day of every \
                 month)",
                number.as_str()
            ))),
        }
    }

    /// Reads a string with `parse`, the runtime's reader of the same text elsewhere.
    fn parsed<T>(
        &self,
        example: &str,
        parse: impl FnOnce(&str) -> Result<T, Refusal>,
    ) -> Result<T, LimitsError> {
        let text = self.text(example)?;
        parse(text).map_err(|(problem, range)| {
            let problem = format!("`{}` {}: {problem}", self.field, self.place);
            self.error_in_text(text, problem, range)
        })
    }

    /// Returns the error `problem` at the bytes `range` of the value's text, when the file writes the text as
    /// it is (a string with no escapes); else at the value.
    fn error_in_text(
        &self,
        text: &str,
        problem: String,
        range: Option<Range<usize>>,
    ) -> LimitsError {
        let span = self.value.span();
        let written = self.source.slice(&span);
        let plain = written.len() == text.len() + 2
            && (written.starts_with('"') || written.starts_with('\''))
            && written.get(1..written.len() - 1) == Some(text);
        match range {
            Some(range) if plain => self
                .source
                .limits(&(span.start + 1 + range.start..span.end), problem),
            _ => self.source.limits(&span, problem),
        }
    }
}

/// Returns what a value is, for messages: "a string", "an integer".
pub(crate) fn kind_of(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date-time",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// Reads a penalty (`10m`, `1m..1h`) as `Penalty`'s `FromStr`, which the attribute's grammar is.
fn penalty(text: &str) -> Result<Penalty, Refusal> {
    let error = match limiter_grammar::penalty::parse(text) {
        Ok(_) => {
            return text
                .parse::<Penalty>()
                .map_err(|error| (error.to_string(), None))
        }
        Err(error) => error,
    };
    let problem =
        format!("expected a length, `10m`, or the first and the longest block, `1m..1h`: {error}");
    Err((problem, Some(error.range())))
}

/// Reads shares (`critical 20%, high 30%`, `none`) as `LIMITER_RESERVE` does.
fn reserve(text: &str) -> Result<Reserves, Refusal> {
    match limiter_grammar::reserve::parse(text) {
        Ok(_) => text
            .parse::<Reserves>()
            .map_err(|error| (error.to_string(), None)),
        Err(error) => Err((error.to_string(), error.range())),
    }
}

/// Reads `open`, `closed` or `local`.
fn on_error(text: &str) -> Result<OnError, Refusal> {
    text.parse::<OnError>()
        .map_err(|error| (error.to_string(), None))
}

/// Reads `day`, `week` or `month`.
fn period(text: &str) -> Result<Period, Refusal> {
    text.parse::<Period>()
        .map_err(|error| (error.to_string(), None))
}

/// Reads an IANA zone's name, from the zone data the runtime bundles.
fn zone(text: &str) -> Result<Zone, Refusal> {
    Zone::get(text).map_err(|_| {
        let problem = format!(
            "unknown time zone `{text}`: expected an IANA zone's name, e.g. `Europe/Berlin`, `America/Sao_Paulo` \
             or `UTC`"
        );
        (problem, None)
    })
}
