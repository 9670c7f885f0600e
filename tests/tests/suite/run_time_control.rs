//! Run-time control against a real Redis: overrides and the switch reach every runtime within a second
//! without costing a decision any round trip; defaults resolve by module; shadow mode counts but never
//! rejects.

use std::time::{Duration, Instant};

use limiter_runtime::{rate_limit, Error, Limiter, Override, RateLimited, Rule};
use redis::Commands;
use tests::RedisServer;

async fn admitted(limiter: &Limiter, rule: &Rule, key: &str, calls: usize) -> usize {
    let mut admitted = 0;
    for _ in 0..calls {
        admitted += usize::from(limiter.check(rule, key).await.allowed);
    }
    admitted
}

/// Waits until `seen` holds on `limiter`, and says how long it took.
async fn until(limiter: &Limiter, seen: impl Fn(&[Override]) -> bool) -> Duration {
    until_within(Duration::from_secs(5), limiter, seen).await
}

/// [`until`], failing after `bound`.
async fn until_within(
    bound: Duration,
    limiter: &Limiter,
    seen: impl Fn(&[Override]) -> bool,
) -> Duration {
    let started = Instant::now();
    while !seen(&limiter.overrides()) {
        assert!(
            started.elapsed() < bound,
            "not seen after {bound:?}: {:?}",
            limiter.overrides()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    started.elapsed()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_override_made_on_one_runtime_reaches_another_within_a_second() {
    let server = RedisServer::start();
    let (a, b) = (server.limiter(), server.limiter());
    let rule = Rule::new()
        .prefix("rate_limit:emp:")
        .max(5)
        .window(Duration::from_secs(60));
    // Both runtimes are running (their first decision starts the sync).
    assert!(a.check(&rule, "warm").await.allowed && b.check(&rule, "warm").await.allowed);
    tokio::time::sleep(Duration::from_millis(100)).await;

    a.set_override(Override::policy("rate_limit:emp:").max(2))
        .await
        .unwrap();
    let took = until(&b, |o| o.iter().any(|o| o.max_value() == Some(2))).await;
    assert!(
        took < Duration::from_secs(1),
        "the change reached the other runtime after {took:?}"
    );
    assert_eq!(admitted(&b, &rule, "1001", 5).await, 2);

    // One key of the prefix: its own limit, completed by the prefix's.
    a.set_override(Override::key("rate_limit:emp:", "vip").max(4))
        .await
        .unwrap();
    until(&b, |o| o.len() == 2).await;
    assert_eq!(admitted(&b, &rule, "vip", 6).await, 4);
    let decision = b.check(&rule, "1002").await;
    assert_eq!(decision.limit, 2);

    // Cleared: back to what the rule says.
    a.clear_override(&Override::policy("rate_limit:emp:"))
        .await
        .unwrap();
    a.clear_override(&Override::key("rate_limit:emp:", "vip"))
        .await
        .unwrap();
    until(&b, |o| o.is_empty()).await;
    assert_eq!(b.check(&rule, "1003").await.limit, 5);

    // The overrides live in Redis: a runtime started later finds them.
    a.set_override(
        Override::policy("rate_limit:emp:")
            .window(Duration::from_secs(1))
            .max(1),
    )
    .await
    .unwrap();
    let late = server.limiter();
    late.check(&rule, "warm-late").await;
    until(&late, |o| o.len() == 1).await;
    let decision = late.check(&rule, "1004").await;
    assert_eq!(decision.limit, 1);
    assert!(!late.check(&rule, "1004").await.allowed);
    tokio::time::sleep(Duration::from_millis(1_050)).await;
    assert!(
        late.check(&rule, "1004").await.allowed,
        "the overridden window applies"
    );
}

/// Writes an override into the hash and counts it in the version, as the operators' script does, but
/// announces nothing: a change whose message was lost.
fn change_without_announcing(server: &RedisServer, prefix: &str, key: &str, max: u64) {
    let mut redis = server.connection();
    let field = format!("k:{}:{prefix}{key}", prefix.len());
    let _: () = redis
        .hset("limiter:overrides", field, format!("max={max}"))
        .unwrap();
    let _: u64 = redis.hincr("limiter:overrides", "version", 1).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_arrive_as_themselves_and_a_missed_one_is_caught_up() {
    let server = RedisServer::start();
    let (a, b) = (server.limiter(), server.limiter());
    let rule = Rule::new()
        .prefix("plan:")
        .max(5)
        .window(Duration::from_secs(60));
    assert!(a.check(&rule, "warm").await.allowed && b.check(&rule, "warm").await.allowed);
    tokio::time::sleep(Duration::from_millis(100)).await;

    // Each change reaches the other runtime as itself: none makes it read the whole table again.
    let reloads = server.calls("hgetall");
    for customer in 0..200_u64 {
        a.set_override(Override::key("plan:", customer).max(customer + 1))
            .await
            .unwrap();
    }
    until(&b, |o| o.len() == 200).await;
    assert_eq!(b.stats().overrides, 200);
    assert_eq!(
        server.calls("hgetall") - reloads,
        0,
        "a runtime reloaded the table for a change it was told of"
    );
    assert_eq!(b.check(&rule, "199").await.limit, 200);

    // A change whose announcement was lost: the next one's version shows the gap, and the runtime reloads.
    change_without_announcing(&server, "plan:", "lost", 1);
    a.set_override(Override::key("plan:", "next").max(2))
        .await
        .unwrap();
    for target in [&b, &a] {
        let took = until(target, |o| {
            o.iter().any(|o| o.target_key() == Some("lost"))
                && o.iter().any(|o| o.target_key() == Some("next"))
        })
        .await;
        assert!(took < Duration::from_secs(1), "caught up after {took:?}");
    }
    assert_eq!(b.check(&rule, "lost").await.limit, 1);

    // A lost change with none after it: the periodic look at the version finds it.
    change_without_announcing(&server, "plan:", "quiet", 3);
    until_within(Duration::from_secs(8), &b, |o| {
        o.iter().any(|o| o.target_key() == Some("quiet"))
    })
    .await;
    assert_eq!(b.check(&rule, "quiet").await.limit, 3);
    assert_eq!(b.stats().overrides, 203);
}

/// A limit of zero, or a window of zero, is refused by every path that could set one: the plain API refuses
/// it with a typed error, in memory and with Redis; written into the hash by hand (or by an older runtime)
/// and announced, every runtime ignores it, the one running and one started later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_override_of_zero_is_refused_by_every_path() {
    let server = RedisServer::start();
    let rule = Rule::new().prefix("zero:").max(5);
    let (memory, redis) = (Limiter::in_memory(), server.limiter());
    for limiter in [&memory, &redis] {
        for zero in [
            Override::policy("zero:").max(0),
            Override::key("zero:", "k")
                .max(0)
                .window(Duration::from_secs(1)),
            Override::policy("zero:").window(Duration::ZERO),
            Override::key("zero:", "k").window(Duration::from_nanos(500)),
        ] {
            let error = limiter.set_override(zero.clone()).await.unwrap_err();
            assert!(matches!(error, Error::InvalidOverride { .. }), "{error:?}");
            assert!(error.to_string().contains(r#"prefix "zero:""#), "{error}");
        }
        assert!(limiter.overrides().is_empty(), "{:?}", limiter.overrides());
        assert!(limiter.check(&rule, "k").await.allowed);
    }

    let running = server.limiter();
    assert!(running.check(&rule, "warm").await.allowed);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut connection = server.connection();
    let field = "k:5:zero:k";
    let _: () = connection
        .hset("limiter:overrides", field, "max=0")
        .unwrap();
    let version: u64 = connection.hincr("limiter:overrides", "version", 1).unwrap();
    let announcement = format!("{version}\nset\nmax=0\n{field}");
    let _: () = connection
        .publish("limiter:overrides", announcement)
        .unwrap();
    redis
        .set_override(Override::key("zero:", "ok").max(2))
        .await
        .unwrap();
    let late = server.limiter();
    late.check(&rule, "warm").await;
    for runtime in [&running, &late] {
        until(runtime, |o| o.iter().any(|o| o.target_key() == Some("ok"))).await;
        assert_eq!(runtime.overrides().len(), 1, "{:?}", runtime.overrides());
        let decision = runtime.check(&rule, "k").await;
        assert!(decision.allowed && decision.limit == 5, "{decision:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switch_of_every_runtime_reaches_each_within_a_second() {
    let server = RedisServer::start();
    let (a, b) = (server.limiter(), server.limiter());
    let rule = Rule::new()
        .prefix("switch:")
        .max(1)
        .window(Duration::from_secs(60));
    assert!(a.check(&rule, "warm").await.allowed && b.check(&rule, "other").await.allowed);
    tokio::time::sleep(Duration::from_millis(100)).await;

    a.set_enabled(false).await.unwrap();
    assert!(!a.is_enabled(), "the runtime that turned it is off at once");
    let started = Instant::now();
    while b.is_enabled() {
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "not off after 1 s"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let before = server.calls("evalsha");
    for runtime in [&a, &b] {
        assert_eq!(admitted(runtime, &rule, "k", 5).await, 5);
    }
    assert_eq!(server.calls("evalsha"), before, "no decision reached Redis");

    // Kept in Redis: a runtime started later finds it off.
    let late = server.limiter();
    late.check(&rule, "late").await;
    let started = Instant::now();
    while late.is_enabled() {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the late runtime is still on"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }

    // This runtime's own switch: off here while every runtime's is on again, and only here.
    b.set_enabled(true).await.unwrap();
    a.set_enabled_here(false);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!a.is_enabled() && b.is_enabled() && late.is_enabled());
    assert_eq!(admitted(&a, &rule, "k", 3).await, 3);
    assert_eq!(admitted(&b, &rule, "k", 3).await, 1);
    a.set_enabled_here(true);
    assert!(!a.check(&rule, "k").await.allowed, "one count again");
}

#[tokio::test]
async fn a_decision_costs_one_round_trip_whatever_the_overrides() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new().prefix("api:").max(1_000);
    limiter.check(&rule, "warm").await;
    limiter
        .set_override(Override::policy("api:").max(500))
        .await
        .unwrap();
    limiter
        .set_override(Override::key("api:", "k").max(400))
        .await
        .unwrap();

    let (evalsha, reads) = (
        server.calls("evalsha"),
        server.calls("hgetall") + server.calls("hget"),
    );
    for _ in 0..200 {
        assert_eq!(limiter.check(&rule, "k").await.limit, 400);
    }
    assert_eq!(
        server.calls("evalsha") - evalsha,
        200,
        "one script call per decision"
    );
    let more_reads = server.calls("hgetall") + server.calls("hget") - reads;
    assert!(
        more_reads <= 2,
        "{more_reads} override reads during 200 decisions: none should be per decision"
    );
}

mod billing {
    use super::*;

    #[rate_limit]
    pub async fn pay() -> Result<(), RateLimited> {
        Ok(())
    }

    #[rate_limit(max = 3)]
    pub async fn refund() -> Result<(), RateLimited> {
        Ok(())
    }

    pub mod invoices {
        use super::*;

        #[rate_limit]
        pub async fn send() -> Result<(), RateLimited> {
            Ok(())
        }
    }
}

#[rate_limit]
async fn elsewhere() -> Result<(), RateLimited> {
    Ok(())
}

async fn admitted_calls<F: std::future::Future<Output = Result<(), RateLimited>>>(
    call: impl Fn() -> F,
) -> usize {
    let mut admitted = 0;
    for _ in 0..10 {
        admitted += usize::from(call().await.is_ok());
    }
    admitted
}

#[tokio::test]
async fn defaults_resolve_by_the_longest_module_path_and_the_attribute_wins() {
    let server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .max(4)
        .defaults_for(
            concat!(module_path!(), "::billing"),
            Rule::new().max(2).prefix("billing:"),
        )
        .defaults_for(
            concat!(module_path!(), "::billing::invoices"),
            Rule::new().max(1),
        )
        .build()
        .unwrap();
    limiter
        .scope(async {
            assert_eq!(admitted_calls(billing::pay).await, 2, "module default");
            assert_eq!(
                admitted_calls(billing::refund).await,
                3,
                "the attribute wins"
            );
            assert_eq!(
                admitted_calls(billing::invoices::send).await,
                1,
                "the innermost module wins"
            );
            assert_eq!(admitted_calls(elsewhere).await, 4, "crate-wide default");
        })
        .await;
    let mut keys = server.limit_keys();
    keys.sort();
    assert_eq!(
        keys,
        [
            "billing:suite%3A%3Arun_time_control%3A%3Abilling%3A%3Ainvoices%3A%3Asend",
            "billing:suite%3A%3Arun_time_control%3A%3Abilling%3A%3Apay",
            "billing:suite%3A%3Arun_time_control%3A%3Abilling%3A%3Arefund",
            "rate_limit:suite%3A%3Arun_time_control%3A%3Aelsewhere",
        ],
        "the invoices module inherits the billing prefix it does not set (each path escaped as any key)"
    );

    // An override wins over everything.
    limiter
        .set_override(Override::policy("billing:").max(6))
        .await
        .unwrap();
    limiter
        .scope(async { assert_eq!(admitted_calls(billing::invoices::send).await, 5) })
        .await;
}

#[rate_limit(max = 2, shadow = true, prefix = "new_limit:")]
async fn rolled_out() -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::test]
async fn shadow_mode_counts_in_redis_but_never_rejects() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    limiter
        .scope(async {
            for _ in 0..5 {
                assert!(rolled_out().await.is_ok());
            }
        })
        .await;
    assert_eq!(
        limiter.stats().shadowed,
        3,
        "three calls would have been limited"
    );
    let counted = tests::logged_calls(
        &mut server.connection(),
        "new_limit:suite%3A%3Arun_time_control%3A%3Arolled_out",
    );
    assert_eq!(counted, 2);
}

/// An override names its policy as bans and inspection do, by its name: resolved to the policy's prefix,
/// here from the report of the node that decided under it (this one never has), and its key escaped under
/// that prefix. A name no node knows is taken as a prefix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_override_names_its_policy_by_name_from_any_node() {
    let server = RedisServer::start();
    let (a, b) = (server.limiter(), server.limiter());
    let rule = Rule::new()
        .prefix("rate_limit:emp:")
        .policy("employees")
        .max(5)
        .window(Duration::from_secs(60));
    assert!(a.check(&rule, "warm").await.allowed);
    // b has decided nothing under it: it learns the name from a's report, written by a's heartbeat.
    let started = Instant::now();
    while !b
        .overview()
        .await
        .policies
        .iter()
        .any(|p| p.policy == "employees")
    {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a's report never came"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.set_override(Override::key("employees", "team:7").max(1))
        .await
        .unwrap();
    let aimed = |o: &[Override]| {
        o.iter()
            .any(|o| o.target_prefix() == "rate_limit:emp:" && o.max_value() == Some(1))
    };
    until(&a, aimed).await;
    assert_eq!(
        admitted(&a, &rule, "team:7", 3).await,
        1,
        "the key's override is in force"
    );
    assert_eq!(
        admitted(&a, &rule, "team:8", 3).await,
        3,
        "another key is not"
    );
    b.clear_override(&Override::key("employees", "team:7"))
        .await
        .unwrap();
    until(&a, |o| o.is_empty()).await;
    // A name no node knows: a prefix, as before any call under it.
    b.set_override(Override::policy("later:").max(3))
        .await
        .unwrap();
    assert!(b.overrides().iter().any(|o| o.target_prefix() == "later:"));
}
