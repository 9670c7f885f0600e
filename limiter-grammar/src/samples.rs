//! Texts every reader of these grammars must read alike, each with what it reads as (`None`: refused). The
//! attribute's tests (in `limiter-macros`) and the runtime's (its `FromStr` and environment readers) each run
//! every sample through their own reader and compare with the value here, so the two cannot drift apart; this
//! crate's test holds the grammars themselves to it. Not part of the API.

use crate::{Algorithm, Priority};

/// Durations, and their length in milliseconds. A window, the readers compare with, is longer than zero, so
/// `0s` is read but refused there.
pub const DURATIONS: &[(&str, Option<u64>)] = &[
    ("500ms", Some(500)),
    ("10s", Some(10_000)),
    ("1m", Some(60_000)),
    ("1h", Some(3_600_000)),
    ("1d", Some(86_400_000)),
    ("1h30m", Some(5_400_000)),
    ("1m30s", Some(90_000)),
    ("90s", Some(90_000)),
    ("1d12h", Some(129_600_000)),
    ("1s500ms", Some(1_500)),
    ("1d2h3m4s5ms", Some(93_784_005)),
    ("007s", Some(7_000)),
    (" 10s ", Some(10_000)),
    ("0s", Some(0)),
    ("99999999999h", Some(359_999_999_996_400_000)),
    ("18446744073709551615ms", Some(u64::MAX)),
    ("213503982334d14h", Some(18_446_744_073_708_000_000)),
    ("", None),
    ("  ", None),
    ("0", None),
    ("10", None),
    ("18446744073709552", None),
    ("18446744073709551616ms", None),
    ("213503982334d15h", None),
    ("213503982335d", None),
    ("213503982334602d", None),
    ("30s1m", None),
    ("1m1m", None),
    ("1ms1s", None),
    ("1h30", None),
    ("1h 30m", None),
    ("10 s", None),
    ("1.5s", None),
    ("s", None),
    ("ms", None),
    ("10x", None),
    ("1H", None),
    ("1sec", None),
    ("1µs", None),
    ("+5s", None),
    ("-5s", None),
    ("1_000s", None),
    ("1w", None),
    ("m1", None),
    ("1mm", None),
    ("1ms5", None),
];

/// Penalties, and their first and longest block in milliseconds.
pub const PENALTIES: &[(&str, Option<(u64, u64)>)] = &[
    ("10m", Some((600_000, 600_000))),
    ("1m..1h", Some((60_000, 3_600_000))),
    ("500ms .. 1h30m", Some((500, 5_400_000))),
    ("1s..1s", Some((1_000, 1_000))),
    ("1ms", Some((1, 1))),
    (" 1m..1h ", Some((60_000, 3_600_000))),
    ("", None),
    ("ten minutes", None),
    ("1m..", None),
    ("..1h", None),
    ("1m..1h..2h", None),
    ("1m...1h", None),
    ("10", None),
    ("1..60", None),
    ("10..1h", None),
    ("30m1h", None),
    ("0s", None),
    ("0s..1h", None),
    ("1h..0s", None),
    ("1h..1m", None),
    ("1.5s", None),
    ("10 s", None),
];

/// Shares as the samples write them: each priority and its percent, in the order written.
pub type Shares = &'static [(Priority, u8)];

/// Reserves, and the shares they keep, in the order written (`none` keeps none).
pub const RESERVES: &[(&str, Option<Shares>)] = &[
    ("critical 20%", Some(&[(Priority::Critical, 20)])),
    (
        "critical 10%, high 30%",
        Some(&[(Priority::Critical, 10), (Priority::High, 30)]),
    ),
    (
        " critical 10% ,high 30%, Normal 0%",
        Some(&[
            (Priority::Critical, 10),
            (Priority::High, 30),
            (Priority::Normal, 0),
        ]),
    ),
    ("high 100%", Some(&[(Priority::High, 100)])),
    ("high 007%", Some(&[(Priority::High, 7)])),
    ("HIGH 7%", Some(&[(Priority::High, 7)])),
    (
        "critical 30%, high 10%",
        Some(&[(Priority::Critical, 30), (Priority::High, 10)]),
    ),
    ("none", Some(&[])),
    (" None ", Some(&[])),
    ("", None),
    ("  ", None),
    ("critical=20,high=10", None),
    ("critical=20", None),
    ("critical 120%", None),
    ("critical 1000000000000000000000%", None),
    ("critical 20", None),
    ("critical 2.5%", None),
    ("critical x%", None),
    ("critical -5%", None),
    ("critical +5%", None),
    ("critical %", None),
    ("critical 20 %", None),
    ("urgent 20%", None),
    ("low 20%", None),
    ("critical 20%, critical 5%", None),
    ("critical 20%, Critical 5%", None),
    ("critical", None),
    ("20%", None),
    ("critical 20% high", None),
    ("critical 20%,", None),
    (", critical 20%", None),
    ("critical 20%;high 5%", None),
    ("none, critical 20%", None),
    ("nothing", None),
];

/// Priorities by name.
pub const PRIORITIES: &[(&str, Option<Priority>)] = &[
    ("low", Some(Priority::Low)),
    ("normal", Some(Priority::Normal)),
    ("high", Some(Priority::High)),
    ("critical", Some(Priority::Critical)),
    ("Critical", Some(Priority::Critical)),
    ("HIGH", Some(Priority::High)),
    (" high ", Some(Priority::High)),
    ("", None),
    ("urgent", None),
    ("crit ical", None),
    ("none", None),
    ("1", None),
    ("critical!", None),
];

/// Names of a rate's algorithm.
pub const ALGORITHMS: &[(&str, Option<Algorithm>)] = &[
    ("sliding_log", Some(Algorithm::SlidingLog)),
    ("fixed_window", Some(Algorithm::FixedWindow)),
    ("sliding_window", Some(Algorithm::SlidingWindow)),
    ("token_bucket", Some(Algorithm::TokenBucket)),
    ("leaky_bucket", Some(Algorithm::LeakyBucket)),
    (" token_bucket ", Some(Algorithm::TokenBucket)),
    ("in_flight", None),
    ("calendar", None),
    ("gcra", None),
    ("Token_Bucket", None),
    ("token bucket", None),
    ("token-bucket", None),
    ("", None),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{duration, penalty, reserve};

    /// Checks that the grammars read every sample as it says.
    #[test]
    fn the_grammars_read_the_samples() {
        for &(text, expected) in DURATIONS {
            assert_eq!(duration::millis(text).ok(), expected, "duration {text:?}");
        }
        for &(text, expected) in PENALTIES {
            let read = penalty::parse(text).ok();
            let read = read.map(|p| (p.first.as_millis() as u64, p.cap.as_millis() as u64));
            assert_eq!(read, expected, "penalty {text:?}");
        }
        for &(text, expected) in RESERVES {
            let read = reserve::parse(text).ok();
            let read = read.map(|shares| shares.iter().map(|s| (s.priority, s.percent)).collect());
            assert_eq!(read, expected.map(<[_]>::to_vec), "reserve {text:?}");
        }
        for &(text, expected) in PRIORITIES {
            assert_eq!(Priority::parse(text).ok(), expected, "priority {text:?}");
        }
        for &(text, expected) in ALGORITHMS {
            assert_eq!(Algorithm::parse(text).ok(), expected, "algorithm {text:?}");
        }
    }
}
