//! Penalties where things go wrong: a flood on a blocked key (answered by each node itself), a node that
//! restarts, Redis killed during a block (each `on_error`), hostile keys, and a flood of distinct blocked keys
//! (memory bounded).

use std::time::Duration;

use limiter_runtime::{Limiter, OnError, Penalty, Rule, Verdict};
use tests::{Monitor, RedisServer};

const SECOND: Duration = Duration::from_secs(1);

fn login() -> Rule {
    Rule::new()
        .prefix("faults:login:")
        .max(1)
        .window(60 * SECOND)
        .penalty(Penalty::fixed(600 * SECOND))
}

/// Two nodes on `server`, on one fake clock.
fn two_nodes(server: &RedisServer) -> (limiter_runtime::FakeClock, Limiter, Limiter) {
    let clock = limiter_runtime::FakeClock::new();
    let (a, b) = (
        server.limiter_with_clock(&clock),
        server.limiter_with_clock(&clock),
    );
    (clock, a, b)
}

/// Offends `key` on `node`: admitted once, then blocked.
async fn offend(node: &Limiter, rule: &Rule, key: &str) {
    assert!(node.check(rule, key).await.allowed);
    assert_eq!(node.check(rule, key).await.verdict, Verdict::Blocked);
}

/// Under a flood on a blocked key, at least 98% of refusals cost no Redis call: each node answers from what
/// Redis told it, and asks again once a second at most.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_on_a_blocked_key_stays_on_the_node() {
    let server = RedisServer::start();
    let (clock, a, b) = two_nodes(&server);
    let rule = login();
    offend(&a, &rule, "mallory").await;
    assert_eq!(b.check(&rule, "mallory").await.verdict, Verdict::Blocked);
    let monitor = Monitor::start(server.port());
    // Over five minutes of the block, 50 moves of the clock, 100 calls between two moves.
    let calls = 5_000;
    for i in 0..calls {
        let node = if i % 2 == 0 { &a } else { &b };
        if i % 100 == 0 {
            clock.advance(6 * SECOND);
        }
        let refused = node.check(&rule, "mallory").await;
        assert_eq!(refused.verdict, Verdict::Blocked);
        assert!(refused.retry_after > 290 * SECOND, "{refused:?}");
    }
    // The key's script calls alone: the nodes' heartbeats (a script call a second of real time each, however
    // long a loaded machine takes over the flood) are not the flood's.
    let sent = monitor.take_lines();
    let scripts = sent
        .iter()
        .filter(|line| line.contains("\"EVAL") && line.contains("\"{faults:login:mallory}"))
        .count();
    // A denial is held a second at a time: one call per node each time the clock moves past it (and at
    // least one a move: a move of 6 s is past every hold, so the count is of the key's calls, not vacuous).
    let moves = calls / 100;
    assert!(
        (moves..=2 * moves).contains(&scripts),
        "{scripts} script calls for {calls} refusals over {moves} seconds' moves: {sent:?}"
    );
}

/// A node that restarts (a new limiter) finds the key still blocked: the block lives in Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_survives_a_restart_of_a_node() {
    let server = RedisServer::start();
    let rule = login();
    {
        let a = server.limiter();
        offend(&a, &rule, "mallory").await;
    }
    let restarted = server.limiter();
    let refused = restarted.check(&rule, "mallory").await;
    assert_eq!(
        (refused.allowed, refused.verdict),
        (false, Verdict::Blocked)
    );
    assert!(refused.retry_after > 590 * SECOND);
}

/// Redis killed during a block: a key this node knows to be blocked stays refused whatever `on_error` says
/// (the node's denial holds to the block's end); any other key is decided by `on_error`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_killed_during_a_block_then_each_on_error() {
    let mut server = RedisServer::start();
    // Patient: on a loaded machine, a call past a short deadline before the kill would already be decided
    // by `on_error` (a closed node would refuse the offence's first call); once Redis is killed, a call
    // fails at once (the port refuses connections), whatever the deadline.
    let node = |on_error| {
        server
            .builder()
            .on_error(on_error)
            .deadline(tests::PATIENT)
            .build()
            .unwrap()
    };
    let nodes = [
        (OnError::Closed, node(OnError::Closed)),
        (OnError::Local, node(OnError::Local)),
        (OnError::Open, node(OnError::Open)),
    ];
    let rule = login();
    for (on_error, node) in &nodes {
        offend(node, &rule, &format!("mallory:{on_error:?}")).await;
    }
    server.kill();
    // Longer than any denial but a block's is held.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    for (on_error, node) in &nodes {
        let blocked = node.check(&rule, &format!("mallory:{on_error:?}")).await;
        assert!(!blocked.allowed, "{on_error:?}: {blocked:?}");
        assert_eq!(blocked.verdict, Verdict::Blocked, "{on_error:?}");
        let other = node.check(&rule, "alice").await;
        let expected = match on_error {
            OnError::Closed => (false, Verdict::Unavailable),
            OnError::Local => (true, Verdict::DegradedLocal),
            _ => (true, Verdict::DegradedOpen),
        };
        assert_eq!((other.allowed, other.verdict), expected, "{on_error:?}");
    }
}

/// Keys that look like block keys, braces, separators, a long key: each is blocked alone, and listed as it
/// was written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_keys_are_blocked_alone() {
    let server = RedisServer::start();
    let long = "x".repeat(5_000);
    let hostile = [
        "k", "k%block", "{k}", "k}", "}{", "%", ":", "|", "k:block", "{", "é🙂", &long,
    ];
    for (store, limiter) in [
        ("memory", Limiter::in_memory()),
        ("redis", server.limiter()),
    ] {
        let rule = login();
        for (i, key) in hostile.iter().enumerate() {
            offend(&limiter, &rule, key).await;
            // Every key after it is untouched.
            for later in &hostile[i + 1..] {
                let decision = limiter.inspect(&rule, later).await.unwrap();
                assert_eq!(
                    decision.blocked_for,
                    Duration::ZERO,
                    "{store}: {key:?} blocked {later:?}"
                );
            }
        }
        let bans = limiter.bans("faults:login:").await.unwrap();
        assert_eq!(bans.len(), hostile.len(), "{store}: {bans:?}");
    }
}

/// A flood of 100,000 distinct keys, each blocked: the store's memory holds no more than its bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_blocked_keys_is_bounded_in_memory() {
    let bound = 10_000;
    let limiter = Limiter::builder().max_keys(bound).build().unwrap();
    let rule = login();
    for i in 0..100_000 {
        let key = format!("k{i}");
        limiter.check(&rule, &key).await;
        limiter.check(&rule, &key).await;
    }
    let stats = limiter.stats();
    // States and blocks, each within the bound (and its per-shard rounding).
    assert!(
        stats.keys as usize <= 2 * bound + 64,
        "{} keys held for a bound of {bound}",
        stats.keys
    );
    assert!(stats.evicted > 0);
}

/// A call under a penalty is one script call, offence and block included: no round trip of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_penalty_costs_no_round_trip() {
    let server = RedisServer::start();
    let monitor = Monitor::start(server.port());
    let rule = login();
    let limiter = tests::quiet_limiter(&server, &monitor, &rule).await;
    for _ in 0..3 {
        limiter.check(&rule, "eve").await;
    }
    let sent = monitor.take();
    let commands: Vec<&String> = sent.iter().filter(|c| *c != "ECHO").collect();
    assert_eq!(commands, ["EVALSHA"; 3], "{sent:?}");
}

/// A ban replaces a shorter block on every node at its next call: the node that held the key's 10 s block
/// (answering it itself) hears of the ban and asks Redis again, and so tells the ban's time, not the block's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ban_replaces_a_shorter_block_on_every_node() {
    let server = RedisServer::start();
    let (_clock, a, b) = two_nodes(&server);
    let rule = Rule::new()
        .prefix("faults:short:")
        .max(1)
        .window(SECOND)
        .penalty(Penalty::fixed(10 * SECOND));
    offend(&a, &rule, "mallory").await;
    assert_eq!(b.check(&rule, "mallory").await.retry_after, 10 * SECOND);
    a.ban(&rule, "mallory", 120 * SECOND).await.unwrap();
    for node in [&a, &b] {
        let start = std::time::Instant::now();
        loop {
            let told = node.check(&rule, "mallory").await;
            assert_eq!(told.verdict, Verdict::Blocked);
            if told.retry_after == 120 * SECOND {
                break;
            }
            assert_eq!(told.retry_after, 10 * SECOND, "{told:?}");
            assert!(
                start.elapsed() < SECOND,
                "still the old block a second after the ban"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// How Redis loses its data.
#[derive(Debug, Clone, Copy)]
enum Loss {
    /// `FLUSHALL`: the same server, the nodes' connections kept.
    Flushed,
    /// Killed and started again on its port with nothing (test_support persists nothing): the nodes reconnect
    /// to a server without their data or their scripts.
    RestartedEmpty,
}

/// After Redis loses its data (`loss`), what the nodes enforce and what the view shows agree within a second:
/// no node keeps refusing a key from what Redis told it before, the list and `inspect` show no block, and an
/// unban says truthfully that it lifted nothing.
async fn after_redis_loses_its_data(loss: Loss) {
    let mut server = RedisServer::start();
    let (clock, a, b) = two_nodes(&server);
    let rule = login();
    offend(&a, &rule, "mallory").await;
    a.ban(&rule, "eve", 3600 * SECOND).await.unwrap();
    for node in [&a, &b] {
        assert_eq!(node.check(&rule, "mallory").await.verdict, Verdict::Blocked);
        assert_eq!(node.check(&rule, "eve").await.verdict, Verdict::Blocked);
    }
    match loss {
        Loss::Flushed => {
            let _: () = redis::cmd("FLUSHALL")
                .query(&mut server.connection())
                .unwrap();
        }
        Loss::RestartedEmpty => {
            server.restart();
            // While they reconnect, the nodes decide by `on_error` (degraded mode's own promise); from when
            // each decides through Redis again (an event: its first call that is not degraded), the same
            // promise as after a flush. Another key, so that the probe changes nothing of the two below.
            let probe = Rule::new().prefix("faults:probe:").max(1_000);
            for node in [&a, &b] {
                tests::until_redis_decides(node, &probe).await;
            }
        }
    }
    assert!(a.bans("").await.unwrap().is_empty(), "{loss:?}");
    let inspected = b.inspect(&rule, "mallory").await.unwrap();
    assert_eq!(
        (inspected.blocked_for, inspected.banned),
        (Duration::ZERO, false),
        "{loss:?}"
    );
    // What each node was told holds a second at most: then it asks Redis, which admits.
    clock.advance(SECOND);
    for (node, key) in [(&a, "mallory"), (&b, "eve")] {
        let now = node.check(&rule, key).await;
        assert!(now.allowed, "{loss:?}, {key}: {now:?}");
    }
    assert!(!a.unban(&rule, "eve").await.unwrap(), "{loss:?}");
}

/// Checks [`after_redis_loses_its_data`] when Redis is flushed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_is_flushed_the_nodes_and_the_view_agree() {
    after_redis_loses_its_data(Loss::Flushed).await;
}

/// Checks [`after_redis_loses_its_data`] when Redis restarts empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_restarts_empty_the_nodes_and_the_view_agree() {
    after_redis_loses_its_data(Loss::RestartedEmpty).await;
}

/// In Redis, a block key lives for the block plus the penalty's cap (its offences matter that long), and no
/// longer: its time to live, read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_block_key_lives_for_the_block_and_the_cap() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new()
        .prefix("faults:ttl:")
        .max(1)
        .window(SECOND)
        .penalty(Penalty::escalating(10 * SECOND, 100 * SECOND));
    offend(&limiter, &rule, "mallory").await;
    let ttl: i64 = redis::cmd("PTTL")
        .arg("{faults:ttl:mallory}%block")
        .query(&mut server.connection())
        .unwrap();
    // 10 s of block and 100 s of cap, less the little time since it was written.
    assert!((109_000..=110_000).contains(&ttl), "{ttl} ms");
}

/// With Redis gone and `on_error = local`, a node decides with its own share of the limit and applies the
/// penalty itself: a key that offends on this node is blocked here, with the penalty's length.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_on_error_local_a_node_applies_its_own_penalty() {
    let mut server = RedisServer::start();
    let node = server
        .builder()
        .on_error(OnError::Local)
        .deadline(Duration::from_millis(200))
        .build()
        .unwrap();
    let rule = login();
    assert!(node.check(&rule, "warm").await.allowed);
    server.kill();
    let first = node.check(&rule, "mallory").await;
    assert_eq!(
        (first.allowed, first.verdict),
        (true, Verdict::DegradedLocal)
    );
    // Decided here (a degraded verdict), blocked for the penalty's length, not the window's.
    let offence = node.check(&rule, "mallory").await;
    assert_eq!(
        (offence.allowed, offence.verdict, offence.degraded),
        (false, Verdict::DegradedLocal, true),
        "{offence:?}"
    );
    assert_eq!(offence.retry_after, 600 * SECOND);
    let again = node.check(&rule, "mallory").await;
    assert!(
        !again.allowed && again.retry_after > 590 * SECOND,
        "{again:?}"
    );
    assert!(node.check(&rule, "alice").await.allowed);
}
