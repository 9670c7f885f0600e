//! A call Redis decides: the question settled before asking (owned, so that asking outlives the call's
//! borrows), the script call across slots, and charges given back.

use std::fmt::Write as _;
use std::time::Duration;

use tokio::sync::watch;

use super::breaker::Permit;
use super::connection::Connection;
use super::script::{self, Call, Limit};
use super::RedisBackend;
use crate::algorithm::{Algorithm, Charge, Outcome, Receipt};
use crate::backend::{Answer, Ask, Preset};
use crate::error::BackendError;
use crate::key::{KeyRef, StoreKey};
use crate::rule::LeaseTerms;
use crate::OnError;

/// What a call Redis must decide settled before asking. Owned, so that asking can outlive the borrows of the
/// call it was settled for.
pub(crate) struct Question<const N: usize> {
    pub(super) limits: [Owned; N],
    /// Names the call in the deny cache: its one limit's key, or its limits' keys joined.
    pub(super) call: StoreKey,
    /// Names the call's sliding-log members.
    pub(super) nonce: u64,
    pub(super) permit: Permit,
    /// Whether the deny cache is to hear what Redis answers (it may hold this call's denial).
    pub(super) cached: bool,
    pub(super) sent: Duration,
    /// This call re-asks Redis for a call whose cached denial ran out.
    pub(super) probe: bool,
    /// This call (of one leased limit) takes a lease on it, or waits for the one another call is taking.
    pub(super) lease: Option<LeaseStep>,
}

/// What a call of one leased limit does about its lease before asking Redis.
pub(super) enum LeaseStep {
    /// Take one: its terms, and what is left of the lease this node held before, which goes back with it.
    Take {
        terms: LeaseTerms,
        back: Option<Refund>,
    },
    /// Wait until the call taking one is done (the receiver says when), then spend it.
    Wait(watch::Receiver<()>),
}

/// One limit of a [`Question`].
pub(super) struct Owned {
    pub(super) algorithm: Algorithm,
    pub(super) key: StoreKey,
    pub(super) charge: Charge,
    pub(super) vetoes: bool,
    pub(super) on_error: OnError,
    pub(super) preset: Option<Preset>,
    pub(super) lease: Option<LeaseTerms>,
}

impl Owned {
    pub(super) fn ask(&self) -> Ask<'_> {
        Ask {
            algorithm: self.algorithm,
            key: self.key.parts(),
            charge: self.charge,
            vetoes: self.vetoes,
            on_error: self.on_error,
            preset: self.preset,
            lease: self.lease,
        }
    }

    pub(super) fn limit(&self) -> Limit<'_> {
        Limit {
            algorithm: self.algorithm,
            key: &self.key,
            charge: &self.charge,
            vetoes: self.vetoes,
        }
    }
}

impl<const N: usize> Question<N> {
    /// The store key of each limit.
    pub(crate) fn keys(&self) -> [KeyRef<'_>; N] {
        self.limits.each_ref().map(|owned| owned.key.parts())
    }
}

impl RedisBackend {
    /// Decides `question` in Redis: one script call, or, on a cluster whose slots split the call's keys, one
    /// per slot.
    pub(super) async fn decide<const N: usize>(
        &self,
        question: &Question<N>,
    ) -> Result<[Answer; N], BackendError> {
        if let (Some(LeaseStep::Take { terms, back }), [owned]) =
            (&question.lease, question.limits.as_slice())
        {
            let answer = self
                .take_lease(owned, question.sent, *terms, back.as_ref())
                .await?;
            return Ok(std::array::from_fn(|_| answer));
        }
        let mut connection = self.connection()?;
        let mut outcomes = question.limits.each_ref().map(|l| {
            l.preset.map_or(Outcome::admit(l.charge.max), |preset| {
                preset.outcome(&l.charge)
            })
        });
        // The limits Redis is asked about (not those decided before it was).
        let mut asked = [0; N];
        let mut count = 0;
        for (i, limit) in question.limits.iter().enumerate() {
            if limit.preset.is_none() {
                asked[count] = i;
                count += 1;
            }
        }
        let asked = &asked[..count];
        let keys: [&str; N] = std::array::from_fn(|j| match asked.get(j) {
            Some(&i) => &*question.limits[i].key,
            None => "",
        });
        let (admitted, now) = match connection.slots_apart(&keys[..count]) {
            None => {
                self.decide_in_one(&mut connection, question, asked, true, &mut outcomes)
                    .await?
            }
            Some(groups) => {
                let groups = groups
                    .into_iter()
                    .map(|group| group.into_iter().map(|j| asked[j]).collect())
                    .collect();
                self.decide_across_slots(&mut connection, question, groups, &mut outcomes)
                    .await?
            }
        };
        let decided = |i: usize| Answer::of(&question.limits[i].ask(), outcomes[i], now, admitted);
        Ok(std::array::from_fn(decided))
    }

    /// Decides the limits `group` of `question` names in one script call, into `outcomes`: whether they
    /// admit the call, and when. A `whole` call (every limit Redis is asked, on one slot) goes with the calls
    /// on the same key and limits waiting for the same round trip, when coalescing is on.
    async fn decide_in_one<const N: usize>(
        &self,
        connection: &mut Connection,
        question: &Question<N>,
        group: &[usize],
        whole: bool,
        outcomes: &mut [Outcome; N],
    ) -> Result<(bool, u64), BackendError> {
        // On the stack: a call has at most N limits (the places past the group's repeat its first, unread).
        let pick = |j: usize| group.get(j).or(group.first()).copied().unwrap_or(j);
        let limits: [Limit<'_>; N] = std::array::from_fn(|j| question.limits[pick(j)].limit());
        let costs: [u64; N] = std::array::from_fn(|j| question.limits[pick(j)].charge.cost);
        let (limits, costs) = (&limits[..group.len()], &costs[..group.len()]);
        let call = Call {
            nonce: question.nonce,
            costs,
        };
        let (decided, now) = match self.coalescer.as_ref().filter(|_| whole) {
            Some(coalescer) => {
                let key = question.call.parts();
                self.decide_coalesced(coalescer, connection, key, limits, call)
                    .await?
            }
            None => self.decide_alone(connection, limits, call).await?,
        };
        for (&i, outcome) in group.iter().zip(decided.outcomes.as_slice()) {
            outcomes[i] = *outcome;
        }
        Ok((decided.admitted, now))
    }

    /// Decides `question` one slot's `groups` of limits at a time, giving back what the admitting slots
    /// charged when another's limits deny the call.
    async fn decide_across_slots<const N: usize>(
        &self,
        connection: &mut Connection,
        question: &Question<N>,
        groups: Vec<Vec<usize>>,
        outcomes: &mut [Outcome; N],
    ) -> Result<(bool, u64), BackendError> {
        let mut now = 0;
        let mut admitted = true;
        let mut charged_groups = Vec::new();
        for group in &groups {
            let (group_admitted, at) = self
                .decide_in_one(connection, question, group, false, outcomes)
                .await?;
            now = now.max(at);
            admitted &= group_admitted;
            if group_admitted {
                charged_groups.push(group);
            }
        }
        if !admitted {
            // The slots that admitted the call give back what it charged them, before it returns.
            for group in charged_groups {
                let charged: Vec<(Limit<'_>, u64, Receipt)> = group
                    .iter()
                    .filter(|&&i| outcomes[i].allowed)
                    .map(|&i| {
                        let limit = &question.limits[i];
                        (limit.limit(), limit.charge.cost, outcomes[i].receipt)
                    })
                    .collect();
                script::refund(connection, &charged, self.test_now()).await?;
                for &i in group {
                    if outcomes[i].allowed {
                        outcomes[i].remaining += question.limits[i].charge.cost;
                    }
                }
            }
        }
        Ok((admitted, now))
    }

    /// Gives back what `refunds` say, the charges of the call `call` names: one script call (per slot on a
    /// cluster), within the deadline. A refund that fails is dropped (the limit then keeps the charge: it
    /// admits less, never more), and logged.
    pub(crate) async fn refund(&self, refunds: Vec<Refund>, call: StoreKey) {
        let limits: Vec<(Limit<'_>, u64, Receipt)> = refunds.iter().map(Refund::limit).collect();
        let test_now = self.test_now();
        let given = async {
            let mut connection = self.connection()?;
            let keys: Vec<&str> = limits.iter().map(|(limit, _, _)| limit.key).collect();
            match connection.slots_apart(&keys) {
                None => script::refund(&mut connection, &limits, test_now).await,
                Some(groups) => {
                    for group in groups {
                        let part: Vec<_> = group.iter().map(|&i| limits[i].clone()).collect();
                        script::refund(&mut connection, &part, test_now).await?;
                    }
                    Ok(())
                }
            }
        };
        match tokio::time::timeout(self.deadline, given).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::debug!(%error, key = &*call, "rate limiter: a charge could not be given back")
            }
            Err(_) => tracing::debug!(key = &*call, "rate limiter: giving a charge back timed out"),
        }
        if let Some(cache) = &self.denied {
            // The call's limits have room again: what Redis said of it before no longer holds.
            cache.remove(call.parts());
        }
    }

    /// Gives back what a degraded `on_error = local` decision charged this process.
    pub(crate) fn refund_local(&self, ask: &Ask<'_>, units: u64, receipt: &Receipt) {
        self.local.refund(ask, units, receipt);
    }
}

/// A charge to give back, owned: its limit, how many units, and what the admission charged.
#[derive(Debug)]
pub(crate) struct Refund {
    algorithm: Algorithm,
    key: StoreKey,
    charge: Charge,
    units: u64,
    receipt: Receipt,
}

impl Refund {
    /// `units` of what the admission of `ask` charged (`receipt`).
    pub(crate) fn new(ask: &Ask<'_>, units: u64, receipt: Receipt) -> Refund {
        Refund::of(
            ask.algorithm,
            ask.key.to_store_key(),
            ask.charge,
            units,
            receipt,
        )
    }

    /// `units` of what a charge of `charge` on the limit `algorithm` and `key` charged (`receipt`).
    pub(super) fn of(
        algorithm: Algorithm,
        key: StoreKey,
        charge: Charge,
        units: u64,
        receipt: Receipt,
    ) -> Refund {
        Refund {
            algorithm,
            key,
            charge,
            units,
            receipt,
        }
    }

    /// What the script is told of it: its limit (which vetoes), the units to give back, and the receipt.
    pub(super) fn limit(&self) -> (Limit<'_>, u64, Receipt) {
        let limit = Limit {
            algorithm: self.algorithm,
            key: &self.key,
            charge: &self.charge,
            vetoes: true,
        };
        (limit, self.units, self.receipt)
    }
}

/// What names a call in the deny cache: its one limit's store key, or its limits' keys joined.
pub(crate) fn call_key<const N: usize>(asks: &[Ask<'_>; N]) -> StoreKey {
    match asks.as_slice() {
        [one] => one.key.to_store_key(),
        _ => joined(asks),
    }
}

/// The deny cache's key of a call of several limits: each limit's store key, length first, so that no two
/// calls share one; `-` for a limit decided before any store was asked.
pub(super) fn joined<const N: usize>(asks: &[Ask<'_>; N]) -> StoreKey {
    let mut key = StoreKey::new("", format_args!(""));
    for ask in asks {
        // Writing into a key cannot fail.
        let _ = match ask.preset {
            Some(_) => key.write_str("-|"),
            None => write!(key, "{}:{}|", ask.key.len(), ask.key),
        };
    }
    key
}

/// A number no other call of this process (nor, but by a chance of 2^-64, of another) is given: it names the
/// call's sliding-log members, so that they can be given back.
pub(super) fn nonce() -> u64 {
    use std::cell::Cell;
    use std::hash::{BuildHasher, RandomState};
    thread_local! {
        static NEXT: Cell<u64> = Cell::new(RandomState::new().hash_one(std::thread::current().id()));
    }
    // A bijection of a counter (SplitMix64's finaliser): distinct counters, distinct nonces.
    let mut z = NEXT.with(|next| {
        let n = next.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        next.set(n);
        n
    });
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
