//! The lines' own rules: which calls go at once, which wait and in which batch (whatever their keys), how a
//! batch is bounded, how it takes a round trip's place, and how its calls read their decisions.

use std::time::Duration;

use super::*;
use crate::algorithm::{Algorithm, Receipt, Terms};
use crate::call::{Charged, LimitRuling, OneOrMany};
use crate::Decision;

fn charge(max: u64) -> Terms {
    Terms {
        window: 60_000_000,
        max,
        cost: 1,
        burst: max,
        max_wait: 0,
        ends: [0; 3],
        kept: 0,
    }
}

fn call(key: &'static str) -> Call<'static> {
    Call::of([(Algorithm::SlidingLog, key, charge(100))])
}

/// Joins the server's line for a call on `key` of `limits` limits, whose deadline is `until` (s), named by
/// `nonce`.
fn join_with(
    coalescer: &Coalescer,
    key: &'static str,
    nonce: u64,
    limits: usize,
    until: u64,
) -> Place {
    let join = Joining {
        member: || Member {
            call: call(key),
            nonce,
        },
        limits,
        until: Duration::from_secs(until),
    };
    coalescer.join(&Line::Server, join)
}

fn join(coalescer: &Coalescer, key: &'static str, nonce: u64) -> Place {
    join_with(coalescer, key, nonce, 1, 10)
}

fn waits(place: Place) -> (Arc<Batch>, usize) {
    match place {
        Place::Wait(batch, index) => (batch, index),
        other => panic!("expected to wait, got {other:?}"),
    }
}

/// Fills the line: the first calls on the line, up to [`IN_FLIGHT`], are sent at once, whatever their keys.
fn fill(coalescer: &Coalescer) {
    for n in 0..IN_FLIGHT {
        let key = ["p:a", "p:b", "p:c", "p:d"][n % 4];
        assert!(matches!(join(coalescer, key, 100 + n as u64), Place::Lead));
    }
}

#[test]
fn calls_on_different_keys_wait_in_one_batch_once_the_line_is_full() {
    let coalescer = Coalescer::new(true);
    fill(&coalescer);
    let (first, i) = waits(join(&coalescer, "p:x", 2));
    let (second, j) = waits(join(&coalescer, "p:y", 3));
    let (third, k) = waits(join(&coalescer, "p:x", 4));
    assert!(Arc::ptr_eq(&first, &second) && Arc::ptr_eq(&first, &third));
    assert_eq!((i, j, k), (0, 1, 2));
    let (members, _) = first.members();
    let keys: Vec<&str> = members.iter().map(|m| &*m.call.limits()[0].key).collect();
    assert_eq!(keys, ["p:x", "p:y", "p:x"]);
    assert_eq!(
        members.iter().map(|m| m.nonce).collect::<Vec<_>>(),
        [2, 3, 4]
    );
}

#[test]
fn a_batch_takes_the_place_of_a_round_trip_and_the_line_empties() {
    let coalescer = Coalescer::new(true);
    fill(&coalescer);
    let (gathering, _) = waits(join(&coalescer, "p:x", 2));
    // A round trip ends: the batch takes its place, to be sent; a new call waits in a new batch.
    let sent = coalescer
        .pass_on(&Line::Server)
        .expect("the batch gathering");
    assert!(Arc::ptr_eq(&sent, &gathering));
    let (next, _) = waits(join(&coalescer, "p:y", 3));
    assert!(!Arc::ptr_eq(&next, &gathering));
    assert!(coalescer.pass_on(&Line::Server).is_some());
    // Every round trip done, none gathering: the next call goes at once again.
    for _ in 0..IN_FLIGHT {
        assert!(coalescer.pass_on(&Line::Server).is_none());
    }
    assert!(matches!(join(&coalescer, "p:z", 5), Place::Lead));
}

#[test]
fn a_batch_is_bounded_by_its_calls_and_by_the_limits_redis_decides() {
    let coalescer = Coalescer::new(true);
    fill(&coalescer);
    let (first, _) = waits(join(&coalescer, "p:k", 0));
    for n in 1..MAX_CALLS as u64 {
        let (batch, index) = waits(join(&coalescer, "p:k", n));
        assert!(Arc::ptr_eq(&batch, &first));
        assert_eq!(index, n as usize);
    }
    let (next, index) = waits(join(&coalescer, "p:k", 999));
    assert!(!Arc::ptr_eq(&next, &first), "at most {MAX_CALLS} calls");
    assert_eq!(index, 0);

    // Stacked calls weigh their limits: a batch decides at most MAX_LIMITS of them.
    let coalescer = Coalescer::new(true);
    fill(&coalescer);
    let (first, _) = waits(join_with(&coalescer, "p:k", 0, MAX_LIMITS - 4, 10));
    let (same, _) = waits(join_with(&coalescer, "p:k", 1, 4, 10));
    assert!(Arc::ptr_eq(&first, &same));
    let (next, _) = waits(join_with(&coalescer, "p:k", 2, 1, 10));
    assert!(!Arc::ptr_eq(&next, &first), "at most {MAX_LIMITS} limits");
}

#[test]
fn a_batch_waits_no_longer_than_its_most_hurried_call() {
    let coalescer = Coalescer::new(true);
    fill(&coalescer);
    let (batch, _) = waits(join_with(&coalescer, "p:a", 1, 1, 5));
    waits(join_with(&coalescer, "p:b", 2, 1, 2));
    waits(join_with(&coalescer, "p:c", 3, 1, 9));
    assert_eq!(batch.members().1, Duration::from_secs(2));
}

#[test]
fn a_call_waits_early_only_on_a_full_line() {
    let coalescer = Coalescer::new(true);
    let join = |nonce| Joining {
        member: move || Member {
            call: call("p:w"),
            nonce,
        },
        limits: 1,
        until: Duration::from_secs(1),
    };
    assert!(
        coalescer.join_waiting(&Line::Server, join(1)).is_none(),
        "no line"
    );
    fill(&coalescer);
    assert!(
        coalescer.join_waiting(&Line::Server, join(2)).is_some(),
        "full"
    );
    // Lines are apart: a cluster's calls on other keys do not find this line full.
    let keys = Line::Keys("4:p:w2|".into());
    assert!(coalescer.join_waiting(&keys, join(3)).is_none());
}

#[tokio::test]
async fn each_call_of_a_batch_reads_its_own_decision() {
    let coalescer = Coalescer::new(true);
    fill(&coalescer);
    let (batch, _) = waits(join(&coalescer, "p:a", 1));
    let (same, index) = waits(join(&coalescer, "p:b", 2));
    let decided = |remaining| Ruling {
        limits: OneOrMany::One(LimitRuling {
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
    let (members, _) = batch.members();
    let orphans: Orphans = Arc::new(|member: &Member, _: &Ruling| panic!("{member:?} was read"));
    batch.deliver(members, vec![decided(9), decided(8)], orphans);
    assert_eq!(Arc::clone(&batch).wait(0).await.decision().remaining, 9);
    assert_eq!(waiting.await.unwrap().decision().remaining, 8);
}

/// Checks that a caller that goes away without reading its decision has it given back once: by the batch's sender when
/// it went before the decision, by itself when after; one that read it, never.
#[test]
fn a_decision_no_caller_reads_is_given_back_once() {
    let coalescer = Coalescer::new(true);
    fill(&coalescer);
    let (batch, _) = waits(join(&coalescer, "p:a", 1));
    let (_, early) = waits(join(&coalescer, "p:b", 2));
    let (_, late) = waits(join(&coalescer, "p:c", 3));
    let (_, read) = waits(join(&coalescer, "p:d", 4));
    let (early, late, read) = (
        Arc::clone(&batch).wait(early),
        Arc::clone(&batch).wait(late),
        Arc::clone(&batch).wait(read),
    );
    drop(early);
    let given = Arc::new(Mutex::new(Vec::new()));
    let orphans: Orphans = {
        let given = Arc::clone(&given);
        Arc::new(move |member: &Member, _: &Ruling| given.lock().unwrap().push(member.nonce))
    };
    let (members, _) = batch.members();
    let decided = Ruling {
        limits: OneOrMany::One(LimitRuling {
            decision: Decision::new(
                &charge(100),
                crate::algorithm::Outcome::admit(100),
                0,
                false,
            ),
            receipt: Receipt::default(),
            charged: Charged::Store,
        }),
        admitted: true,
    };
    batch.deliver(members, vec![decided; 4], orphans);
    assert_eq!(
        *given.lock().unwrap(),
        [2],
        "the one gone before the decision"
    );
    let mut read = read;
    let waker = std::task::Waker::noop();
    assert!(Pin::new(&mut read)
        .poll(&mut Context::from_waker(waker))
        .is_ready());
    drop(read);
    drop(late);
    assert_eq!(
        *given.lock().unwrap(),
        [2, 3],
        "then the one gone after it, unread"
    );
}

#[test]
fn a_calls_line_is_its_keys_unless_a_server_batches_across_keys() {
    let keys = |keys: &'static [&'static str]| keys.iter().copied();
    let apart = Coalescer::new(false);
    let same = apart.line_of(false, keys(&["p:a", "q:b"]));
    assert!(matches!(same, Line::Bucket(_)));
    assert_eq!(same, apart.line_of(false, keys(&["p:a", "q:b"])));
    // Keys that fall in other buckets: other lines (some pair of these 64 does).
    let lines: std::collections::HashSet<usize> = (0..64)
        .map(
            |i| match apart.line_of(false, [format!("k{i}").as_str()].into_iter()) {
                Line::Bucket(bucket) => bucket,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    assert!(lines.len() > 32, "{} buckets for 64 keys", lines.len());

    let across = Coalescer::new(true);
    assert_eq!(across.line_of(false, keys(&["p:a"])), Line::Server);
    // A cluster's lines are the keys themselves, whatever the setting: "a|b" is not "a", "b".
    for coalescer in [&apart, &across] {
        let one = coalescer.line_of(true, keys(&["a|b"]));
        let two = coalescer.line_of(true, keys(&["a", "b"]));
        assert!(matches!(one, Line::Keys(_)));
        assert_ne!(one, two);
    }
}
