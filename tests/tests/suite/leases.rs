//! Leases against a real Redis: a node takes up to `lease` units in one script call and spends them in memory;
//! what it has not spent when the lease ends goes back, so the limit is kept exactly (a fixed window never
//! passes `max`) and nothing is lost; a lease's units are spent even while Redis is frozen, for Redis counted
//! them already; and a charge given back goes back into the lease. (Across processes, on Redis's own clock:
//! `multi_process.rs`.)

use std::time::{Duration, Instant};

use limiter_runtime::{Algorithm, FakeClock, Limiter, Rule};
use tests::RedisServer;

fn script_calls(server: &RedisServer) -> u64 {
    server.calls("evalsha") + server.calls("eval")
}

async fn admitted(limiter: &Limiter, rule: &Rule, key: &str, calls: usize) -> usize {
    let mut admitted = 0;
    for _ in 0..calls {
        admitted += usize::from(limiter.check(rule, key).await.allowed);
    }
    admitted
}

/// Two nodes (limiters) on `server`, on one fake clock: the clock, then the nodes.
fn two_nodes(server: &RedisServer) -> (FakeClock, Limiter, Limiter) {
    let clock = FakeClock::new();
    let (a, b) = (
        server.limiter_with_clock(&clock),
        server.limiter_with_clock(&clock),
    );
    (clock, a, b)
}

#[tokio::test]
async fn a_hot_key_costs_redis_one_script_call_per_lease() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    for algorithm in [Algorithm::TokenBucket, Algorithm::FixedWindow] {
        let rule = Rule::new()
            .prefix(format!("hot:{algorithm}:"))
            .algorithm(algorithm)
            .max(1_000_000)
            .window(Duration::from_secs(60))
            .lease(100)
            .lease_ttl(Duration::from_secs(30));
        let before = script_calls(&server);
        assert_eq!(admitted(&limiter, &rule, "k", 1_000).await, 1_000);
        let calls = script_calls(&server) - before;
        assert!(
            // A lease each 100 calls; the heartbeat's script may run meanwhile.
            (10..=14).contains(&calls),
            "{algorithm}: {calls} script calls for 1,000 decisions with leases of 100"
        );
        // Without a lease, one each.
        let plain = Rule::new()
            .prefix(format!("plain:{algorithm}:"))
            .algorithm(algorithm)
            .max(1_000_000);
        let before = script_calls(&server);
        admitted(&limiter, &plain, "k", 100).await;
        let calls = script_calls(&server) - before;
        assert!((100..=104).contains(&calls), "{algorithm}: {calls}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_that_find_a_lease_being_taken_wait_for_it() {
    let server = RedisServer::start();
    // Not coalesced: a call that did not wait would be a script call of its own. No heartbeat (a script
    // call too) falls among the calls counted. Patient: on a busy machine the lease's taking may outlast the
    // default deadline, and the calls waiting for it would then each ask Redis, which is not what this
    // counts.
    let limiter = Limiter::builder()
        .redis(server.url())
        .coalesce(false)
        .deadline(tests::PATIENT)
        .heartbeat_every(Duration::from_secs(3_600))
        .build()
        .unwrap();
    let rule = Rule::new()
        .prefix("waiting:")
        .algorithm(Algorithm::TokenBucket)
        .max(1_000_000)
        .lease(100)
        .lease_ttl(Duration::from_secs(30));
    // Connected, and the heartbeat (a script too) has run.
    limiter.check(&rule, "warm").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = script_calls(&server);
    for (decision, _) in tests::at_once(&limiter, &rule, "k", 64).await {
        assert!(decision.allowed && !decision.degraded, "{decision:?}");
    }
    let calls = script_calls(&server) - before;
    assert!(
        calls <= 2,
        "{calls} script calls for 64 calls at once: they went to Redis, not to the lease being taken"
    );
}

/// Calls that wait for a lease being taken share its deadline: with Redis frozen, the taking and every call
/// waiting for it are decided degraded within one deadline (and scheduling slack under a second one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_for_a_lease_on_a_frozen_redis_take_one_deadline() {
    let server = RedisServer::start();
    let deadline = Duration::from_millis(250);
    let limiter = Limiter::builder()
        .redis(server.url())
        .coalesce(false)
        .deadline(deadline)
        .breaker(1_000, Duration::from_millis(50))
        .build()
        .unwrap();
    let rule = Rule::new()
        .prefix("frozen_lease:")
        .algorithm(Algorithm::TokenBucket)
        .max(1_000_000)
        .lease(100)
        .lease_ttl(Duration::from_secs(30));
    limiter.check(&rule, "warm").await;
    server.pause();
    for (decision, took) in tests::at_once(&limiter, &rule, "k", 32).await {
        assert!(decision.degraded, "Redis is frozen");
        assert!(
            took < deadline + Duration::from_millis(100),
            "a call waiting for a lease took {took:?}"
        );
    }
    server.resume();
}

#[tokio::test]
async fn a_fixed_window_never_passes_max_and_what_a_lease_leaves_goes_back() {
    let server = RedisServer::start();
    let (clock, a, b) = two_nodes(&server);
    let rule = Rule::new()
        .prefix("window:")
        .algorithm(Algorithm::FixedWindow)
        .max(100)
        .window(Duration::from_secs(60))
        .lease(30)
        .lease_ttl(Duration::from_secs(1));
    // Node a spends 10 of a lease of 30: it holds 20 that Redis counted already.
    assert_eq!(admitted(&a, &rule, "k", 10).await, 10);
    // Node b gets the rest: 70, never more.
    assert_eq!(admitted(&b, &rule, "k", 100).await, 70);
    // Once a's lease has run out, what it left goes back (a's sweep), and b gets it: 100 in all, exactly.
    clock.advance(Duration::from_millis(1_100));
    let started = Instant::now();
    let mut more = 0;
    while more < 20 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a's 20 units never came back ({more} did)"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        // A refusal of a leased limit holds no longer than a lease's time to live and a sweep.
        clock.advance(Duration::from_millis(1_100));
        more += admitted(&b, &rule, "k", 20 - more).await;
    }
    assert_eq!(admitted(&b, &rule, "k", 10).await, 0, "never more than max");
    assert_eq!(admitted(&a, &rule, "k", 10).await, 0, "never more than max");
}

#[tokio::test]
async fn a_token_bucket_spread_over_two_nodes_admits_its_burst_exactly() {
    let server = RedisServer::start();
    let (_clock, a, b) = two_nodes(&server);
    let rule = Rule::new()
        .prefix("bucket:")
        .algorithm(Algorithm::TokenBucket)
        .max(10)
        .burst(50)
        .window(Duration::from_secs(3_600))
        .lease(20)
        .lease_ttl(Duration::from_millis(500));
    // The clock stands still: the bucket holds its burst, 50, and the leases share it out.
    let first = admitted(&a, &rule, "k", 5).await + admitted(&b, &rule, "k", 60).await;
    assert_eq!(first, 35, "a holds 15 of its lease of 20");
    assert_eq!(admitted(&a, &rule, "k", 30).await, 15);
    // Everything is spent: 50 in all, and nothing more, on either node.
    assert_eq!(admitted(&b, &rule, "k", 5).await, 0);
}

#[tokio::test]
async fn a_lease_is_spent_while_redis_is_frozen() {
    let server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .deadline(Duration::from_millis(100))
        .build()
        .unwrap();
    let rule = Rule::new()
        .prefix("frozen:")
        .algorithm(Algorithm::TokenBucket)
        .max(1_000)
        .window(Duration::from_secs(1))
        .lease(50)
        .lease_ttl(Duration::from_secs(30));
    assert!(!limiter.check(&rule, "k").await.degraded);
    server.pause();
    for call in 0..49 {
        let decision = limiter.check(&rule, "k").await;
        assert!(
            decision.allowed && !decision.degraded,
            "call {call} of the lease: {decision:?}"
        );
    }
    // The lease is spent: the next call asks Redis, which is frozen.
    assert!(limiter.check(&rule, "k").await.degraded);
    server.resume();
}

#[tokio::test]
async fn a_charge_given_back_goes_back_into_the_lease() {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    let limiter = server.limiter_with_clock(&clock);
    let rule = Rule::new()
        .prefix("refund:")
        .algorithm(Algorithm::FixedWindow)
        .max(10)
        .window(Duration::from_secs(60))
        .lease(10)
        .lease_ttl(Duration::from_secs(30));
    let estimate = limiter.estimate(&rule, "k").cost(4).await.unwrap();
    estimate.settle(1).await;
    let before = script_calls(&server);
    // 9 units left in the lease: 3 given back to it, 6 never spent.
    assert_eq!(admitted(&limiter, &rule, "k", 12).await, 9);
    assert_eq!(
        script_calls(&server) - before,
        1,
        "the lease answered 9 calls; the 10th asked Redis"
    );
}

#[limiter_runtime::rate_limit(prefix = "attribute:", algorithm = token_bucket, max = 1_000_000, lease = 100, lease_ttl = "30s")]
async fn hot() -> Result<(), limiter_runtime::RateLimited> {
    Ok(())
}

#[tokio::test]
async fn the_attribute_spends_leases() {
    let server = RedisServer::start();
    let before = script_calls(&server);
    server
        .limiter()
        .scope(async {
            for _ in 0..500 {
                hot().await.unwrap();
            }
        })
        .await;
    let calls = script_calls(&server) - before;
    assert!(
        (5..=9).contains(&calls),
        "{calls} script calls for 500 calls"
    );
}
