//! The leases' own rules: one call takes a key's lease while the others wait, and a lease is spent until it
//! runs out of units or time, then given back.

use super::*;
use crate::call::Call;

const SECOND: Duration = Duration::from_secs(1);

/// Builds a call of one leased token bucket on the key `p:hot`, of `charge`.
fn call(charge: &Terms) -> Call<'static> {
    let mut call = Call::of([(Algorithm::TokenBucket, "p:hot", *charge)]);
    call.each_limit(|limit| {
        limit.lease = Some(LeaseTerms {
            units: 10,
            ttl: SECOND,
        })
    });
    call
}

fn held(charge: &Terms, left: u64, expires: Duration) -> HeldLease {
    HeldLease {
        generation: 7,
        key: StoreKey::new("p:", format_args!("hot")),
        algorithm: Algorithm::TokenBucket,
        terms: Terms {
            cost: 10,
            ..*charge
        },
        receipt: Receipt::default(),
        left,
        expires,
        taken_at: 0,
        received: Duration::ZERO,
        remaining: 0,
        reset_after: 0,
    }
}

fn charge() -> Terms {
    Terms {
        window: 1_000_000,
        max: 100,
        cost: 1,
        burst: 100,
        max_wait: 0,
        ends: [0; 3],
        kept: 0,
    }
}

#[test]
fn one_call_takes_a_lease_and_the_others_go_to_redis_meanwhile() {
    let (leases, charge) = (Leases::default(), charge());
    assert!(leases.spend(&call(&charge).limits()[0], SECOND).is_none());
    assert!(matches!(
        leases.take(&call(&charge).limits()[0], SECOND, SECOND),
        Take::Lease(None)
    ));
    let Take::Wait(waiting) = leases.take(&call(&charge).limits()[0], SECOND, SECOND) else {
        panic!("a call is taking the lease: the next waits for it");
    };
    assert!(!waiting.has_changed().unwrap_or(true));
    leases.hold(held(&charge, 5, 2 * SECOND));
    assert!(waiting.has_changed().is_err(), "the waiting call is woken");
    assert!(leases.spend(&call(&charge).limits()[0], SECOND).is_some());
    leases.abandon(KeyRef::from("p:hot"));
    // A call that found no lease to spend, and a lease held by the time it came to take one (spending and
    // taking are two locks), spends that lease: it neither takes another nor leaves the waiters without one.
    let Take::Spent(answer) = leases.take(&call(&charge).limits()[0], SECOND, SECOND) else {
        panic!("a lease that serves the call is spent, not taken again");
    };
    assert!(answer.decision.allowed && answer.charged == Charged::Lease);
    // One past its time goes back with the next lease taken.
    assert!(matches!(
        leases.take(&call(&charge).limits()[0], 2 * SECOND, SECOND),
        Take::Lease(Some(_))
    ));
    // A taking older than `stale` was dropped: the next call takes the lease.
    assert!(matches!(
        leases.take(&call(&charge).limits()[0], 4 * SECOND, SECOND),
        Take::Lease(None)
    ));
}

#[test]
fn a_lease_is_spent_until_it_runs_out_of_units_or_time_and_then_given_back() {
    let (leases, charge) = (Leases::default(), charge());
    leases.hold(held(&charge, 3, 2 * SECOND));
    for _ in 0..3 {
        let answer = leases
            .spend(&call(&charge).limits()[0], SECOND)
            .expect("units left");
        assert_eq!(answer.charged, Charged::Lease);
    }
    assert!(
        leases.spend(&call(&charge).limits()[0], SECOND).is_none(),
        "none left"
    );
    // A unit given back to it is spent again; one given back to another lease is not.
    leases.give_back(
        KeyRef::from("p:hot"),
        1,
        &Receipt {
            mark: 7,
            ..Receipt::default()
        },
    );
    leases.give_back(
        KeyRef::from("p:hot"),
        1,
        &Receipt {
            mark: 6,
            ..Receipt::default()
        },
    );
    assert!(leases.spend(&call(&charge).limits()[0], SECOND).is_some());
    assert!(leases.spend(&call(&charge).limits()[0], SECOND).is_none());

    leases.hold(held(&charge, 4, 2 * SECOND));
    // Another limit (an override changed `max`) does not spend it.
    let other = Terms { max: 50, ..charge };
    assert!(leases.spend(&call(&other).limits()[0], SECOND).is_none());
    // Out of time: not spent, and the sweep takes it out with its units left to give back.
    assert!(leases
        .spend(&call(&charge).limits()[0], 2 * SECOND)
        .is_none());
    let (expired, outstanding) = leases.expired(2 * SECOND, SECOND);
    assert_eq!(expired.iter().map(|h| h.left).collect::<Vec<_>>(), [4]);
    assert_eq!(outstanding, 0);
    assert!(matches!(
        leases.take(&call(&charge).limits()[0], 2 * SECOND, SECOND),
        Take::Lease(None)
    ));
}
