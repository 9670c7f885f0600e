//! Choosing an algorithm, a burst, a cost and waiting for a slot on the attribute, against a real Redis.

use std::time::{Duration, Instant};

use limiter_runtime::{rate_limit, RateLimited};
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode_wait_sleeps_until_the_slot_and_rejects_past_max_wait() {
    let server = RedisServer::start();
    let limiter = server.limiter();
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
    for pair in ran.windows(2) {
        // Slots are exactly 100 ms apart on Redis's clock (`guarantees_on_redis` checks that); a body runs at its
        // slot plus the reply's travel time, which varies by a few milliseconds.
        assert!(pair[1] - pair[0] >= Duration::from_millis(95), "{ran:?}");
    }
    assert!(ran[2] < Duration::from_millis(600), "{ran:?}");
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
    use limiter_runtime::{Algorithm, Rule};
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
    use limiter_runtime::{Algorithm, Rule};
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
