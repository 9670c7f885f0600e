//! Beyond one Redis: a real Redis Cluster (3 masters, 3 replicas) and a real Sentinel setup (master, replica,
//! three Sentinels), all on loopback. Every algorithm, the heartbeats and the switch work as on one server;
//! limits hold over keys spread across every slot; a killed master is failed over and decisions heal by
//! themselves (the new master has never seen the scripts: NOSCRIPT is the EVAL fallback's business, never a
//! failed decision); a share kept for critical calls holds on a cluster as on one server; a slot migrated under load (ASK, then MOVED) fails no decision and loses no count.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use limiter_runtime::{Decision, Limiter, Rule};
use tests::deployment::{behaves_like_one_server, evalsha_calls, with_heartbeats, KEYS};
use tests::logs::Captured;
use tests::priorities::a_flood_leaves_the_critical_share;
use tests::{RedisCluster, RedisSentinel, RedisServer};
use tracing::instrument::WithSubscriber;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_the_reference() {
    let server = RedisServer::start();
    let runtime = || with_heartbeats(Limiter::builder().redis(server.url()));
    let count = || evalsha_calls(&mut server.connection());
    behaves_like_one_server(&runtime(), &runtime(), count).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_behaves_like_one_server_with_limits_spread_over_every_master() {
    let cluster = RedisCluster::start();
    let runtime = || with_heartbeats(Limiter::builder().redis_cluster(cluster.seeds()));
    let count = || cluster.calls_everywhere("evalsha");
    let (a, b) = (runtime(), runtime());
    behaves_like_one_server(&a, &b, count).await;

    let keys = cluster.limit_keys();
    let masters: BTreeSet<u16> = keys.iter().map(|(port, _)| *port).collect();
    assert_eq!(masters.len(), 3, "limits live on every master: {keys:?}");
    // The algorithms' limits, the switch's and the override's: one key per limit.
    assert_eq!(keys.len(), 5 * KEYS + 2, "one key per limit");
    // Each limit is one key, on the master that owns its slot (KEYS on a node lists only its own keys).
    for (port, key) in &keys {
        assert_eq!(cluster.master_of_slot(cluster.slot(key)).port, *port);
    }

    // A share kept for the critical calls, decided in the same script call on the master of its key.
    a_flood_leaves_the_critical_share(&a, &b, "flood:").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinel_behaves_like_one_server() {
    let sentinel = RedisSentinel::start();
    let runtime = || {
        with_heartbeats(
            Limiter::builder()
                .redis_sentinel(tests::sentinel::MASTER_NAME, sentinel.sentinel_urls()),
        )
    };
    let master = sentinel.master_port();
    let count = || evalsha_calls(&mut sentinel.server(master));
    behaves_like_one_server(&runtime(), &runtime(), count).await;
}

/// A limiter that gives up quickly, so a failover is crossed in degraded mode and then healed.
fn quick(builder: limiter_runtime::LimiterBuilder) -> Limiter {
    builder
        .deadline(Duration::from_millis(250))
        .breaker(3, Duration::from_millis(100))
        .build()
        .unwrap()
}

/// Calls every key until each is decided in Redis again; how long that took.
async fn until_every_key_is_decided(limiter: &Limiter, rule: &Rule, keys: &[String]) -> Duration {
    let started = Instant::now();
    loop {
        let mut healed = true;
        for key in keys {
            healed &= !limiter.check(rule, key).await.degraded;
        }
        if healed {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "still degraded 20 s after the failover began"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_cluster_master_is_failed_over_and_decisions_heal_with_no_noscript() {
    let mut cluster = RedisCluster::start();
    let logs = Captured::default();
    async {
        let limiter = quick(Limiter::builder().redis_cluster(cluster.seeds()));
        let rule = Rule::new().max(1_000).window(Duration::from_secs(60));
        let keys: Vec<String> = (0..30).map(|i| format!("user{i}")).collect();
        for key in &keys {
            assert!(!limiter.check(&rule, key).await.degraded);
        }

        let victim = cluster.master_of_slot(cluster.slot("rate_limit:user0"));
        let replica = cluster
            .members()
            .into_iter()
            .find(|m| m.master_id.as_deref() == Some(victim.id.as_str()))
            .expect("every master has a replica");
        assert_eq!(cluster.calls(replica.port, "eval"), 0);
        // The victim's keys, and their counts, on the replica before the kill (replication is asynchronous).
        let victims: Vec<String> = keys
            .iter()
            .map(|key| format!("rate_limit:{key}"))
            .filter(|key| {
                victim
                    .slots
                    .iter()
                    .any(|&(a, b)| (a..=b).contains(&cluster.slot(key)))
            })
            .collect();
        assert!(!victims.is_empty());
        let synced: i64 = cluster
            .command(victim.port, redis::cmd("WAIT").arg(1).arg(5_000))
            .unwrap();
        assert_eq!(synced, 1, "the replica acknowledged the victim's writes");
        cluster.kill(victim.port);

        let healed = until_every_key_is_decided(&limiter, &rule, &keys).await;
        eprintln!("every key decided in Redis again {healed:?} after the master was killed");
        let promoted = cluster.master_of_slot(cluster.slot("rate_limit:user0"));
        assert_eq!(promoted.port, replica.port, "the replica took over");
        assert!(
            cluster.calls(replica.port, "eval") > 0,
            "the new master had no script: NOSCRIPT, then EVAL, loaded it"
        );
        // From now on, every decision is made in Redis, and the counts that reached the replica are kept: each
        // of the victim's keys still holds its first call (besides those made since).
        for key in &victims {
            let members: u64 = cluster
                .command(
                    replica.port,
                    redis::cmd("ZCOUNT").arg(key).arg("-inf").arg("+inf"),
                )
                .unwrap();
            assert!(
                members >= 1,
                "{key}: the count made before the failover was lost"
            );
        }
        for key in &keys {
            let decision = limiter.check(&rule, key).await;
            assert!(!decision.degraded && decision.allowed);
            assert!(
                decision.remaining < 999,
                "{key}: its first call is still counted: {decision:?}"
            );
        }
        cluster.wait_until_healthy(Duration::from_secs(10));
    }
    .with_subscriber(logs.subscriber())
    .await;
    let text = logs.text();
    assert!(
        !text.contains("NOSCRIPT") && !text.contains("NoScript"),
        "no decision failed for NOSCRIPT:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_sentinel_master_is_failed_over_and_decisions_heal_with_no_noscript() {
    let mut sentinel = RedisSentinel::start();
    let logs = Captured::default();
    async {
        let limiter = quick(
            Limiter::builder()
                .redis_sentinel(tests::sentinel::MASTER_NAME, sentinel.sentinel_urls()),
        );
        let rule = Rule::new().max(1_000).window(Duration::from_secs(60));
        let keys = vec!["user".to_owned()];
        assert!(!limiter.check(&rule, "user").await.degraded);
        let old = sentinel.master_port();
        sentinel.kill(old);

        let healed = until_every_key_is_decided(&limiter, &rule, &keys).await;
        eprintln!("decided in Redis again {healed:?} after the master was killed");
        let new = sentinel.master_port();
        assert_ne!(new, old, "the Sentinels promoted the replica");
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(&mut sentinel.server(new))
            .unwrap();
        assert!(
            stats.contains("cmdstat_eval:"),
            "the new master had no script: NOSCRIPT, then EVAL, loaded it"
        );
    }
    .with_subscriber(logs.subscriber())
    .await;
    let text = logs.text();
    assert!(
        !text.contains("NOSCRIPT") && !text.contains("NoScript"),
        "no decision failed for NOSCRIPT:\n{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_migrated_under_load_fails_no_decision_and_loses_no_count() {
    let cluster = RedisCluster::start();
    let limiter = cluster.limiter();
    // One hash tag: every key of this test lives in one slot, the one that moves.
    let rule = Rule::new()
        .max(40)
        .window(Duration::from_secs(3_600))
        .prefix("mig:{hot}:");
    let slot = cluster.slot("mig:{hot}:a");
    let source = cluster.master_of_slot(slot);
    let target = cluster
        .masters()
        .into_iter()
        .find(|m| m.port != source.port)
        .unwrap();
    for _ in 0..10 {
        assert!(limiter.check(&rule, "a").await.allowed);
    }

    // Load: four tasks call on keys a..d (a already has 10) until told to stop.
    let running = Arc::new(AtomicBool::new(true));
    let load: Vec<_> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|key| {
            let (limiter, rule, running) = (limiter.clone(), rule.clone(), running.clone());
            tokio::spawn(async move {
                let mut decisions: Vec<Decision> = Vec::new();
                while running.load(Ordering::Relaxed) {
                    decisions.push(limiter.check(&rule, key).await);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                (key, decisions)
            })
        })
        .collect();

    let migration = {
        let (source, target) = (source.clone(), target.clone());
        // Target first, then source, then the others: the order CLUSTER SETSLOT's documentation asks for.
        let mut masters = cluster.masters();
        masters.sort_by_key(|m| (m.port != target.port, m.port != source.port));
        tokio::task::spawn_blocking(move || {
            let node = |port: u16| {
                redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                    .unwrap()
                    .get_connection()
                    .unwrap()
            };
            let setslot = |port: u16, state: &str, id: &str| {
                let _: () = redis::cmd("CLUSTER")
                    .arg("SETSLOT")
                    .arg(slot)
                    .arg(state)
                    .arg(id)
                    .query(&mut node(port))
                    .unwrap();
            };
            std::thread::sleep(Duration::from_millis(150));
            setslot(target.port, "IMPORTING", &source.id);
            setslot(source.port, "MIGRATING", &target.id);
            // New keys of the slot are now created on the target (ASK); then the old ones move, one by one.
            std::thread::sleep(Duration::from_millis(200));
            let mut asked = false;
            loop {
                let keys: Vec<String> = redis::cmd("CLUSTER")
                    .arg("GETKEYSINSLOT")
                    .arg(slot)
                    .arg(1)
                    .query(&mut node(source.port))
                    .unwrap();
                let Some(key) = keys.first() else { break };
                let _: () = redis::cmd("MIGRATE")
                    .arg("127.0.0.1")
                    .arg(target.port)
                    .arg(key)
                    .arg(0)
                    .arg(5_000)
                    .query(&mut node(source.port))
                    .unwrap();
                // A moved key is now answered with ASK by the source.
                let reply: redis::RedisResult<i64> =
                    redis::cmd("EXISTS").arg(key).query(&mut node(source.port));
                asked |= reply.is_err_and(|e| e.code() == Some("ASK"));
                std::thread::sleep(Duration::from_millis(100));
            }
            std::thread::sleep(Duration::from_millis(200));
            for master in masters {
                setslot(master.port, "NODE", &target.id);
            }
            // Every node now answers MOVED for the slot, but the target.
            let reply: redis::RedisResult<i64> = redis::cmd("EXISTS")
                .arg("mig:{hot}:a")
                .query(&mut node(source.port));
            let moved = reply.is_err_and(|e| e.code() == Some("MOVED"));
            std::thread::sleep(Duration::from_millis(300));
            (asked, moved)
        })
    };
    let (asked, moved) = migration.await.unwrap();
    running.store(false, Ordering::Relaxed);
    assert!(asked && moved, "the source answered ASK, then MOVED");
    assert!(
        cluster.calls(target.port, "asking") > 0,
        "the limiter followed ASK redirections"
    );

    for task in load {
        let (key, decisions) = task.await.unwrap();
        assert!(
            decisions.iter().all(|d| !d.degraded),
            "{key}: a decision failed during the migration"
        );
        let admitted = decisions.iter().filter(|d| d.allowed).count();
        let earlier = if key == "a" { 10 } else { 0 };
        assert_eq!(
            admitted + earlier,
            40.min(decisions.len() + earlier),
            "{key}: every count survived the move ({} calls)",
            decisions.len()
        );
    }
    // The counts live on the target now, and still hold.
    assert_eq!(cluster.master_of_slot(slot).port, target.port);
    let decision = limiter.check(&rule, "a").await;
    assert!(!decision.allowed && !decision.degraded);
}

#[test]
fn a_cluster_or_sentinel_setup_that_cannot_work_is_an_error_at_build() {
    let no_seed: [&str; 0] = [];
    let error = Limiter::builder()
        .redis_cluster(no_seed)
        .build()
        .unwrap_err();
    assert!(matches!(
        error,
        limiter_runtime::Error::InvalidRedisSetup(_)
    ));
    assert_eq!(
        error.to_string(),
        "Redis Cluster needs at least one node URL to start from; none was given"
    );
    let error = Limiter::builder()
        .redis_cluster(["redis://127.0.0.1:7000/", "nope://x"])
        .build()
        .unwrap_err();
    assert!(
        matches!(&error, limiter_runtime::Error::InvalidRedisUrl { url, .. } if url == "nope://x"),
        "{error}"
    );
    let error = Limiter::builder()
        .redis_sentinel("", ["redis://127.0.0.1:26379/"])
        .build()
        .unwrap_err();
    assert!(matches!(
        error,
        limiter_runtime::Error::InvalidRedisSetup(_)
    ));
    let error = Limiter::builder()
        .redis_sentinel("mymaster", no_seed)
        .build()
        .unwrap_err();
    assert!(error
        .to_string()
        .starts_with("Redis Sentinel needs at least one node URL"));
    // Building connects to nothing.
    assert!(Limiter::builder()
        .redis_cluster(["redis://127.0.0.1:1/"])
        .build()
        .is_ok());
}
