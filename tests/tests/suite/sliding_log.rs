//! The sliding-window log: the same behaviour in memory and in Redis, then what it leaves in Redis.
//!
//! The shared cases run twice: against the in-memory store with a fake clock, and against a real
//! `redis-server` with "now" passed in from the same kind of fake clock, so neither ever sleeps.

use std::time::Duration;

use futures::future::join_all;
use limiter_runtime::{FakeClock, Limiter, Rule};
use tests::RedisServer;

/// A limiter on one store, the clock it reads, and the server it may need.
struct Store {
    limiter: Limiter,
    clock: FakeClock,
    _server: Option<RedisServer>,
}

fn memory() -> Store {
    let clock = FakeClock::new();
    Store {
        limiter: Limiter::builder().clock(clock.clone()).build().unwrap(),
        clock,
        _server: None,
    }
}

fn redis() -> Store {
    let server = RedisServer::start();
    let clock = FakeClock::new();
    Store {
        limiter: server.limiter_with_clock(&clock),
        clock,
        _server: Some(server),
    }
}

fn rule(max: u64, window_secs: u64) -> Rule {
    Rule::new()
        .max(max)
        .window(Duration::from_secs(window_secs))
}

const SECOND: Duration = Duration::from_secs(1);

/// Defines each case once and runs it against both stores.
macro_rules! on_both_stores {
    ($(async fn $name:ident($store:ident) $body:block)*) => {
        mod in_memory {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let $store = super::memory();
                $body
            })*
        }
        mod on_redis {
            use super::*;
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let $store = super::redis();
                $body
            })*
        }
    };
}

on_both_stores! {
    async fn admits_max_then_rejects_with_exact_retry_after(store) {
        let rule = rule(5, 10);
        for remaining in (0..5).rev() {
            let decision = store.limiter.check(&rule, "1001").await;
            assert!(decision.allowed);
            assert_eq!((decision.limit, decision.remaining), (5, remaining));
            assert!(!decision.degraded);
            store.clock.advance(SECOND);
        }
        let denied = store.limiter.check(&rule, "1001").await;
        assert!(!denied.allowed);
        assert_eq!(denied.remaining, 0);
        // The first admission (5 s ago) leaves the window in 5 s; the last (1 s ago) in 9 s.
        assert_eq!(denied.retry_after, 5 * SECOND);
        assert_eq!(denied.reset_after, 9 * SECOND);

        store.clock.advance(denied.retry_after - Duration::from_micros(1));
        assert!(!store.limiter.check(&rule, "1001").await.allowed);
        store.clock.advance(Duration::from_micros(1));
        assert!(store.limiter.check(&rule, "1001").await.allowed);
    }

    async fn admits_again_once_the_window_has_passed(store) {
        let rule = rule(3, 10);
        for _ in 0..3 {
            assert!(store.limiter.check(&rule, "k").await.allowed);
        }
        assert!(!store.limiter.check(&rule, "k").await.allowed);
        store.clock.advance(10 * SECOND);
        for _ in 0..3 {
            assert!(store.limiter.check(&rule, "k").await.allowed);
        }
        assert!(!store.limiter.check(&rule, "k").await.allowed);
    }

    async fn the_window_slides(store) {
        // Admissions at 0 s and 6 s; at 10 s the first has left, the second has not.
        let rule = rule(2, 10);
        assert!(store.limiter.check(&rule, "k").await.allowed);
        store.clock.advance(6 * SECOND);
        assert!(store.limiter.check(&rule, "k").await.allowed);
        store.clock.advance(4 * SECOND);
        assert!(store.limiter.check(&rule, "k").await.allowed);
        let denied = store.limiter.check(&rule, "k").await;
        assert!(!denied.allowed);
        assert_eq!(denied.retry_after, 6 * SECOND);
    }

    async fn two_keys_never_interfere(store) {
        let rule = rule(2, 10);
        for _ in 0..2 {
            assert!(store.limiter.check(&rule, "alice").await.allowed);
        }
        assert!(!store.limiter.check(&rule, "alice").await.allowed);
        let bob = store.limiter.check(&rule, "bob").await;
        assert!(bob.allowed);
        assert_eq!(bob.remaining, 1);
        // Same key, another prefix: another limit.
        let other = rule.clone().prefix("other:");
        assert!(store.limiter.check(&other, "alice").await.allowed);
    }

    async fn concurrent_calls_in_the_same_microsecond_admit_exactly_max(store) {
        // The fake clock does not move: all 500 calls share one timestamp.
        let rule = rule(50, 60);
        let decisions = join_all((0..500).map(|_| {
            let limiter = store.limiter.clone();
            let rule = rule.clone();
            tokio::spawn(async move { limiter.check(&rule, "hot").await })
        }))
        .await;
        let admitted = decisions.into_iter().filter(|d| d.as_ref().unwrap().allowed).count();
        assert_eq!(admitted, 50);
    }

    async fn odd_keys_work_and_stay_distinct(store) {
        let long = "x".repeat(10 * 1024);
        let long_neighbour = format!("{}y", "x".repeat(10 * 1024 - 1));
        let keys = [
            "a b", "a", "b", "{a}", "{a}b", "a\nb", "a\r\nb", "}{", "", " ", "ключ", "🦀",
            long.as_str(), long_neighbour.as_str(), &long[1..],
        ];
        let rule = rule(1, 60);
        for key in keys {
            assert!(store.limiter.check(&rule, key).await.allowed, "first call for {:.20?}", key);
        }
        for key in keys {
            assert!(!store.limiter.check(&rule, key).await.allowed, "second call for {:.20?}", key);
        }
    }

    async fn a_cost_above_the_limit_is_rejected_not_looped(store) {
        let decision = store.limiter.check(&rule(5, 10), "k").cost(6).await;
        assert!(!decision.allowed);
        assert_eq!(decision.remaining, 5);
    }
}

/// What the Redis store leaves in Redis.
mod in_redis {
    use super::*;
    use ::redis::Commands;

    #[tokio::test]
    async fn one_key_per_limit_holding_at_most_max_members_with_a_ttl() {
        let server = RedisServer::start();
        let limiter = server.limiter();
        let rule = rule(5, 10).prefix("rate_limit:emp:");
        for _ in 0..7 {
            limiter.check(&rule, "1001").await;
        }
        let mut redis = server.connection();
        let keys = server.limit_keys();
        assert_eq!(keys, ["rate_limit:emp:1001"]);
        // One member per admitted call (and no "#": every call cost 1).
        assert_eq!(tests::logged_calls(&mut redis, "rate_limit:emp:1001"), 5);
        let ttl: i64 = redis.pttl("rate_limit:emp:1001").unwrap();
        assert!(0 < ttl && ttl <= 10_000, "TTL {ttl} ms");
    }

    /// Keys the previous version wrote (members "<nonce>:1", and "#" always, marked with 2^52 while heavier
    /// calls may be among them) read right while an upgrade has them in flight: their units count, heavier
    /// members weigh their cost as they leave, a charge made on them is given back exactly, and "#" goes once
    /// no heavier call is left, so that the key is the light log from then on.
    #[tokio::test]
    async fn keys_the_previous_version_wrote_read_right() {
        const HEAVY: i64 = 1 << 52;
        let server = RedisServer::start();
        let clock = FakeClock::starting_at(Duration::from_secs(1_000_000));
        let limiter = server.limiter_with_clock(&clock);
        let mut redis = server.connection();
        let now: i64 = 1_000_000 * 1_000_000;
        let rule = rule(10, 10);
        let score = |key: &str, member: &str, redis: &mut ::redis::Connection| -> Option<f64> {
            redis.zscore(key, member).unwrap()
        };

        // A heavier call of 3 two seconds ago, one of cost 1 a second ago: 4 units, "#" marked.
        let heavy = "rate_limit:heavy";
        let _: () = ::redis::cmd("ZADD")
            .arg(heavy)
            .arg(now - 2_000_000)
            .arg("00000000000000b1*3")
            .arg(now - 1_000_000)
            .arg("00000000000000a1:1")
            .arg(-4 - HEAVY)
            .arg("#")
            .query(&mut redis)
            .unwrap();
        let decision = limiter.check(&rule, "heavy").await;
        assert!(decision.allowed);
        assert_eq!(decision.remaining, 10 - 4 - 1);
        // Reserved and given back whole: as if it had never been charged.
        let estimate = limiter.estimate(&rule, "heavy").cost(2).await.unwrap();
        assert_eq!(estimate.decision().remaining, 10 - 5 - 2);
        estimate.settle(0).await;
        assert_eq!(score(heavy, "#", &mut redis), Some((-5 - HEAVY) as f64));
        // Once the heavier call has left the window (its 3 units with it), "#" goes.
        clock.advance(Duration::from_millis(8_500));
        let decision = limiter.check(&rule, "heavy").await;
        assert_eq!(decision.remaining, 10 - 2 - 1);
        assert_eq!(score(heavy, "#", &mut redis), None);
        assert_eq!(tests::logged_calls(&mut redis, heavy), 3);

        // No heavier call: "#" is the count, and goes at the first call.
        let light = "rate_limit:light";
        let _: () = ::redis::cmd("ZADD")
            .arg(light)
            .arg(now - 1_000_000)
            .arg("00000000000000c1:1")
            .arg(now - 500_000)
            .arg("00000000000000c2:1")
            .arg(-2)
            .arg("#")
            .query(&mut redis)
            .unwrap();
        let decision = limiter.check(&rule, "light").await;
        assert_eq!(decision.remaining, 10 - 2 - 1);
        assert_eq!(score(light, "#", &mut redis), None);
        assert_eq!(tests::logged_calls(&mut redis, light), 3);
        for _ in 0..7 {
            assert!(limiter.check(&rule, "light").await.allowed);
        }
        let refused = limiter.check(&rule, "light").await;
        assert!(!refused.allowed);
        // The oldest, the previous version's, leaves first.
        assert_eq!(refused.retry_after, Duration::from_millis(500));
    }

    #[tokio::test]
    async fn members_are_unique_within_one_microsecond() {
        let server = RedisServer::start();
        let clock = FakeClock::new();
        let limiter = server.limiter_with_clock(&clock);
        for _ in 0..20 {
            assert!(limiter.check(&rule(20, 10), "k").await.allowed);
        }
        let members = tests::logged_calls(&mut server.connection(), "rate_limit:k");
        assert_eq!(members, 20);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_calls_on_redis_time_admit_exactly_max() {
        let server = RedisServer::start();
        let limiter = server.limiter();
        let rule = rule(50, 60);
        let decisions = join_all((0..500).map(|_| {
            let (limiter, rule) = (limiter.clone(), rule.clone());
            tokio::spawn(async move { limiter.check(&rule, "hot").await })
        }))
        .await;
        let decisions: Vec<_> = decisions.into_iter().map(Result::unwrap).collect();
        assert!(decisions.iter().all(|d| !d.degraded));
        assert_eq!(decisions.iter().filter(|d| d.allowed).count(), 50);
    }

    #[tokio::test]
    async fn redis_time_windows_expire_and_keys_leave_nothing_behind() {
        let server = RedisServer::start();
        let limiter = server.limiter();
        let rule = Rule::new().max(3).window(Duration::from_millis(300));
        for _ in 0..3 {
            assert!(limiter.check(&rule, "k").await.allowed);
        }
        let denied = limiter.check(&rule, "k").await;
        assert!(!denied.allowed);
        assert!(denied.retry_after <= Duration::from_millis(300));
        tokio::time::sleep(denied.retry_after + Duration::from_millis(5)).await;
        assert!(limiter.check(&rule, "k").await.allowed);

        tokio::time::sleep(Duration::from_millis(400)).await;
        let keys = server.limit_keys();
        assert!(
            keys.is_empty(),
            "idle limits leave nothing behind: {keys:?}"
        );
    }

    #[tokio::test]
    async fn long_keys_are_bounded_in_redis() {
        let server = RedisServer::start();
        let limiter = server.limiter();
        limiter.check(&rule(1, 10), "x".repeat(10 * 1024)).await;
        let keys = server.limit_keys();
        assert_eq!(keys.len(), 1);
        assert!(keys[0].len() < 200, "{} bytes", keys[0].len());
    }

    #[tokio::test]
    async fn many_processes_share_one_count() {
        // Two limiters are two nodes: one global count.
        let server = RedisServer::start();
        let (a, b) = (server.limiter(), server.limiter());
        let rule = rule(4, 60);
        for _ in 0..2 {
            assert!(a.check(&rule, "k").await.allowed);
            assert!(b.check(&rule, "k").await.allowed);
        }
        assert!(!a.check(&rule, "k").await.allowed);
        assert!(!b.check(&rule, "k").await.allowed);
    }
}
