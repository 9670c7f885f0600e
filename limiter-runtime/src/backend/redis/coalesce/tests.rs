//! The lines' own rules: which calls go at once, which wait, how a batch is handed on, and how many it
//! carries.

use super::*;

fn shape() -> Shape {
    Shape::of([[1, 60_000_000, 100, 0]].into_iter()).unwrap()
}

const KEY: KeyRef<'static> = KeyRef {
    prefix: "p:",
    rest: "hot",
};

fn join(coalescer: &Coalescer, nonce: u64) -> Place {
    coalescer.join(KEY, coalescer.hash(KEY), shape(), nonce, [1; MAX_LIMITS])
}

fn waits(place: Place) -> oneshot::Receiver<Turn> {
    match place {
        Place::Wait(turn) => turn,
        other => panic!("expected to wait, got {other:?}"),
    }
}

/// The first calls on a key, up to [`IN_FLIGHT`], are sent at once.
fn fill(coalescer: &Coalescer) {
    for n in 0..IN_FLIGHT {
        assert!(matches!(join(coalescer, 100 + n as u64), Place::Lead));
    }
}

#[test]
fn the_first_calls_go_at_once_and_the_next_wait_for_a_round_trip() {
    let coalescer = Arc::new(Coalescer::default());
    fill(&coalescer);
    let mut second = waits(join(&coalescer, 2));
    let mut third = waits(join(&coalescer, 3));
    coalescer.pass_on(KEY, coalescer.hash(KEY), Vec::new());
    let Ok(Turn::Lead(baton)) = second.try_recv() else {
        panic!("the second call leads the next batch");
    };
    assert!(third.try_recv().is_err(), "the third goes with the second");
    let carried = baton.take();
    assert_eq!(carried.iter().map(|m| m.nonce).collect::<Vec<_>>(), [3]);
    // As many batches as before are in flight: a new call waits. Once they are all done, with no one
    // waiting, the line closes.
    let mut fourth = waits(join(&coalescer, 4));
    coalescer.pass_on(KEY, coalescer.hash(KEY), Vec::new());
    assert!(matches!(fourth.try_recv(), Ok(Turn::Lead(_))));
    for _ in 0..IN_FLIGHT {
        coalescer.pass_on(KEY, coalescer.hash(KEY), Vec::new());
    }
    let (mut lines, hash) = coalescer.lines.lock(KEY);
    assert!(lines.get_mut(hash, KEY).is_none(), "the line is closed");
}

#[test]
fn a_baton_whose_caller_is_gone_before_reading_it_passes_the_line_on() {
    let coalescer = Arc::new(Coalescer::default());
    fill(&coalescer);
    let second = waits(join(&coalescer, 2));
    let mut third = waits(join(&coalescer, 3));
    coalescer.pass_on(KEY, coalescer.hash(KEY), Vec::new());
    // The baton is in the second call's channel, unread, when its caller is dropped (its deadline passed).
    drop(second);
    let Ok(Turn::Lead(baton)) = third.try_recv() else {
        panic!("the third call, never sent, leads instead");
    };
    drop(baton.take());
    coalescer.pass_on(KEY, coalescer.hash(KEY), Vec::new());
    assert!(
        matches!(join(&coalescer, 4), Place::Lead),
        "a batch fewer is in flight: a new call is sent at once"
    );
}

#[test]
fn a_batch_carries_at_most_max_batch_calls() {
    let coalescer = Arc::new(Coalescer::default());
    fill(&coalescer);
    let mut waiting: Vec<_> = (1..=MAX_BATCH as u64 + 10)
        .map(|n| waits(join(&coalescer, n)))
        .collect();
    coalescer.pass_on(KEY, coalescer.hash(KEY), Vec::new());
    let Ok(Turn::Lead(baton)) = waiting[0].try_recv() else {
        panic!("the first waiting call leads");
    };
    assert_eq!(baton.take().len(), MAX_BATCH - 1);
    coalescer.pass_on(KEY, coalescer.hash(KEY), Vec::new());
    let Ok(Turn::Lead(baton)) = waiting[MAX_BATCH].try_recv() else {
        panic!("the first call left behind leads the next batch");
    };
    assert_eq!(baton.take().len(), 9);
}

#[test]
fn calls_on_other_limits_go_alone() {
    let coalescer = Arc::new(Coalescer::default());
    assert!(matches!(join(&coalescer, 1), Place::Lead));
    let other = Shape::of([[1, 60_000_000, 5, 0]].into_iter()).unwrap();
    assert!(matches!(
        coalescer.join(KEY, coalescer.hash(KEY), other, 2, [1; MAX_LIMITS]),
        Place::Alone
    ));
}
