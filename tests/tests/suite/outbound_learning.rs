//! The rate a fleet learns from its upstream's answers (`limiter_runtime::Turn::answered`): a refusal cuts it
//! to 9/10, successes bring it back a thousandth of the limit each, a stated quota lowers it at once, never
//! below a twentieth; kept in Redis, so another node inspects it and spaces its turns for it. On a frozen fake
//! clock, so every slot is exact.

use std::time::Duration;

use limiter_runtime::{Algorithm, FakeClock, Limiter, Rule};
use test_support::RedisServer;

/// The partner's 10 calls a second, as a leaky bucket that spaces them.
fn partner(prefix: &'static str) -> Rule {
    Rule::new()
        .prefix(prefix)
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1))
        .max_wait(Duration::from_secs(30))
}

/// The slot two turns of `limiter` in a row are apart, in µs: the second's delay less the first's (each
/// rounded up to the µs: one either way).
async fn spacing(limiter: &Limiter, rule: &Rule) -> u128 {
    let first = limiter.turn(rule, "acme").await.unwrap();
    let second = limiter.turn(rule, "acme").await.unwrap();
    let apart = second.decision().delay - first.decision().delay;
    first.cancel().await;
    second.cancel().await;
    apart.as_micros()
}

/// The spacing of a learned rate (thousandths of 10 a second), as a turn computes it: the window over the
/// rate, its margin of 1/32 more, over 10, to the µs above.
fn spaced(rate: u64) -> u128 {
    let window = 1_000_000 * 1_000 / rate;
    u128::from((window + window / 32).div_ceil(10))
}

async fn learned(limiter: &Limiter, rule: &Rule) -> Option<u32> {
    limiter.inspect(rule, "acme").await.unwrap().learned
}

/// On Redis, two nodes: node a's answers move the rate; node b, which never heard of the key, reads it from
/// Redis, inspects it and spaces its turns for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_slows_every_node_and_successes_bring_the_rate_back() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let (a, b) = (
        server.limiter_with_clock(&clock),
        server.limiter_with_clock(&clock),
    );
    let rule = partner("out:learn:");
    assert!(spacing(&a, &rule).await.abs_diff(spaced(1_000)) <= 1);
    let turn = a.turn(&rule, "acme").await.unwrap();
    // A refusal that says nothing of when to come back: no pause, the rate cut.
    assert_eq!(
        turn.answered(429, [("server", "nginx")]).await.unwrap(),
        None
    );
    let inspected = b.inspect(&rule, "acme").await.unwrap();
    assert_eq!((inspected.learned, inspected.paused), (Some(900), None));
    let apart = spacing(&b, &rule).await;
    assert!(
        apart.abs_diff(spaced(900)) <= 1,
        "node b spaces for 9/10: {apart} µs"
    );
    // Another refusal of a call spaced before the cut says nothing of the rate after it: no second cut.
    turn.answered(429, Vec::<(&str, &str)>::new())
        .await
        .unwrap();
    assert_eq!(learned(&b, &rule).await, Some(900));
    // One spaced for 9/10, refused: 81/100.
    let slower = b.turn(&rule, "acme").await.unwrap();
    slower
        .answered(429, Vec::<(&str, &str)>::new())
        .await
        .unwrap();
    slower.cancel().await;
    assert_eq!(learned(&b, &rule).await, Some(810));
    // 190 successes: a thousandth each, never past the whole.
    for _ in 0..190 {
        turn.answered(200, Vec::<(&str, &str)>::new())
            .await
            .unwrap();
    }
    assert_eq!(learned(&b, &rule).await, None, "back to the whole limit");
    // A stated quota below the limit lowers it at once; one above changes nothing.
    turn.answered(200, [("X-RateLimit-Limit", "20")])
        .await
        .unwrap();
    assert_eq!(learned(&b, &rule).await, None);
    turn.answered(200, [("RateLimit-Policy", "\"day\";q=300;w=60")])
        .await
        .unwrap();
    assert_eq!(learned(&b, &rule).await, Some(500));
    // Never below a twentieth.
    for _ in 0..40 {
        // A minute later each time: the line (stretched by each cut) has drained.
        clock.advance(Duration::from_secs(60));
        let refused = a.turn(&rule, "acme").await.unwrap();
        refused
            .answered(503, Vec::<(&str, &str)>::new())
            .await
            .unwrap();
        refused.cancel().await;
    }
    assert_eq!(learned(&b, &rule).await, Some(50));
    turn.cancel().await;
}

/// In memory, the one node is the fleet: the same moves, inspected and spaced for.
#[tokio::test]
async fn in_memory_a_refusal_slows_the_turns() {
    let clock = FakeClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build().unwrap();
    let rule = partner("out:learn-memory:");
    let turn = limiter.turn(&rule, "acme").await.unwrap();
    turn.answered(429, Vec::<(&str, &str)>::new())
        .await
        .unwrap();
    assert_eq!(learned(&limiter, &rule).await, Some(900));
    turn.cancel().await;
    assert!(spacing(&limiter, &rule).await.abs_diff(spaced(900)) <= 1);
    let turn = limiter.turn(&rule, "acme").await.unwrap();
    for _ in 0..100 {
        turn.answered(204, Vec::<(&str, &str)>::new())
            .await
            .unwrap();
    }
    assert_eq!(learned(&limiter, &rule).await, None);
    turn.cancel().await;
}

/// A line that reaches past a caller's deadline tells it at once, with the wait it would have had: five slots
/// fit in half a second (103 ms apart), the sixth caller is refused without waiting for its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_past_the_deadline_tells_the_caller_at_once() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let rule = partner("out:bounded:").max_wait(Duration::from_millis(500));
    let first = limiter.turn(&rule, "acme").await.unwrap();
    let mut waiting = Vec::new();
    for _ in 0..4 {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        waiting.push(tokio::spawn(
            async move { limiter.turn(&rule, "acme").await },
        ));
    }
    // On a frozen clock nothing leaks: the line reaches five slots once the four have been charged.
    let reach = Duration::from_micros(5 * 103_125);
    // (Inspected by a rule that waits for nothing: its retry is how far the line reaches.)
    let reaches = Rule::new()
        .prefix("out:bounded:")
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while limiter.inspect(&reaches, "acme").await.unwrap().retry_after < reach {
        assert!(
            std::time::Instant::now() < deadline,
            "the line never filled"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let asked = std::time::Instant::now();
    let refused = limiter.turn(&rule, "acme").await.unwrap_err();
    // At once: a round trip or two, where waiting out its deadline takes 500 ms.
    assert!(
        asked.elapsed() < Duration::from_millis(400),
        "told after {:?}, not at once",
        asked.elapsed()
    );
    assert_eq!(refused.retry_after(), reach, "the wait it would have had");
    for caller in waiting {
        caller.abort();
    }
    drop(first);
}

/// A rate lowered while calls wait stretches their slots: a call whose slot moves past its deadline is told
/// so (with the wait it would have had) when its old slot comes, never later than its deadline; the others
/// go at their stretched slots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_that_moves_a_slot_past_its_deadline_refuses_it_in_time() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let rule = partner("out:stretched:").max_wait(Duration::from_secs(1));
    let first = limiter.turn(&rule, "acme").await.unwrap();
    let mut waiting = Vec::new();
    for _ in 0..8 {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        waiting.push(tokio::spawn(async move {
            let asked = std::time::Instant::now();
            let turn = limiter.turn(&rule, "acme").await;
            (asked.elapsed(), turn.map(|turn| turn.decision().delay))
        }));
    }
    // Once the eight hold their slots (103 ms apart, up to 825 ms), the upstream states half the rule's rate.
    let reaches = Rule::new()
        .prefix("out:stretched:")
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while limiter.inspect(&reaches, "acme").await.unwrap().retry_after
        < Duration::from_micros(9 * 103_125)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the line never filled"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // (A microsecond on: the cut comes after the slots were handed out, on the store's clock.)
    clock.advance(Duration::from_micros(1));
    first
        .answered(200, [("X-RateLimit-Limit", "5")])
        .await
        .unwrap();
    let (mut went, mut refused) = (0, 0);
    for caller in waiting {
        let (waited, turn) = caller.await.unwrap();
        assert!(
            waited < Duration::from_millis(1_100),
            "waited {waited:?}, past its deadline"
        );
        match turn {
            Ok(_) => went += 1,
            Err(limited) => {
                assert!(limited.retry_after() > Duration::ZERO);
                refused += 1;
            }
        }
    }
    // Stretched twice from the cut (within the first slots): the slots past about half a second move past 1 s.
    assert!(refused >= 3 && went >= 3, "{went} went, {refused} refused");
    drop(first);
}
