//! A bucket's queue of charges: the state the token and leaky buckets share, and how a charge is given back
//! to it.

use super::{div, narrow, Charge, Receipt};

/// A point in time kept as whole µs plus a fraction in 1/max µs, so that a slot of `window / max` µs stays
/// exact: the state of the token and leaky buckets (`t` and `f` in their scripts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Schedule {
    micros: u64,
    fraction: u64,
}

impl Schedule {
    /// How far this point is ahead of `now`, in µs × max (zero if it has passed).
    pub(crate) fn ahead(&self, now: u64, max: u64) -> u128 {
        if self.micros < now {
            0
        } else {
            u128::from(self.micros - now) * u128::from(max) + u128::from(self.fraction)
        }
    }

    /// The point `ahead` (µs × max) after `now`.
    pub(crate) fn at(now: u64, ahead: u128, max: u64) -> Schedule {
        let whole = div(ahead, u128::from(max));
        Schedule {
            micros: now.saturating_add(narrow(whole)),
            fraction: narrow(ahead - whole * u128::from(max)),
        }
    }
}

/// A bucket's queue of charges (the token and leaky buckets' state): when the charges in it have all left
/// (the bucket full again, the queue empty), since when it has held charges without a pause, and what has
/// been given back since then.
///
/// A charge is given back by moving the end back by what is left of it, at most the units given back
/// ([`give_back`](Queue::give_back)). Where a charge ended is known from its receipt; charges given back since may
/// have moved it earlier (those queued before it), by at most their total, so that total is taken off: the
/// queue never gives back more than the charge's absence would have, so never more than the limit allows. It
/// gives back exactly the charge when nothing else was given back meanwhile and nothing queued after it (a
/// charge given back from the end of the queue moves no other, and is not counted as given back).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Queue {
    end: Schedule,
    since: u64,
    given: u64,
}

impl Queue {
    /// The queue reaching `queued` (µs × max) past `now`, which has held charges without a pause since
    /// `since`, with `given` given back since then: as a script reports it.
    pub(crate) fn at(now: u64, queued: u128, max: u64, since: u64, given: u64) -> Queue {
        Queue {
            end: Schedule::at(now, queued, max),
            since,
            given,
        }
    }

    /// How far the queue reaches past `now`, in µs × max (zero once empty).
    pub(crate) fn used(&self, now: u64, max: u64) -> u128 {
        self.end.ahead(now, max)
    }

    /// Charges the queue, at `now`, up to `used` (µs × max), and says what it charged.
    pub(crate) fn charge(&mut self, now: u64, used: u128, max: u64) -> Receipt {
        if self.used(now, max) == 0 {
            // Empty: a new run of charges, with nothing given back yet.
            self.since = now;
            self.given = 0;
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

    /// Gives back, at `now`, `units` of the charge of `charge` that `receipt` names (see [`Queue`]); nothing
    /// once the queue has been empty since (the charge has left).
    pub(crate) fn give_back(&mut self, now: u64, charge: &Charge, units: u64, receipt: &Receipt) {
        let used = self.used(now, charge.max);
        if used == 0 || receipt.since != self.since {
            return;
        }
        let ended = Schedule {
            micros: receipt.mark,
            fraction: receipt.fraction,
        };
        let moved = u128::from(self.given.saturating_sub(receipt.given));
        let left = ended.ahead(now, charge.max).saturating_sub(moved);
        let back = left.min(u128::from(units) * u128::from(charge.window));
        if ended != self.end {
            // Charges queued after it move earlier: their receipts are to know it.
            self.given = self.given.saturating_add(narrow(back));
        }
        self.end = Schedule::at(now, used - back.min(used), charge.max);
    }
}
