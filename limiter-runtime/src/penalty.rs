//! Penalties and bans: a key that its limit refuses is blocked for a while, every call of it refused until the
//! block ends; longer for a key that keeps coming back; and an operator's ban is a block of a length chosen by
//! hand. [`Penalty`] is what a rule asks for; [`Block`] is the state each store keeps beside the limit's, and
//! its arithmetic the one both stores run: in memory here, in Redis in `scripts/parts/offence.lua` (the same
//! integers), so that the two decide alike.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;
use std::time::Duration;

/// A penalty on a rule ([`Rule::penalty`](crate::Rule::penalty), `penalty = "10m"` on the attribute): a call
/// that the rule's limit refuses blocks its key for a while, and every call of that key is refused until the
/// block ends, on every node, with `retry_after` the block's remaining time.
///
/// - [`fixed`](Penalty::fixed): every block is as long (`penalty = "10m"`).
/// - [`escalating`](Penalty::escalating): the first block is `first` long, each repeat offence's twice the
///   one before, up to `cap` (`penalty = "1m..1h"`). A key that stays clean for `cap` after its block ends
///   starts again at `first`.
///
/// A block lasts at least until the limit would admit the call that started it (the limit's `retry_after`,
/// when later than the penalty's length), so a client that waits as long as it is told is admitted and never
/// offends for having obeyed. Calls refused during a block do not extend it (so `Retry-After` stays true),
/// and count nothing. A call
/// whose cost the limit can never admit ([`Reason::TooLarge`](crate::Reason::TooLarge)) is not an offence.
/// The block is read and written by the same atomic script call that counts (one round trip, as without a
/// penalty); see `guide::penalties`.
///
/// ```
/// use limiter_runtime::{Penalty, Rule};
/// use std::time::Duration;
///
/// // Five attempts a minute; a key that tries a sixth is locked out for a minute, then 2, 4, ... up to an hour.
/// let login = Rule::new()
///     .prefix("login:")
///     .max(5)
///     .window(Duration::from_secs(60))
///     .penalty(Penalty::escalating(Duration::from_secs(60), Duration::from_secs(3600)));
/// # let _ = login;
/// assert_eq!("1m..1h".parse::<Penalty>().unwrap(), Penalty::escalating(Duration::from_secs(60), Duration::from_secs(3600)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Penalty {
    /// The lengths in µs, as the stores take them (small: every rule and call carries one).
    first: NonZeroU64,
    cap: u64,
}

/// The shortest block, µs: Redis keeps a key's time to live in milliseconds.
const SHORTEST: u64 = 1_000;

impl Penalty {
    /// Makes every block `length` long (at least a millisecond).
    pub const fn fixed(length: Duration) -> Penalty {
        Penalty::escalating(length, length)
    }

    /// Makes a first block `first` long (at least a millisecond), each repeat offence's twice as long as the one
    /// before, up to `cap` (a `cap` below `first` is `first`: a fixed penalty). The count of offences is
    /// forgotten once the key has been clean for `cap` since its last block ended.
    pub const fn escalating(first: Duration, cap: Duration) -> Penalty {
        const fn micros(d: Duration) -> u64 {
            let us = d.as_micros();
            if us > u64::MAX as u128 {
                u64::MAX
            } else {
                us as u64
            }
        }
        let first = if micros(first) < SHORTEST {
            SHORTEST
        } else {
            micros(first)
        };
        let cap = if micros(cap) < first {
            first
        } else {
            micros(cap)
        };
        Penalty {
            first: match NonZeroU64::new(first) {
                Some(first) => first,
                None => NonZeroU64::MIN,
            },
            cap,
        }
    }

    /// Returns the first block's length.
    pub const fn first(&self) -> Duration {
        Duration::from_micros(self.first.get())
    }

    /// Returns the longest block (the first's, for a fixed penalty).
    pub const fn cap(&self) -> Duration {
        Duration::from_micros(self.cap)
    }

    /// No penalty, but blocks read: what a call of a rule without a penalty carries while a ban is in force
    /// under its policy. Its calls are refused while their key is blocked, and never start a block (a cap of
    /// zero, which no public constructor makes).
    pub(crate) const READS_BLOCKS: Penalty = Penalty {
        first: NonZeroU64::MIN,
        cap: 0,
    };

    /// Returns whether an offence starts a block: a penalty's does; [`READS_BLOCKS`](Penalty::READS_BLOCKS)'s not.
    #[inline]
    pub(crate) fn starts_blocks(&self) -> bool {
        self.cap != 0
    }

    /// Returns the first block's length, µs, as the stores compute with it.
    #[inline]
    pub(crate) fn first_micros(&self) -> u64 {
        self.first.get()
    }

    /// Returns the longest block's length, µs.
    #[inline]
    pub(crate) fn cap_micros(&self) -> u64 {
        self.cap
    }
}

impl fmt::Display for Penalty {
    /// Formats it as the attribute writes it: `600s`, or `60s..3600s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = |d: Duration| match d.subsec_millis() {
            0 => format!("{}s", d.as_secs()),
            _ => format!("{}ms", d.as_millis()),
        };
        match self.first.get() == self.cap {
            true => f.write_str(&text(self.first())),
            false => write!(f, "{}..{}", text(self.first()), text(self.cap())),
        }
    }
}

/// The text of a penalty that is not one, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{text}` is not a penalty (a length, `10m`, or the first and the longest block, `1m..1h`): {reason}"
)]
pub struct PenaltyError {
    text: String,
    reason: limiter_grammar::penalty::PenaltyError,
}

impl FromStr for Penalty {
    type Err = PenaltyError;

    /// Parses `10m` (fixed) or `1m..1h` (escalating), as the attribute reads `penalty = "..."`: each length a
    /// duration longer than zero, in the attribute's units (`ms`, `s`, `m`, `h`, `d`), the first no longer than
    /// the longest (see `limiter_grammar::penalty`).
    fn from_str(text: &str) -> Result<Penalty, PenaltyError> {
        match limiter_grammar::penalty::parse(text) {
            Ok(read) => Ok(Penalty::escalating(read.first, read.cap)),
            Err(reason) => Err(PenaltyError {
                text: text.to_owned(),
                reason,
            }),
        }
    }
}

/// Offences counted at most: past this many, the next block is still the longest.
const MOST_OFFENCES: u32 = 64;

/// A key's block, in force or ended and remembered for its offence count: what Redis keeps at the limit's block
/// key as `<until µs>:<offences>:<p|b>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    /// When it ends, on the store's clock (µs).
    pub(crate) until: u64,
    /// Offences since the key was last forgiven (a ban keeps the count it found).
    pub(crate) offences: u32,
    /// An operator's ban, not a penalty.
    pub(crate) banned: bool,
    /// A pause learned from an upstream's answer (see [`outbound`](crate::outbound)), not a penalty: the
    /// status it answered (429, 503), or 0 when its quota fields said nothing was left.
    pub(crate) upstream: Option<u16>,
    /// Beside an upstream's pause, in force or over: the rate its fleet learned for the key, in thousandths
    /// of the limit's `max` (see [`outbound::rate`](crate::outbound::rate)); `None` for the whole limit.
    pub(crate) learned: Option<u32>,
}

impl Block {
    /// Returns what is left of it at `now` (µs), if it is in force.
    #[inline]
    pub(crate) fn remaining(&self, now: u64) -> Option<u64> {
        (self.until > now).then(|| self.until - now)
    }

    /// Returns the block an offence at `now` starts, after `previous` (the key's block, if one is remembered): the
    /// first length, or, if the key offends again before it has been clean for `cap` since its last block
    /// ended, twice the last one's, up to `cap`; and never shorter than `admits_after` µs, the time the limit
    /// would admit the offending call (its `retry_after`), so that a client that waits as long as it is told
    /// is admitted, and is never an offender for having obeyed.
    pub(crate) fn offence(
        previous: Option<&Block>,
        now: u64,
        penalty: &Penalty,
        admits_after: u64,
    ) -> Block {
        let offences = match previous {
            Some(block) if now < block.forgotten_at(penalty) => {
                (block.offences + 1).min(MOST_OFFENCES)
            }
            _ => 1,
        };
        Block {
            until: now.saturating_add(length(offences, penalty).max(admits_after)),
            offences,
            banned: false,
            upstream: None,
            learned: None,
        }
    }

    /// Creates an operator's ban until `until`, keeping the offences `previous` counted.
    pub(crate) fn ban(previous: Option<&Block>, until: u64) -> Block {
        Block {
            until,
            offences: previous.map_or(0, |block| block.offences),
            banned: true,
            upstream: None,
            learned: None,
        }
    }

    /// Creates an upstream's pause until `until`, for its answer `status` (unless `previous` ends later: it
    /// stays), with the rate `learned` (thousandths of `max`; `None`: the whole).
    pub(crate) fn pause(
        previous: Option<&Block>,
        until: u64,
        status: u16,
        learned: Option<u32>,
    ) -> Block {
        match previous {
            Some(block) if block.until >= until && block.upstream.is_some() => {
                Block { learned, ..*block }
            }
            Some(block) if block.until >= until => *block,
            _ => Block {
                until,
                offences: 0,
                banned: false,
                upstream: Some(status),
                learned,
            },
        }
    }

    /// Returns when nothing of it matters any more: `cap` after it ends (its offences are then forgiven).
    #[inline]
    pub(crate) fn forgotten_at(&self, penalty: &Penalty) -> u64 {
        self.until.saturating_add(penalty.cap)
    }

    /// Returns it as Redis keeps it: `<until>:<offences>:<p|b>`, or `<until>:<status>:u[:<learned>]` for a pause
    /// (`scripts/parts/offence.lua`, `scripts/ban.lua` and `scripts/pause.lua` write it).
    #[cfg(test)]
    pub(crate) fn text(&self) -> String {
        match (self.upstream, self.learned) {
            (Some(status), Some(rate)) => format!("{}:{status}:u:{rate}", self.until),
            (Some(status), None) => format!("{}:{status}:u", self.until),
            (None, _) => {
                let kind = if self.banned { 'b' } else { 'p' };
                format!("{}:{}:{kind}", self.until, self.offences)
            }
        }
    }

    /// Parses a block as Redis keeps it, if `text` is one.
    pub(crate) fn parse(text: &str) -> Option<Block> {
        let mut parts = text.split(':');
        let until = parts.next()?.parse().ok()?;
        let second = parts.next()?;
        let (offences, banned, upstream) = match parts.next()? {
            "p" => (second.parse().ok()?, false, None),
            "b" => (second.parse().ok()?, true, None),
            "u" => (0, false, Some(second.parse().ok()?)),
            _ => return None,
        };
        let learned = match (upstream, parts.next()) {
            (_, None) => None,
            (Some(_), Some(rate)) => Some(rate.parse().ok()?),
            (None, Some(_)) => return None,
        };
        parts.next().is_none().then_some(Block {
            until,
            offences,
            banned,
            upstream,
            learned,
        })
    }
}

/// Returns how long the block of the `offences`-th offence lasts: `first`, doubled at each offence after it, up to
/// `cap`.
fn length(offences: u32, penalty: &Penalty) -> u64 {
    let doublings = offences.saturating_sub(1).min(63);
    penalty
        .first
        .get()
        .saturating_mul(1 << doublings)
        .min(penalty.cap)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000;

    /// Checks that blocks last 1 s, 2 s, 4 s, 4 s: each repeat offence doubles up to the cap; clean for the cap after a
    /// block, the key starts again at the first length.
    #[test]
    fn blocks_double_up_to_the_cap_and_are_forgiven_after_it() {
        let terms = &Penalty::escalating(Duration::from_secs(1), Duration::from_secs(4));
        let mut block = None;
        let mut now = 0;
        for expected in [1, 2, 4, 4] {
            let next = Block::offence(block.as_ref(), now, terms, 0);
            assert_eq!(next.until - now, expected * SECOND);
            now = next.until;
            block = Some(next);
        }
        // Just short of the cap after the block ended: still remembered.
        let again = Block::offence(block.as_ref(), now + 4 * SECOND - 1, terms, 0);
        assert_eq!(again.until - (now + 4 * SECOND - 1), 4 * SECOND);
        // Clean for the cap: forgiven.
        let fresh = Block::offence(block.as_ref(), now + 4 * SECOND, terms, 0);
        assert_eq!(
            (fresh.until - (now + 4 * SECOND), fresh.offences),
            (SECOND, 1)
        );
    }

    /// Checks that a block never ends before the limit would admit the offending call: a 1 s penalty on a limit that
    /// admits again in 60 s blocks for 60 s; a longer penalty keeps its own length.
    #[test]
    fn a_block_lasts_until_the_limit_admits_again() {
        let terms = &Penalty::escalating(Duration::from_secs(1), Duration::from_secs(100));
        let first = Block::offence(None, 7, terms, 60 * SECOND);
        assert_eq!((first.until, first.offences), (7 + 60 * SECOND, 1));
        let later = Block::offence(Some(&first), first.until, terms, SECOND / 2);
        assert_eq!(later.until - first.until, 2 * SECOND);
    }

    #[test]
    fn penalties_read_and_write_as_the_attribute_does() {
        let minute = Duration::from_secs(60);
        assert_eq!("10m".parse(), Ok(Penalty::fixed(10 * minute)));
        assert_eq!(
            "1m..1h".parse(),
            Ok(Penalty::escalating(minute, 60 * minute))
        );
        for bad in [
            "",
            "1h..1m",
            "0s",
            "10 minutes",
            "1m..",
            "..1h",
            "1m..1h..2h",
        ] {
            let error = bad.parse::<Penalty>().unwrap_err();
            assert!(error.to_string().contains("is not a penalty"), "{bad}");
        }
        assert_eq!(
            Penalty::escalating(minute, 60 * minute).to_string(),
            "60s..3600s"
        );
        assert_eq!(
            Penalty::fixed(Duration::ZERO).first(),
            Duration::from_millis(1)
        );
        assert_eq!(Penalty::escalating(minute, Duration::ZERO).cap(), minute);
    }

    #[test]
    fn a_block_reads_back_as_written() {
        for block in [
            Block {
                until: 17,
                offences: 3,
                banned: false,
                upstream: None,
                learned: None,
            },
            Block {
                until: u64::MAX,
                offences: 0,
                banned: true,
                upstream: None,
                learned: None,
            },
            Block::pause(None, 99, 429, None),
            Block::pause(None, 99, 429, Some(810)),
        ] {
            assert_eq!(Block::parse(&block.text()), Some(block));
        }
        // A pause does not shorten a longer block.
        let ban = Block::ban(None, 500);
        assert_eq!(Block::pause(Some(&ban), 99, 503, Some(900)), ban);
        for bad in ["", "1:2", "1:2:x", "1:2:p:3", "a:2:p", "1:x:u"] {
            assert_eq!(Block::parse(bad), None, "{bad}");
        }
    }
}
