//! Choosing an algorithm, a burst, a cost and waiting for a slot on the attribute, against a real Redis; and the
//! buckets' shares kept for the higher priorities, as absolute numbers, in memory and on Redis.

use std::time::{Duration, Instant};

use limiter_runtime::{
    rate_limit, Algorithm, Decision, FakeClock, Limiter, Priority, RateLimited, Rule, Verdict,
};
use tests::RedisServer;

#[rate_limit(algorithm = fixed_window, key = id, max = 3, window = "1h", prefix = "fixed:")]
async fn fixed(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(algorithm = sliding_window, key = id, max = 3, window = "1h", prefix = "sliding:")]
async fn sliding(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(algorithm = token_bucket, key = id, max = 1, window = "1h", burst = 4, prefix = "bucket:")]
async fn bucket(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(algorithm = leaky_bucket, key = id, max = 1, window = "1h", prefix = "leaky:")]
async fn leaky(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

/// One slot every 100 ms; a call may wait up to 250 ms for its slot.
#[rate_limit(algorithm = leaky_bucket, key = id, max = 10, window = "1s", mode = wait, max_wait = "250ms", prefix = "shaped:")]
async fn shaped(id: u32) -> Result<Instant, RateLimited> {
    Ok(Instant::now())
}

#[rate_limit(key = user, max = 10, window = "1h", cost = items.len(), prefix = "upload:")]
async fn upload(user: &str, items: &[u8]) -> Result<usize, RateLimited> {
    Ok(items.len())
}

async fn admitted<F: std::future::Future<Output = Result<u32, RateLimited>>>(
    calls: impl Iterator<Item = F>,
) -> usize {
    let mut admitted = 0;
    for call in calls {
        admitted += usize::from(call.await.is_ok());
    }
    admitted
}

#[tokio::test]
async fn each_algorithm_limits_through_the_attribute() {
    let server = RedisServer::start();
    server
        .limiter()
        .scope(async {
            assert_eq!(admitted((0..5).map(|_| fixed(1))).await, 3);
            assert_eq!(admitted((0..5).map(|_| sliding(1))).await, 3);
            assert_eq!(
                admitted((0..6).map(|_| bucket(1))).await,
                4,
                "a burst of 4, then 1 per hour"
            );
            assert_eq!(
                admitted((0..3).map(|_| leaky(1))).await,
                1,
                "without mode = wait, nobody waits"
            );
            let error = leaky(1).await.unwrap_err();
            assert!(
                error.retry_after() > Duration::from_secs(3500),
                "{:?}",
                error.retry_after()
            );
        })
        .await;
    // Each algorithm kept one key in Redis.
    let keys = server.limit_keys();
    assert_eq!(keys.len(), 4, "{keys:?}");
}

#[tokio::test]
async fn cost_weighs_each_call() {
    let server = RedisServer::start();
    server
        .limiter()
        .scope(async {
            assert_eq!(upload("ada", &[0; 7]).await.unwrap(), 7);
            let error = upload("ada", &[0; 4]).await.unwrap_err();
            assert_eq!(error.remaining(), 3);
            assert_eq!(upload("ada", &[0; 3]).await.unwrap(), 3);
            assert!(
                upload("ada", &[]).await.is_ok(),
                "a call of cost zero is free"
            );
            assert!(
                upload("bob", &[0; 11]).await.is_err(),
                "a cost above the limit is rejected, not looped"
            );
        })
        .await;
}

/// Checks that `mode = wait` admits the calls whose slot starts within `max_wait` and sleeps until it, and refuses
/// the others. The five calls are decided on a frozen fake clock, as if at once (on Redis's clock, a call that a
/// loaded machine sends 50 ms late finds its slot within `max_wait`); each sleeps its delay on the real one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode_wait_sleeps_until_the_slot_and_rejects_past_max_wait() {
    let server = RedisServer::start();
    let limiter = server.limiter_with_clock(&FakeClock::new());
    let started = Instant::now();
    let calls = (0..5).map(|_| {
        let limiter = limiter.clone();
        tokio::spawn(async move { limiter.scope(shaped(1)).await })
    });
    let results: Vec<_> = futures::future::join_all(calls)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let mut ran: Vec<Duration> = results
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|at| *at - started)
        .collect();
    ran.sort();
    // Slots at 0, 100 and 200 ms; the next two would wait 300 and 400 ms, past max_wait.
    assert_eq!(ran.len(), 3, "{ran:?}");
    assert_eq!(results.iter().filter(|r| r.is_err()).count(), 2);
    // The `n`th slot's call was told a delay of exactly `n` × 100 ms, and sleeps it from its reply, which came after
    // `started`: the `n`th body runs no earlier than `n` × 100 ms after `started`, however late the machine runs
    // it (the time between two bodies is not bounded: each runs its slot plus its own reply's travel and
    // wake-up).
    for (n, at) in ran.iter().enumerate() {
        assert!(*at >= Duration::from_millis(100) * n as u32, "{ran:?}");
    }
    // Nor does it sleep a window's worth past its slot (200 ms): a body that waited for the window instead of
    // its slot would run 1 s or more after `started`. (How late a loaded machine runs a woken task is not the
    // limiter's to bound.)
    assert!(ran[2] < Duration::from_secs(1), "{ran:?}");
}

#[tokio::test]
async fn a_fixed_window_sets_its_expiry_once_when_it_opens() {
    let server = RedisServer::start();
    server
        .limiter()
        .scope(async {
            fixed(7).await.unwrap();
            let mut redis = server.connection();
            let first: i64 = redis::Commands::pttl(&mut redis, "fixed:7").unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            fixed(7).await.unwrap();
            let second: i64 = redis::Commands::pttl(&mut redis, "fixed:7").unwrap();
            // The window's end did not move: later calls never push the expiry forward.
            assert!(
                second <= first - 250,
                "expiry moved from {first} ms to {second} ms"
            );
            assert!(first <= 3_600_000);
        })
        .await;
}

#[tokio::test]
async fn every_key_expires_when_its_state_stops_mattering() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let window = Duration::from_secs(10);
    for (algorithm, longest) in [
        (Algorithm::SlidingLog, window),
        (Algorithm::FixedWindow, window),
        (Algorithm::SlidingWindow, 2 * window),
        // One token of a bucket of 5 refilled at 5 per 10 s: full again in 2 s.
        (Algorithm::TokenBucket, window / 5),
        (Algorithm::LeakyBucket, window / 5),
    ] {
        let rule = Rule::new()
            .algorithm(algorithm)
            .max(5)
            .window(window)
            .prefix(format!("{algorithm:?}:"));
        assert!(limiter.check(&rule, "k").await.allowed);
        let mut redis = server.connection();
        let ttl: i64 = redis::Commands::pttl(&mut redis, format!("{algorithm:?}:k")).unwrap();
        assert!(
            ttl > 0 && ttl as u128 <= longest.as_millis(),
            "{algorithm:?}: TTL {ttl} ms, at most {longest:?}"
        );
    }
}

/// The token and leaky buckets and the sliding window keep their state in one string (`SET .. PX`: value and
/// expiry in one command). A key an older version left as a hash is read as empty and replaced: no error, no
/// degraded decision, and counting goes on from there.
#[tokio::test]
async fn a_key_left_as_a_hash_by_an_older_version_is_replaced() {
    use redis::Commands;

    let server = RedisServer::start();
    let limiter = server.limiter();
    let mut redis = server.connection();
    for (algorithm, fields) in [
        (Algorithm::TokenBucket, &[("t", "1"), ("f", "0")][..]),
        (Algorithm::LeakyBucket, &[("t", "1"), ("f", "0")][..]),
        (
            Algorithm::SlidingWindow,
            &[("w", "1"), ("c", "1"), ("p", "1")][..],
        ),
    ] {
        let rule = Rule::new()
            .prefix("old:")
            .algorithm(algorithm)
            .max(2)
            .window(Duration::from_secs(3600));
        let key = format!("old:{algorithm:?}");
        let () = redis.hset_multiple(&key, fields).unwrap();
        let first = limiter.check(&rule, format!("{algorithm:?}")).await;
        assert!(first.allowed && !first.degraded, "{algorithm:?}: {first:?}");
        let kind: String = redis::cmd("TYPE").arg(&key).query(&mut redis).unwrap();
        assert_eq!(kind, "string", "{algorithm:?}");
        let ttl: i64 = redis.pttl(&key).unwrap();
        assert!(ttl > 0, "{algorithm:?}: the state expires ({ttl} ms)");
        // The bucket holds one unit per 30 min (max 2 per hour): the next call finds one unit used.
        if algorithm != Algorithm::LeakyBucket {
            assert!(limiter.check(&rule, format!("{algorithm:?}")).await.allowed);
            assert!(
                !limiter.check(&rule, format!("{algorithm:?}")).await.allowed,
                "{algorithm:?}"
            );
        }
    }
}

/// A limiter on fake time, in memory (`None`) or on `server`.
fn on_fake_time(server: Option<&RedisServer>, clock: &FakeClock) -> Limiter {
    match server {
        None => Limiter::builder().clock(clock.clone()).build().unwrap(),
        Some(server) => server.limiter_with_clock(clock),
    }
}

/// Calls of `priority` on `rule`'s `key`, one at a time on a frozen clock, until one is refused: the decisions of
/// those admitted, and the refusal.
async fn fill(
    limiter: &Limiter,
    rule: &Rule,
    key: &str,
    priority: Priority,
) -> (Vec<Decision>, Decision) {
    let mut admitted = Vec::new();
    loop {
        let decision = limiter.check(rule, key).priority(priority).await;
        assert!(!decision.degraded, "{decision:?}");
        match decision.allowed {
            true => admitted.push(decision),
            false => return (admitted, decision),
        }
        assert!(admitted.len() <= 100, "{priority} never refused");
    }
}

/// Checks that a token bucket's shares are of its burst, not of its `max`, as whole units rounded up, in memory and
/// on Redis alike, on a frozen fake clock. A burst of 25 refilled at 10 per 10 s (a token a second), keeping
/// critical 20% (5 tokens) and high 30% (7.5, kept as 8): `Normal` and `Low` calls fill 25 - 8 = 17 (shares of
/// `max` would keep 3 and let them fill 22), `High` calls 3 more (to 25 - 5 = 20), `Critical` ones the last 5.
/// Each admitted call is told what is left under its own ceiling; each refusal, that one token more (a second)
/// lets its priority in again, `Reserved` below `Critical` and `Limited` for it. Full, a `Normal` call waits for
/// 9 tokens (1 + the 8 kept): 9 s exactly.
#[tokio::test]
async fn a_token_buckets_shares_are_of_its_burst() {
    let server = RedisServer::start();
    for (store, on) in [("memory", None), ("redis", Some(&server))] {
        let clock = FakeClock::new();
        let limiter = on_fake_time(on, &clock);
        let rule = Rule::new()
            .prefix(format!("burst-share:{store}:"))
            .algorithm(Algorithm::TokenBucket)
            .max(10)
            .window(Duration::from_secs(10))
            .burst(25)
            .reserve(Priority::Critical, 20)
            .reserve(Priority::High, 30);
        let second = Duration::from_secs(1);
        // What is left, in tokens of the burst. (`limit` is not compared: a token bucket's is `max` less the
        // tokens kept, 10 - 8 = 2 for a `Normal` call, a rate beside a count of tokens.)
        let told = |decisions: &[Decision]| -> Vec<u64> {
            decisions.iter().map(|d| d.remaining).collect()
        };
        let (admitted, refused) = fill(&limiter, &rule, "k", Priority::Normal).await;
        assert_eq!(
            told(&admitted),
            (0..17).rev().collect::<Vec<u64>>(),
            "{store}"
        );
        assert_eq!(
            (refused.verdict, refused.remaining, refused.retry_after),
            (Verdict::Reserved, 0, second),
            "{store}: {refused:?}"
        );
        let (admitted, refused) = fill(&limiter, &rule, "k", Priority::Low).await;
        assert!(admitted.is_empty(), "{store}: {admitted:?}");
        assert_eq!(refused.verdict, Verdict::Reserved, "{store}");
        let (admitted, refused) = fill(&limiter, &rule, "k", Priority::High).await;
        assert_eq!(told(&admitted), [2, 1, 0], "{store}");
        assert_eq!(
            (refused.verdict, refused.remaining, refused.retry_after),
            (Verdict::Reserved, 0, second),
            "{store}: {refused:?}"
        );
        let (admitted, refused) = fill(&limiter, &rule, "k", Priority::Critical).await;
        assert_eq!(told(&admitted), [4, 3, 2, 1, 0], "{store}");
        assert_eq!(
            (refused.verdict, refused.remaining, refused.retry_after),
            (Verdict::Limited, 0, second),
            "{store}: {refused:?}"
        );
        // The bucket full: a `Normal` call fits once 9 tokens are back, not a microsecond before.
        let normal = limiter.check(&rule, "k").await;
        assert_eq!(normal.retry_after, 9 * second, "{store}: {normal:?}");
        clock.advance(9 * second - Duration::from_micros(1));
        let early = limiter.check(&rule, "k").await;
        assert_eq!(
            (early.verdict, early.retry_after),
            (Verdict::Reserved, Duration::from_micros(1)),
            "{store}: {early:?}"
        );
        clock.advance(Duration::from_micros(1));
        let due = limiter.check(&rule, "k").await;
        assert!(due.allowed, "{store}: {due:?}");
    }
}

/// Checks that a leaky bucket's shares are of its slots within `max_wait`, as whole slots rounded up, in memory and on
/// Redis alike, on a frozen fake clock. A slot every 100 ms (10 a second), a call waiting up to 1 s for its
/// slot: 11 slots (delays 0, 100, ..., 1000 ms). Critical 20% keeps 3 (2.2 rounded up), high 30% keeps 4 (3.3):
/// `Normal` calls take the slots of delays 0 to 600 ms (7), `High` ones the 700 ms slot, `Critical` ones those of
/// 800 to 1000 ms. Each admitted call is told its delay and the slots left under its own ceiling; each
/// refusal, that the next slot frees in 100 ms.
#[tokio::test]
async fn a_leaky_buckets_shares_are_of_its_slots() {
    let server = RedisServer::start();
    for (store, on) in [("memory", None), ("redis", Some(&server))] {
        let clock = FakeClock::new();
        let limiter = on_fake_time(on, &clock);
        let rule = Rule::new()
            .prefix(format!("slot-share:{store}:"))
            .algorithm(Algorithm::LeakyBucket)
            .max(10)
            .window(Duration::from_secs(1))
            .max_wait(Duration::from_secs(1))
            .reserve(Priority::Critical, 20)
            .reserve(Priority::High, 30);
        let slot = Duration::from_millis(100);
        let told = |decisions: &[Decision]| -> Vec<(Duration, u64, u64)> {
            decisions
                .iter()
                .map(|d| (d.delay, d.remaining, d.limit))
                .collect()
        };
        let expected = |slots: std::ops::Range<u32>, ceiling: u32| -> Vec<(Duration, u64, u64)> {
            slots
                .map(|n| (slot * n, u64::from(ceiling - n - 1), 10))
                .collect()
        };
        let (admitted, refused) = fill(&limiter, &rule, "k", Priority::Normal).await;
        assert_eq!(told(&admitted), expected(0..7, 7), "{store}");
        assert_eq!(
            (refused.verdict, refused.retry_after),
            (Verdict::Reserved, slot),
            "{store}: {refused:?}"
        );
        let (admitted, refused) = fill(&limiter, &rule, "k", Priority::Low).await;
        assert!(admitted.is_empty(), "{store}: {admitted:?}");
        assert_eq!(refused.verdict, Verdict::Reserved, "{store}");
        let (admitted, refused) = fill(&limiter, &rule, "k", Priority::High).await;
        assert_eq!(told(&admitted), expected(7..8, 8), "{store}");
        assert_eq!(
            (refused.verdict, refused.retry_after),
            (Verdict::Reserved, slot),
            "{store}: {refused:?}"
        );
        let (admitted, refused) = fill(&limiter, &rule, "k", Priority::Critical).await;
        assert_eq!(told(&admitted), expected(8..11, 11), "{store}");
        assert_eq!(
            (refused.verdict, refused.retry_after),
            (Verdict::Limited, slot),
            "{store}: {refused:?}"
        );
    }
}
