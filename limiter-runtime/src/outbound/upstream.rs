//! What an upstream's answer teaches the fleet calling it: a refusal (429, 503) and how long to wait
//! (`Retry-After`), or quota fields that say nothing is left until a reset (the IETF draft's `RateLimit` and
//! `RateLimit-Remaining`/`-Reset`, the common `X-RateLimit-Remaining`/`-Reset`, and the `-Requests` forms
//! some APIs send).

use std::time::{Duration, SystemTime};

/// The most a pause lasts, whatever an answer says: an hour.
pub(crate) const LONGEST: Duration = Duration::from_secs(3600);

/// What an answer teaches: a pause, how long and why (the status, 429 or 503; 0 when the quota fields said
/// nothing was left), whether it refused the call, and the quota it states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Learned {
    /// How long the key pauses: zero for a refusal that says nothing of when to come back.
    pub(crate) pause: Duration,
    pub(crate) status: u16,
    /// A 429 or a 503: the fleet's rate for the key shrinks.
    pub(crate) refused: bool,
    /// The quota its fields state (`RateLimit-Policy`, `X-RateLimit-Limit`): calls, over how long (`None`:
    /// the limit's own window).
    pub(crate) quota: Option<(u64, Option<Duration>)>,
}

/// What the quota fields of one answer said: the fewest calls left, when that count resets, and the quota.
#[derive(Debug, Default)]
struct Quota {
    remaining: Option<u64>,
    reset: Option<Duration>,
    stated: Option<(u64, Option<Duration>)>,
}

/// Reads an answer of `status` with `headers` (names in any case), received at `now`: what it teaches, if
/// anything. A 429 or a 503 pauses until its `Retry-After` (else the reset its quota fields give, else not at
/// all: the fleet's rate shrinks instead); any other answer whose quota fields leave nothing pauses until
/// their reset; a stated quota below the limit's lowers the fleet's rate.
pub(crate) fn learn<K: AsRef<str>, V: AsRef<[u8]>>(
    status: u16,
    headers: impl IntoIterator<Item = (K, V)>,
    now: SystemTime,
) -> Option<Learned> {
    let refused = matches!(status, 429 | 503);
    let (mut retry_after, mut quota) = (None, Quota::default());
    for (name, value) in headers {
        let (name, value) = (name.as_ref(), value.as_ref());
        let Ok(value) = std::str::from_utf8(value) else {
            continue;
        };
        let value = value.trim();
        match name.to_ascii_lowercase().as_str() {
            "retry-after" => retry_after = retry_after.or_else(|| after(value, now)),
            "ratelimit" => quota.structured(value),
            "ratelimit-remaining" | "x-ratelimit-remaining" | "x-ratelimit-remaining-requests" => {
                quota.left(value.parse().ok())
            }
            "ratelimit-reset" | "x-ratelimit-reset" | "x-ratelimit-reset-requests" => {
                quota.resets(reset(value, now))
            }
            "ratelimit-policy" | "ratelimit-limit" | "x-ratelimit-limit" => quota.states(value),
            _ => {}
        }
    }
    let spent = quota.remaining == Some(0);
    let pause = if refused {
        retry_after
            .or(quota.reset.filter(|_| spent))
            .unwrap_or(Duration::ZERO)
    } else if spent {
        quota.reset.unwrap_or(Duration::ZERO)
    } else {
        Duration::ZERO
    };
    let learned = Learned {
        pause: pause.min(LONGEST),
        status: if refused { status } else { 0 },
        refused,
        quota: quota.stated,
    };
    (refused || !learned.pause.is_zero() || learned.quota.is_some()).then_some(learned)
}

impl Quota {
    /// Reads a stated quota: the lowest of a list of policies, each `<calls>` or `"name";q=<calls>`, with
    /// `;w=<seconds>` (the draft's `RateLimit-Policy`, the common `X-RateLimit-Limit`).
    fn states(&mut self, value: &str) {
        for item in value.split(',') {
            let (mut calls, mut over) = (None, None);
            for (i, param) in item.split(';').enumerate() {
                let param = param.trim();
                match param.split_once('=') {
                    Some(("q", number)) => calls = number.trim().parse().ok(),
                    Some(("w", number)) => {
                        over = number.trim().parse().ok().map(Duration::from_secs)
                    }
                    None if i == 0 => calls = param.parse().ok(),
                    _ => {}
                }
            }
            let Some(calls) = calls else {
                continue;
            };
            let per_second = |(calls, over): (u64, Option<Duration>)| {
                calls as f64 / over.map_or(1.0, |over| over.as_secs_f64().max(1e-3))
            };
            let lower = self
                .stated
                .is_none_or(|stated| per_second((calls, over)) < per_second(stated));
            if lower {
                self.stated = Some((calls, over));
            }
        }
    }

    fn left(&mut self, remaining: Option<u64>) {
        if let Some(remaining) = remaining {
            self.remaining = Some(self.remaining.map_or(remaining, |r| r.min(remaining)));
        }
    }

    fn resets(&mut self, reset: Option<Duration>) {
        if let Some(reset) = reset {
            self.reset = Some(self.reset.map_or(reset, |r| r.max(reset)));
        }
    }

    /// Reads the draft's `RateLimit` field: a list of policies, each `"name";r=<left>;t=<seconds>` (draft 9
    /// on), or the older `limit=<n>, remaining=<left>, reset=<seconds>`.
    fn structured(&mut self, value: &str) {
        for item in value.split(',') {
            for param in item.split(';') {
                let Some((key, number)) = param.split_once('=') else {
                    continue;
                };
                let number = number.trim().trim_matches('"');
                match key.trim() {
                    "r" | "remaining" => self.left(number.parse().ok()),
                    "t" | "reset" => self.resets(number.parse().ok().map(Duration::from_secs)),
                    _ => {}
                }
            }
        }
    }
}

/// Reads a `Retry-After`: seconds, or an HTTP date.
fn after(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    static DATES: jiff::fmt::rfc2822::DateTimeParser = jiff::fmt::rfc2822::DateTimeParser::new();
    let at = DATES.parse_timestamp(value).ok()?;
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(at.as_second()).ok()?);
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Reads a reset: seconds from now (a fraction allowed), a Unix time in seconds (a number past a billion),
/// or a duration such as `1s`, `6m0s` or `20ms`.
fn reset(value: &str, now: SystemTime) -> Option<Duration> {
    if let Ok(seconds) = value.parse::<f64>() {
        if !(seconds >= 0.0 && seconds.is_finite()) {
            return None;
        }
        if seconds >= 1e9 {
            let at = SystemTime::UNIX_EPOCH + Duration::from_secs_f64(seconds);
            return Some(at.duration_since(now).unwrap_or(Duration::ZERO));
        }
        return Some(Duration::from_secs_f64(seconds));
    }
    // A duration: numbers, each with its unit (h, m, s, ms).
    let (mut total, mut rest) = (Duration::ZERO, value);
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            _ => return None,
        };
        total += Duration::try_from_secs_f64(number * seconds).ok()?;
        rest = &rest[unit..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn learned(status: u16, headers: &[(&str, &str)]) -> Option<Learned> {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        learn(status, headers.iter().copied(), now)
    }

    fn pause(seconds: f64, status: u16) -> Option<Learned> {
        Some(Learned {
            pause: Duration::from_secs_f64(seconds),
            status,
            refused: status != 0,
            quota: None,
        })
    }

    #[test]
    fn a_refusal_pauses_until_its_retry_after() {
        assert_eq!(learned(429, &[("Retry-After", "2")]), pause(2.0, 429));
        assert_eq!(learned(503, &[("retry-after", " 7 ")]), pause(7.0, 503));
        // An HTTP date, 30 s after the answer.
        let date = "Fri, 15 Jan 2027 08:00:30 GMT";
        let at: jiff::Timestamp = "2027-01-15T08:00:30Z".parse().unwrap();
        let expected = Duration::from_secs(at.as_second() as u64 - 1_800_000_000);
        assert_eq!(
            learned(429, &[("Retry-After", date)]).unwrap().pause,
            expected
        );
        // Without one: the reset its quota fields give, else no pause (the fleet's rate shrinks).
        assert_eq!(
            learned(
                429,
                &[("X-RateLimit-Remaining", "0"), ("X-RateLimit-Reset", "5")]
            ),
            pause(5.0, 429)
        );
        assert_eq!(learned(429, &[]), pause(0.0, 429));
        assert_eq!(learned(429, &[("Retry-After", "soon")]), pause(0.0, 429));
    }

    #[test]
    fn quota_fields_that_leave_nothing_pause_until_their_reset() {
        assert_eq!(
            learned(200, &[("RateLimit", "\"default\";r=0;t=3")]),
            pause(3.0, 0)
        );
        assert_eq!(
            learned(200, &[("RateLimit", "limit=100, remaining=0, reset=4")]),
            pause(4.0, 0)
        );
        assert_eq!(
            learned(
                200,
                &[("RateLimit-Remaining", "0"), ("RateLimit-Reset", "2")]
            ),
            pause(2.0, 0)
        );
        // A Unix time, 10 s on; OpenAI's durations.
        assert_eq!(
            learned(
                200,
                &[
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", "1800000010")
                ]
            ),
            pause(10.0, 0)
        );
        assert_eq!(
            learned(
                200,
                &[
                    ("x-ratelimit-remaining-requests", "0"),
                    ("x-ratelimit-reset-requests", "1m30s")
                ]
            ),
            pause(90.0, 0)
        );
        assert_eq!(
            learned(
                200,
                &[
                    ("x-ratelimit-remaining-requests", "0"),
                    ("x-ratelimit-reset-requests", "20ms")
                ]
            ),
            pause(0.02, 0)
        );
    }

    /// Checks that a stated quota is read from either field, the lowest rate of a list.
    #[test]
    fn a_stated_quota_is_the_lowest_rate_of_its_fields() {
        let stated = |headers: &[(&str, &str)]| learned(200, headers).and_then(|l| l.quota);
        assert_eq!(stated(&[("X-RateLimit-Limit", "5")]), Some((5, None)));
        let minute = Some(Duration::from_secs(60));
        assert_eq!(
            stated(&[(
                "RateLimit-Policy",
                "\"burst\";q=100;w=60, \"day\";q=1000;w=86400"
            )]),
            Some((1000, Some(Duration::from_secs(86_400))))
        );
        assert_eq!(
            stated(&[("RateLimit-Policy", "100;w=60")]),
            Some((100, minute))
        );
        assert_eq!(stated(&[("X-RateLimit-Limit", "many")]), None);
    }

    #[test]
    fn an_answer_with_calls_left_or_no_time_teaches_nothing() {
        assert_eq!(learned(200, &[]), None);
        assert_eq!(learned(500, &[("Retry-After", "3")]), None);
        assert_eq!(
            learned(
                200,
                &[("X-RateLimit-Remaining", "4"), ("X-RateLimit-Reset", "5")]
            ),
            None
        );
        assert_eq!(learned(200, &[("X-RateLimit-Remaining", "0")]), None);
        assert_eq!(learned(200, &[("RateLimit", "\"a\";r=0;t=bogus")]), None);
        // An hour at most.
        assert_eq!(
            learned(429, &[("Retry-After", "999999")]).unwrap().pause,
            LONGEST
        );
    }
}
