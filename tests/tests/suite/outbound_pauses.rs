//! An upstream's pause on a leaky bucket (issue 61, items 1 and 3): its line starts after the pause, so a call
//! of the key is given a slot after it, rather than refused until it ends and then asking again with every
//! other caller at once; a call whose slot would be past its `max_wait` is refused as a full line refuses it.
//! Every other algorithm, and every ban or penalty, still refuses while the block is in force. In memory and
//! in Redis alike.
//!
//! The pause is the one a turn's 429 writes ([`Turn::answered`](limiter_runtime::Turn::answered)). The store's
//! decisions are read on a fake clock from plain checks, which read the key's block under a penalty or while
//! a ban is in force under the rule's policy; a turn's, on the stores' own clocks (it waits for its slot).

use std::time::Duration;

use limiter_runtime::{Algorithm, FakeClock, Limiter, Penalty, Reason, Rule, Verdict};
use tests::RedisServer;

const SECOND: Duration = Duration::from_secs(1);

/// The partner's 10 calls a second, as a leaky bucket whose calls wait up to `max_wait` for their slot.
fn line(prefix: &'static str, max_wait: Duration) -> Rule {
    Rule::new()
        .prefix(prefix)
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(SECOND)
        .max_wait(max_wait)
}

/// A limiter in memory and one on `server`, each on a fake clock of its own: the same test runs on both.
fn stores(server: &RedisServer) -> [(&'static str, Limiter, FakeClock); 2] {
    let (memory_clock, redis_clock) = (FakeClock::new(), FakeClock::new());
    let memory = Limiter::builder()
        .clock(memory_clock.clone())
        .build()
        .unwrap();
    let redis = server
        .builder()
        .deadline(tests::PATIENT)
        .deny_cache(false)
        .clock(redis_clock.clone())
        .build()
        .unwrap();
    [
        ("memory", memory, memory_clock),
        ("redis", redis, redis_clock),
    ]
}

/// Pauses `key` of `rule` for `seconds`, as a turn whose upstream answered 429 with that `Retry-After` does;
/// the turn is cancelled (its slot given back: the line is as it was, empty).
async fn pause(limiter: &Limiter, rule: &Rule, key: &str, seconds: u64) {
    let turn = limiter.turn(rule, key).await.expect("the key's first turn");
    let retry = seconds.to_string();
    let left = turn
        .answered(429, [("retry-after", retry.as_str())])
        .await
        .unwrap();
    assert_eq!(left, Some(SECOND * seconds as u32));
    turn.cancel().await;
}

/// Checks that a call of a leaky bucket's key an upstream paused for 2 s is admitted with the slot at the pause's
/// end (a delay of 2 s), the next with the slot after it; that one whose slot is past its `max_wait` (1 s) is
/// refused as `Limited` (not `Blocked`), told to come back when the slot is within its wait; that the line a
/// refused call found paused stays moved (an inspection shows it, and the pause); and that once the clock moves
/// on, the slots are where the line put them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leaky_bucket_gives_the_slots_after_the_pause() {
    let server = RedisServer::start();
    for (store, limiter, clock) in stores(&server) {
        let rule = line("paused-line:", 5 * SECOND);
        let impatient = line("paused-line:", SECOND);
        // The policy's calls read their keys' blocks while a ban is in force under it.
        limiter.ban(&rule, "banned", 3_600 * SECOND).await.unwrap();
        let banned = limiter.check(&rule, "banned").await;
        assert_eq!(banned.verdict, Verdict::Blocked, "{store}: a ban refuses");

        pause(&limiter, &rule, "acme", 2).await;
        let first = limiter.check(&rule, "acme").await;
        assert!(first.allowed, "{store}: {first:?}");
        assert_eq!(
            (first.verdict, first.delay),
            (Verdict::Admitted, 2 * SECOND),
            "{store}"
        );
        let second = limiter.check(&rule, "acme").await;
        assert_eq!(
            (second.allowed, second.delay),
            (true, 2 * SECOND + SECOND / 10),
            "{store}"
        );
        let refused = limiter.check(&impatient, "acme").await;
        assert_eq!(
            (refused.allowed, refused.verdict, refused.retry_after),
            (false, Verdict::Limited, SECOND + SECOND / 5),
            "{store}: {refused:?}"
        );
        // 1.5 s on, the pause has 0.5 s left, and the line 0.7 s.
        clock.advance(SECOND + SECOND / 2);
        let later = limiter.check(&impatient, "acme").await;
        assert_eq!(
            (later.allowed, later.delay),
            (true, SECOND * 7 / 10),
            "{store}: {later:?}"
        );

        // A key with nothing queued, paused: a refused call moves its line all the same.
        pause(&limiter, &rule, "bob", 2).await;
        let refused = limiter.check(&impatient, "bob").await;
        assert_eq!(
            (refused.verdict, refused.retry_after),
            (Verdict::Limited, SECOND),
            "{store}: {refused:?}"
        );
        // Read with the wait of 1 s, the line a refused call moved is full (the 11 slots that wait allows) until
        // the pause's end. (Read with 5 s, a line shorter than 4 s reads as unused: an inspection's
        // `remaining` is at most `max`.)
        let inspected = limiter.inspect(&impatient, "bob").await.unwrap();
        assert_eq!(
            (inspected.paused, inspected.blocked_for, inspected.banned),
            (Some(429), 2 * SECOND, false),
            "{store}: {inspected:?}"
        );
        assert_eq!(
            (inspected.used, inspected.remaining, inspected.reset_after),
            (11, 0, 2 * SECOND),
            "{store}: {inspected:?}"
        );
        let admitted = limiter.check(&rule, "bob").await;
        assert_eq!(
            (admitted.allowed, admitted.delay),
            (true, 2 * SECOND),
            "{store}"
        );
    }
}

/// Checks that a turn of a key paused for 1 s is admitted and goes once the pause has ended, not refused; and
/// that one whose slot would be past its `max_wait` is refused at once as `Limited`, not `Blocked`. On the
/// stores' own clocks: a turn waits for its slot in time that passes. (In memory its slot is the one at the
/// pause's end; in Redis the node gives that slot back and asks again when the pause's end it heard, a
/// little later than Redis's, finds it still waiting: `limiter/turn.rs`, so the slot is not asserted.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_during_a_pause_goes_after_it() {
    let server = RedisServer::start();
    for (store, limiter) in [
        ("memory", Limiter::in_memory()),
        ("redis", server.limiter()),
    ] {
        let rule = line("paused-turn:", 5 * SECOND);
        pause(&limiter, &rule, "acme", 1).await;
        let turn = limiter.turn(&rule, "acme").await.unwrap();
        assert_eq!(turn.decision().verdict, Verdict::Admitted, "{store}");
        assert!(
            turn.waited() >= SECOND * 9 / 10,
            "{store}: went {:?} after it asked, inside the pause",
            turn.waited()
        );
        turn.cancel().await;

        pause(&limiter, &rule, "bob", 2).await;
        let impatient = line("paused-turn:", SECOND / 2);
        let asked = std::time::Instant::now();
        let refused = limiter.turn(&impatient, "bob").await.unwrap_err();
        assert_eq!(
            (refused.reason(), refused.decision().verdict),
            (Reason::Limited, Verdict::Limited),
            "{store}: {refused:?}"
        );
        assert!(
            asked.elapsed() < SECOND,
            "{store}: told after {:?}",
            asked.elapsed()
        );
    }
}

/// Checks that a leaky bucket under a penalty, paused, refuses a call whose slot is past its wait as `Limited`
/// and starts no block: the pause stays (an inspection still shows it, no offence counted), and a call that may
/// wait is then given the slot after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_during_a_pause_is_no_offence() {
    let server = RedisServer::start();
    for (store, limiter, _clock) in stores(&server) {
        let penalty = Penalty::fixed(10 * SECOND);
        let rule = line("paused-penalty:", 5 * SECOND).penalty(penalty);
        let impatient = line("paused-penalty:", SECOND).penalty(penalty);
        pause(&limiter, &rule, "acme", 2).await;
        for _ in 0..2 {
            let refused = limiter.check(&impatient, "acme").await;
            assert_eq!(
                (refused.verdict, refused.retry_after),
                (Verdict::Limited, SECOND),
                "{store}: {refused:?}"
            );
        }
        let inspected = limiter.inspect(&rule, "acme").await.unwrap();
        assert_eq!(
            (inspected.paused, inspected.offences, inspected.blocked_for),
            (Some(429), 0, 2 * SECOND),
            "{store}: {inspected:?}"
        );
        let admitted = limiter.check(&rule, "acme").await;
        assert_eq!(
            (admitted.allowed, admitted.delay),
            (true, 2 * SECOND),
            "{store}"
        );
    }
}

/// Checks that any other algorithm still refuses while its key is paused: a token bucket's call is refused as
/// `Blocked` for what is left of the pause, and admitted once it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_token_bucket_still_refuses() {
    let server = RedisServer::start();
    for (store, limiter, clock) in stores(&server) {
        let rule = Rule::new()
            .prefix("paused-tokens:")
            .algorithm(Algorithm::TokenBucket)
            .max(10)
            .window(SECOND);
        limiter.ban(&rule, "banned", 3_600 * SECOND).await.unwrap();
        pause(&limiter, &rule, "acme", 2).await;
        let refused = limiter.check(&rule, "acme").await;
        assert_eq!(
            (refused.allowed, refused.verdict, refused.retry_after),
            (false, Verdict::Blocked, 2 * SECOND),
            "{store}: {refused:?}"
        );
        clock.advance(2 * SECOND);
        assert!(limiter.check(&rule, "acme").await.allowed, "{store}");
    }
}
