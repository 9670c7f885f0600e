//! The lines' own rules: which calls go at once, which wait and in which batch, how a batch takes a round
//! trip's place, and how its calls read their decisions.

use std::time::Duration;

use super::*;
use crate::algorithm::{Algorithm, Charge, Receipt};
use crate::call::{Answer, Charged, OneOrMany};
use crate::Decision;

const KEY: KeyRef<'static> = KeyRef {
    prefix: "p:",
    rest: "hot",
};

fn charge(max: u64) -> Charge {
    Charge {
        window: 60_000_000,
        max,
        cost: 1,
        burst: max,
        max_wait: 0,
        ends: [0; 3],
    }
}

fn call(max: u64) -> Call<'static> {
    Call::of([(Algorithm::SlidingLog, "p:hot", charge(max))])
}

fn join(coalescer: &Coalescer, call: &Call<'_>, nonce: u64) -> Place {
    let shape = Shape::of(call).unwrap();
    let until = Duration::from_secs(1);
    let member = Member {
        nonce,
        costs: [1; MAX_LIMITS],
    };
    coalescer.join((KEY, coalescer.hash(KEY)), shape, call, member, until)
}

fn waits(place: Place) -> (Arc<Batch>, usize) {
    match place {
        Place::Wait(batch, index) => (batch, index),
        other => panic!("expected to wait, got {other:?}"),
    }
}

/// The first calls on a key, up to [`IN_FLIGHT`], are sent at once.
fn fill(coalescer: &Coalescer) {
    for n in 0..IN_FLIGHT {
        assert!(matches!(
            join(coalescer, &call(100), 100 + n as u64),
            Place::Lead
        ));
    }
}

/// A key no other call is asking about goes without a line; the next call of its bucket, while it is in
/// flight, goes by the line (and may wait in a batch), and once it is back the next goes without one again.
#[test]
fn a_lone_call_goes_without_a_line_and_the_next_by_the_line() {
    let coalescer = Coalescer::default();
    let hash = coalescer.hash(KEY);
    assert!(coalescer.go_sole(hash));
    assert!(!coalescer.go_sole(hash));
    fill(&coalescer);
    let (batch, _) = waits(join(&coalescer, &call(100), 1));
    coalescer.leave(hash);
    assert!(coalescer.go_sole(hash));
    // The line is as it was: its round trips hand on to the batch waiting.
    let next = coalescer.pass_on(KEY, hash).expect("the batch waiting");
    assert!(Arc::ptr_eq(&next, &batch));
}

#[test]
fn the_first_calls_go_at_once_and_the_next_wait_in_one_batch() {
    let coalescer = Coalescer::default();
    fill(&coalescer);
    let (second, i) = waits(join(&coalescer, &call(100), 2));
    let (third, j) = waits(join(&coalescer, &call(100), 3));
    assert!(Arc::ptr_eq(&second, &third), "one batch gathers them");
    assert_eq!((i, j), (0, 1));
    let nonces: Vec<u64> = second.members().iter().map(|m| m.nonce).collect();
    assert_eq!(nonces, [2, 3]);
    // A round trip ends: the batch takes its place, to be sent; a new call waits in a new batch.
    let sent = coalescer
        .pass_on(KEY, coalescer.hash(KEY))
        .expect("a batch");
    assert!(Arc::ptr_eq(&sent, &second));
    let (fourth, _) = waits(join(&coalescer, &call(100), 4));
    assert!(!Arc::ptr_eq(&fourth, &second));
    assert!(coalescer.pass_on(KEY, coalescer.hash(KEY)).is_some());
    // Every round trip done, none gathering: the line closes.
    for _ in 0..IN_FLIGHT {
        assert!(coalescer.pass_on(KEY, coalescer.hash(KEY)).is_none());
    }
    let (mut lines, hash) = coalescer.lines.lock(KEY);
    assert!(lines.get_mut(hash, KEY).is_none(), "the line is closed");
}

#[test]
fn a_full_batch_starts_another_and_other_limits_go_alone() {
    let coalescer = Coalescer::default();
    fill(&coalescer);
    let (first, _) = waits(join(&coalescer, &call(100), 0));
    for n in 1..MAX_BATCH as u64 {
        let (batch, index) = waits(join(&coalescer, &call(100), n));
        assert!(Arc::ptr_eq(&batch, &first));
        assert_eq!(index, n as usize);
    }
    let (next, index) = waits(join(&coalescer, &call(100), 999));
    assert!(
        !Arc::ptr_eq(&next, &first),
        "a batch carries at most {MAX_BATCH}"
    );
    assert_eq!(index, 0);
    // The same key, another limit (an override changed `max`): alone.
    assert!(matches!(join(&coalescer, &call(50), 7), Place::Alone));
}

#[tokio::test]
async fn each_call_of_a_batch_reads_its_own_decision() {
    let coalescer = Coalescer::default();
    fill(&coalescer);
    let (batch, _) = waits(join(&coalescer, &call(100), 1));
    let (same, index) = waits(join(&coalescer, &call(100), 2));
    let decided = |remaining| Decided {
        answers: OneOrMany::One(Answer {
            decision: Decision::new(
                &charge(100),
                crate::algorithm::Outcome {
                    remaining,
                    ..crate::algorithm::Outcome::admit(100)
                },
                0,
                false,
            ),
            receipt: Receipt::default(),
            charged: Charged::Store,
        }),
        admitted: true,
    };
    let waiting = tokio::spawn(async move { same.wait(index).await });
    tokio::task::yield_now().await;
    batch.decide(vec![decided(9), decided(8)]);
    assert_eq!(Arc::clone(&batch).wait(0).await.decision().remaining, 9);
    assert_eq!(waiting.await.unwrap().decision().remaining, 8);
}
