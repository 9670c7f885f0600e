//! A bucket's queue of charges: the state the token and leaky buckets share, and how a charge is given back
//! to it.

use super::{div, narrow, Receipt, Terms};

/// A point in time kept as whole µs plus a fraction in 1/max µs, so that a slot of `window / max` µs stays
/// exact: the state of the token and leaky buckets (`t` and `f` in their scripts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Schedule {
    micros: u64,
    fraction: u64,
}

impl Schedule {
    /// Returns how far this point is ahead of `now`, in µs × max (zero if it has passed).
    pub(crate) fn ahead(&self, now: u64, max: u64) -> u128 {
        if self.micros < now {
            0
        } else {
            u128::from(self.micros - now) * u128::from(max) + u128::from(self.fraction)
        }
    }

    /// Creates the point `ahead` (µs × max) after `now`.
    pub(crate) fn at(now: u64, ahead: u128, max: u64) -> Schedule {
        let whole = div(ahead, u128::from(max));
        Schedule {
            micros: now.saturating_add(narrow(whole)),
            fraction: narrow(ahead - whole * u128::from(max)),
        }
    }
}

/// A bucket's queue of charges (the token and leaky buckets' state): when the charges in it have all left
/// (the bucket full again, the queue empty), since when it has held charges without a pause (a run), and
/// what has been given back out of order since then.
///
/// Charges leave the queue in the order they joined it. A charge given back returns what is left of it ahead
/// of now, at most the units given back, and nothing once the queue has been empty since. Where it ends now
/// is where it ended when charged (its receipt), moved earlier by what was given back since of the charges
/// queued before it. What was given back since in all is known (`given`); what of it belonged to charges
/// queued *after* this one is in the records: one for each charge given back out of order whose charge is
/// still in the queue. So any give-back, in any order, from any node, is exact: the queue is as if the
/// charge had weighed what it kept. The last charge of the queue given back moves no other: it needs no
/// record, and the queue simply ends earlier.
///
/// A charge is given back at most once (an estimate settled, an outcome's charge): what is given back of
/// it is at most what it charged.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Queue {
    end: Schedule,
    since: u64,
    given: u64,
    /// In the queue's order: the charges given back out of order that are still in it.
    records: Vec<Record>,
}

/// A charge given back out of order: where it ended and what had been given back before it, as its receipt
/// says, and what it gave back (µs × max).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Record {
    ended: Schedule,
    given: u64,
    back: u128,
}

impl Queue {
    /// Creates the queue reaching `queued` (µs × max) past `now`, which has held charges without a pause since
    /// `since`, with `given` given back out of order since then: as a script reports it.
    pub(crate) fn at(now: u64, queued: u128, max: u64, since: u64, given: u64) -> Queue {
        Queue {
            end: Schedule::at(now, queued, max),
            since,
            given,
            records: Vec::new(),
        }
    }

    /// Returns how far the queue reaches past `now`, in µs × max (zero once empty).
    pub(crate) fn used(&self, now: u64, max: u64) -> u128 {
        self.end.ahead(now, max)
    }

    /// Charges the queue, at `now`, up to `used` (µs × max), and says what it charged.
    pub(crate) fn charge(&mut self, now: u64, used: u128, max: u64) -> Receipt {
        if self.used(now, max) == 0 {
            // Empty: a new run of charges, with nothing given back yet.
            self.since = now;
            self.given = 0;
            self.records.clear();
        }
        self.end = Schedule::at(now, used, max);
        Receipt {
            at: now,
            mark: self.end.micros,
            fraction: self.end.fraction,
            since: self.since,
            given: self.given,
        }
    }

    /// Gives back, at `now`, `units` of the charge of `charge` that `receipt` names (see [`Queue`]).
    pub(crate) fn give_back(&mut self, now: u64, charge: &Terms, units: u64, receipt: &Receipt) {
        let max = charge.max;
        let used = self.used(now, max);
        if used == 0 || receipt.since != self.since {
            return;
        }
        let ended = Schedule {
            micros: receipt.mark,
            fraction: receipt.fraction,
        };
        // Positions in the run, µs × max from its start: where a charge ended plus what had been given back
        // before it (so that moves do not reorder them), and now.
        let position = |ended: Schedule, given: u64| {
            i128::from(ended.micros - self.since.min(ended.micros)) * i128::from(max)
                + i128::from(ended.fraction)
                + i128::from(given)
        };
        let front = i128::from(now.saturating_sub(self.since)) * i128::from(max);
        // Where a charge at `at` ends now, given back meanwhile `behind` of charges queued after it.
        let ends = |at: i128, behind: u128| at - i128::from(self.given) + behind as i128;
        // Records of charges that have left are forgotten (ends grow with the queue's order).
        let mut behind = 0u128;
        let mut first = self.records.len();
        for (k, record) in self.records.iter().enumerate().rev() {
            if ends(position(record.ended, record.given), behind) <= front {
                break;
            }
            behind += record.back;
            first = k;
        }
        self.records.drain(..first);
        let at = position(ended, receipt.given);
        let behind: u128 = self
            .records
            .iter()
            .filter(|r| position(r.ended, r.given) > at)
            .map(|r| r.back)
            .sum();
        let left = (ends(at, behind) - front).max(0) as u128;
        let back = left
            .min(u128::from(units) * u128::from(charge.window))
            .min(used);
        if back == 0 {
            return;
        }
        if at != position(self.end, self.given) {
            let place = self
                .records
                .partition_point(|r| position(r.ended, r.given) <= at);
            self.records.insert(
                place,
                Record {
                    ended,
                    given: receipt.given,
                    back,
                },
            );
            self.given = self.given.saturating_add(narrow(back));
        }
        self.end = Schedule::at(now, used - back, max);
    }

    /// Gives back, at `now`, `units` of the slot of `charge` that `receipt` names, as a leaky bucket does: only
    /// from the line's end. A slot given back from the middle is a hole, recorded in the line's order until
    /// its end reaches it, then given back with it: moving the end earlier past a slot still held (on any
    /// node) would hand that slot out twice.
    pub(crate) fn give_back_slot(
        &mut self,
        now: u64,
        charge: &Terms,
        units: u64,
        receipt: &Receipt,
    ) {
        let max = charge.max;
        let used = self.used(now, max);
        if used == 0 || receipt.since != self.since {
            return;
        }
        let ended = Schedule {
            micros: receipt.mark,
            fraction: receipt.fraction,
        };
        let at = ended.ahead(now, max);
        if at == 0 {
            return;
        }
        let back = at.min(u128::from(units) * u128::from(charge.window));
        if back == 0 {
            return;
        }
        self.records.retain(|hole| hole.ended.ahead(now, max) > 0);
        if at != used {
            let place = self
                .records
                .partition_point(|hole| hole.ended.ahead(now, max) < at);
            self.records.insert(
                place,
                Record {
                    ended,
                    given: 0,
                    back,
                },
            );
            return;
        }
        let mut used = used - back;
        while let Some(k) = self
            .records
            .iter()
            .position(|hole| used > 0 && hole.ended.ahead(now, max) == used)
        {
            used -= self.records.remove(k).back.min(used);
        }
        self.end = Schedule::at(now, used, max);
    }
}
