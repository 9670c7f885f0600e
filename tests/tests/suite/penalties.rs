//! Penalties: a key its limit refuses is blocked for a while, every call of it refused (counting nothing)
//! until the block ends, on every node; longer at each repeat offence, up to the cap, and forgiven after a
//! clean cap. The same in memory and on Redis, where the block is read and written by the call that counts.

use std::time::Duration;

use limiter_runtime::{Algorithm, FakeClock, Limiter, Penalty, Rule, Verdict};
use tests::{Monitor, RedisServer, ALGORITHMS};

const SECOND: Duration = Duration::from_secs(1);

/// Two nodes on one store and one clock: two limiters on Redis, or the one memory store twice.
fn nodes(server: Option<&RedisServer>, clock: &FakeClock) -> (Limiter, Limiter) {
    match server {
        Some(server) => (
            server.limiter_with_clock(clock),
            server.limiter_with_clock(clock),
        ),
        None => {
            let limiter = Limiter::builder().clock(clock.clone()).build().unwrap();
            (limiter.clone(), limiter)
        }
    }
}

/// A fixed penalty: the call over the limit starts a 10 s block; the other node refuses the key at its next
/// call, with what is left of the block, long after the window; then the key starts afresh, nothing having
/// been counted meanwhile.
async fn fixed_penalty_on_two_nodes(server: Option<&RedisServer>) {
    for algorithm in ALGORITHMS {
        let clock = FakeClock::new();
        let (a, b) = nodes(server, &clock);
        let rule = Rule::new()
            .prefix(format!("pen:fixed:{algorithm}:"))
            .algorithm(algorithm)
            .max(2)
            .window(SECOND)
            .penalty(Penalty::fixed(10 * SECOND));
        // Up to the limit (a leaky bucket admits the first call of a burst only), then over it.
        let mut offence = a.check(&rule, "k").await;
        assert!(offence.allowed, "{algorithm}");
        for _ in 0..2 {
            if offence.allowed {
                offence = a.check(&rule, "k").await;
            }
        }
        assert!(!offence.allowed, "{algorithm}");
        assert_eq!(offence.verdict, Verdict::Blocked, "{algorithm}");
        assert_eq!(offence.retry_after, 10 * SECOND, "{algorithm}");
        assert_eq!(offence.remaining, 0, "{algorithm}");
        // The window is long over; the block is not.
        clock.advance(3 * SECOND);
        for _ in 0..3 {
            let blocked = b.check(&rule, "k").await;
            assert_eq!(
                (blocked.allowed, blocked.verdict),
                (false, Verdict::Blocked),
                "{algorithm}"
            );
            assert_eq!(blocked.retry_after, 7 * SECOND, "{algorithm}");
        }
        assert!(b.check(&rule, "other").await.allowed, "{algorithm}");
        clock.advance(7 * SECOND);
        let free = b.check(&rule, "k").await;
        assert!(free.allowed, "{algorithm}: {free:?}");
        let fresh = b.check(&rule, "fresh").await;
        assert_eq!(
            free.remaining, fresh.remaining,
            "{algorithm}: nothing was counted during the block"
        );
    }
}

#[tokio::test]
async fn a_fixed_penalty_blocks_on_every_node_in_memory() {
    fixed_penalty_on_two_nodes(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_penalty_blocks_on_every_node_on_redis() {
    let server = RedisServer::start();
    fixed_penalty_on_two_nodes(Some(&server)).await;
}

/// `1s..4s`: blocks of 1, 2, 4 and 4 s at each repeat offence; clean for 4 s after the last block ended,
/// the key starts again at 1 s.
async fn escalation(server: Option<&RedisServer>) {
    for algorithm in ALGORITHMS {
        let clock = FakeClock::new();
        let (a, b) = nodes(server, &clock);
        let rule = Rule::new()
            .prefix(format!("pen:esc:{algorithm}:"))
            .algorithm(algorithm)
            .max(1)
            // A window that any algorithm admits again within the first block (a sliding window's estimate
            // takes up to two), so that the blocks' own lengths show.
            .window(SECOND / 4)
            .penalty(Penalty::escalating(SECOND, 4 * SECOND));
        let offend = async |node: &Limiter| {
            let admitted = node.check(&rule, "k").await;
            assert!(admitted.allowed, "{algorithm}: {admitted:?}");
            let offence = node.check(&rule, "k").await;
            assert_eq!(offence.verdict, Verdict::Blocked, "{algorithm}");
            offence.retry_after
        };
        let mut lengths = Vec::new();
        for i in 0..4 {
            // Offences from either node count alike.
            let node = if i % 2 == 0 { &a } else { &b };
            let length = offend(node).await;
            lengths.push(length.as_secs());
            // And a window, so that even the sliding window's estimate has forgotten the calls before.
            clock.advance(length + SECOND);
        }
        assert_eq!(lengths, [1, 2, 4, 4], "{algorithm}");
        // Back just short of the cap after the block ended: still a repeat offence.
        clock.advance(3 * SECOND - Duration::from_millis(1));
        assert_eq!(offend(&a).await, 4 * SECOND, "{algorithm}");
        // Clean for the cap since then: forgiven.
        clock.advance(4 * SECOND + 4 * SECOND);
        assert_eq!(offend(&b).await, SECOND, "{algorithm}");
    }
}

#[tokio::test]
async fn an_escalating_penalty_doubles_to_its_cap_then_decays_in_memory() {
    escalation(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalating_penalty_doubles_to_its_cap_then_decays_on_redis() {
    let server = RedisServer::start();
    escalation(Some(&server)).await;
}

/// A stacked call of which one key is blocked is refused, and charges the other limits nothing.
async fn stacked(server: Option<&RedisServer>) {
    let clock = FakeClock::new();
    let (a, b) = nodes(server, &clock);
    let login = Rule::new()
        .prefix("pen:stack:user:")
        .max(1)
        .window(60 * SECOND)
        .penalty(Penalty::fixed(90 * SECOND));
    let daily = Rule::new()
        .prefix("pen:stack:ip:")
        .algorithm(Algorithm::TokenBucket)
        .max(10)
        .window(60 * SECOND);
    let [user, ip] = a
        .all([(&login, "alice"), (&daily, "10.0.0.1")])
        .check()
        .await;
    assert!(user.allowed && ip.allowed);
    assert_eq!(ip.remaining, 9);
    let [user, ip] = b
        .all([(&login, "alice"), (&daily, "10.0.0.1")])
        .check()
        .await;
    assert_eq!((user.allowed, user.verdict), (false, Verdict::Blocked));
    assert_eq!(user.retry_after, 90 * SECOND);
    assert_eq!(ip.remaining, 9, "given back: the call was refused");
    for node in [&a, &b] {
        clock.advance(SECOND);
        let [user, ip] = node
            .all([(&login, "alice"), (&daily, "10.0.0.1")])
            .check()
            .await;
        assert_eq!(user.verdict, Verdict::Blocked);
        assert_eq!(ip.remaining, 9, "{ip:?}");
    }
    // Alone, the other limit has had all its room but the one call it admitted.
    let ip = a.check(&daily, "10.0.0.1").await;
    assert!(ip.allowed);
    assert_eq!(ip.remaining, 8);
}

#[tokio::test]
async fn a_stacked_call_with_a_blocked_key_charges_nothing_in_memory() {
    stacked(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stacked_call_with_a_blocked_key_charges_nothing_on_redis() {
    let server = RedisServer::start();
    stacked(Some(&server)).await;
}

/// Returns the body of the response `refused` answers for itself (`IntoResponse`), checking that it is plain
/// text.
async fn plain_text(refused: limiter_runtime::RateLimited) -> String {
    let response = axum::response::IntoResponse::into_response(refused);
    assert_eq!(response.status(), 429);
    let content_type = response.headers().get("content-type").unwrap();
    assert_eq!(content_type, "text/plain; charset=utf-8");
    let body = axum::body::to_bytes(response.into_body(), usize::MAX);
    String::from_utf8(body.await.unwrap().to_vec()).unwrap()
}

/// An operator's ban, on one node, is seen by the other at its next call, and told as a ban in the
/// response's text; listed with its remaining time; lifted, seen within a second.
async fn ban_and_unban(server: Option<&RedisServer>) {
    let clock = FakeClock::new();
    let (a, b) = nodes(server, &clock);
    let rule = Rule::new()
        .prefix("pen:ban:")
        .policy("logins")
        .max(5)
        .window(60 * SECOND)
        .penalty(Penalty::fixed(10 * SECOND));
    assert!(b.check(&rule, "mallory").await.allowed);
    a.ban(&rule, "mallory", 3600 * SECOND).await.unwrap();
    let refused = b.check(&rule, "mallory").await;
    assert_eq!(
        (refused.allowed, refused.verdict),
        (false, Verdict::Blocked)
    );
    assert_eq!(refused.retry_after, 3600 * SECOND);
    // As a plain-text response, the refusal names the policy, says the key is banned, and for how long.
    let banned = b.enforce(&rule, "mallory").await.unwrap_err();
    assert_eq!(
        plain_text(banned).await,
        "too many requests, please try again later. Banned by the policy \"logins\" for 3600 seconds."
    );
    // Another key, and the same key under another rule, are untouched.
    assert!(b.check(&rule, "alice").await.allowed);
    clock.advance(60 * SECOND);
    let bans = b.bans("logins").await.unwrap();
    assert_eq!(bans.len(), 1, "{bans:?}");
    assert_eq!((bans[0].key.as_str(), bans[0].banned), ("mallory", true));
    assert_eq!(bans[0].remaining, 3540 * SECOND);
    assert_eq!(b.bans("pen:ban:").await.unwrap(), bans);
    assert!(b.bans("other").await.unwrap().is_empty());
    let inspected = a.inspect(&rule, "mallory").await.unwrap();
    assert_eq!(
        (inspected.blocked_for, inspected.banned),
        (3540 * SECOND, true)
    );
    // A penalty's block is listed as one.
    for _ in 0..6 {
        a.check(&rule, "alice").await;
    }
    let bans = a.bans("").await.unwrap();
    assert_eq!(bans.len(), 2, "{bans:?}");
    assert_eq!(
        (bans[1].key.as_str(), bans[1].banned, bans[1].offences),
        ("alice", false, 1)
    );
    // The limit admits it again in 60 s, later than the penalty's 10 s: the block lasts until then.
    assert_eq!(bans[1].remaining, 60 * SECOND);
    let blocked = a.enforce(&rule, "alice").await.unwrap_err();
    assert!(plain_text(blocked)
        .await
        .ends_with(". Banned by the policy \"logins\" for 60 seconds."),);
    // Lifted on one node: the other admits the key again (its denial of it forgotten).
    assert!(a.unban(&rule, "mallory").await.unwrap());
    assert!(!a.unban(&rule, "mallory").await.unwrap());
    let lifted = std::time::Instant::now();
    while !b.check(&rule, "mallory").await.allowed {
        assert!(
            lifted.elapsed() < SECOND,
            "the other node still refuses the key a second after the unban"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn a_ban_is_seen_listed_and_lifted_on_every_node_in_memory() {
    ban_and_unban(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ban_is_seen_listed_and_lifted_on_every_node_on_redis() {
    let server = RedisServer::start();
    ban_and_unban(Some(&server)).await;
}

/// On a Cluster: blocks live in their limit's slot (keys of every form, hash-tagged or not, in many slots);
/// a stacked call across slots with one blocked key charges nothing; bans are found on every master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn penalties_and_bans_on_a_cluster() {
    let cluster = tests::RedisCluster::start();
    let (a, b) = (cluster.limiter(), cluster.limiter());
    let rule = Rule::new()
        .prefix("pen:cluster:")
        .max(1)
        .window(60 * SECOND)
        .penalty(Penalty::fixed(600 * SECOND));
    let keys: Vec<String> = (0..20)
        .map(|i| match i % 4 {
            0 => format!("user{i}"),
            1 => format!("{{tenant{i}}}:user"),
            2 => format!("odd}}{i}"),
            _ => format!("{{}}{i}"),
        })
        .collect();
    for key in &keys {
        assert!(a.check(&rule, key).await.allowed, "{key}");
        assert_eq!(a.check(&rule, key).await.verdict, Verdict::Blocked, "{key}");
        let elsewhere = b.check(&rule, key).await;
        assert_eq!(elsewhere.verdict, Verdict::Blocked, "{key}");
    }
    let masters = cluster.masters().len();
    assert!(masters >= 3, "{masters} masters");
    let listed = b.bans("pen:cluster:").await.unwrap();
    let mut found: Vec<String> = listed.iter().map(|ban| ban.key.clone()).collect();
    let mut expected = keys.clone();
    found.sort();
    expected.sort();
    assert_eq!(found, expected);
    // A stacked call across slots, one of its keys blocked: refused, the other charged nothing.
    let other = Rule::new()
        .prefix("pen:cluster:other:")
        .max(3)
        .window(60 * SECOND);
    let [blocked, free] = a.all([(&rule, "user0"), (&other, "ip")]).check().await;
    assert_eq!((blocked.verdict, free.remaining), (Verdict::Blocked, 3));
    assert_eq!(a.check(&other, "ip").await.remaining, 2);
    // Banned and lifted across the cluster.
    a.ban(&rule, "fresh", 60 * SECOND).await.unwrap();
    assert_eq!(b.check(&rule, "fresh").await.verdict, Verdict::Blocked);
    assert!(b.unban(&rule, "fresh").await.unwrap());
    assert!(a.check(&rule, "fresh").await.allowed);
}

/// Beside the rates: a calendar quota under a penalty blocks past its period's count; a limit of calls in
/// flight under one blocks a key that finds no permit; a shadow rule's block is reported and refuses
/// nothing.
async fn beside_the_rates(server: Option<&RedisServer>) {
    let clock = FakeClock::new();
    let (a, b) = nodes(server, &clock);
    let daily = Rule::new()
        .prefix("pen:daily:")
        .period(limiter_runtime::Period::Day)
        .max(1)
        .penalty(Penalty::fixed(30 * SECOND));
    let quota = daily.clone().prefix("pen:daily:plain:");
    assert!(a.check(&daily, "k").await.allowed);
    assert!(a.check(&quota, "k").await.allowed);
    // The day's quota admits the key again only at midnight: that, not the 30 s penalty, is what it is told.
    let offence = b.check(&daily, "k").await;
    let spent = b.check(&quota, "k").await;
    assert!(spent.retry_after > 30 * SECOND, "{spent:?}");
    assert_eq!(
        (offence.verdict, offence.retry_after),
        (Verdict::Blocked, spent.retry_after)
    );
    let flight = Rule::new()
        .prefix("pen:flight:")
        .in_flight(1)
        .penalty(Penalty::fixed(5 * SECOND));
    let held = a.acquire(&flight, "k").await.unwrap();
    let refused = b.acquire(&flight, "k").await.unwrap_err();
    assert_eq!(refused.decision().verdict, Verdict::Blocked);
    assert_eq!(refused.retry_after(), 5 * SECOND);
    held.settle(limiter_runtime::AsCharged).await;
    let still = a.acquire(&flight, "k").await.unwrap_err();
    assert_eq!(
        still.decision().verdict,
        Verdict::Blocked,
        "the permit is free, the key blocked"
    );
    clock.advance(5 * SECOND);
    assert!(a.acquire(&flight, "k").await.is_ok());
    let trial = Rule::new()
        .prefix("pen:shadow:")
        .max(1)
        .shadow(true)
        .penalty(Penalty::fixed(90 * SECOND));
    for _ in 0..3 {
        assert!(
            a.enforce(&trial, "k").await.is_ok(),
            "a shadow rule refuses nothing"
        );
    }
    let reported = b.check(&trial, "k").await;
    assert_eq!(reported.verdict, Verdict::Shadow);
    assert_eq!(reported.retry_after, 90 * SECOND);
}

#[tokio::test]
async fn penalties_beside_the_rates_in_memory() {
    beside_the_rates(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn penalties_beside_the_rates_on_redis() {
    let server = RedisServer::start();
    beside_the_rates(Some(&server)).await;
}

/// `Retry-After` is a promise: a refused call is told the later of its block's end and the time its limit
/// would admit it, so a client that waits exactly as long as it is told is admitted, and is never an offender
/// for having obeyed. One call per 10 s under a `1s..1h` penalty: each round's offence is told the limit's
/// 10 s while the block is shorter, the block's 16 s and 32 s once it is longer; obeying adds no offence.
async fn retry_after_is_a_promise(server: Option<&RedisServer>) {
    for algorithm in ALGORITHMS {
        let clock = FakeClock::new();
        let (a, b) = nodes(server, &clock);
        let prefix = format!("pen:obey:{algorithm}:");
        let limit = Rule::new().algorithm(algorithm).max(1).window(10 * SECOND);
        let rule = limit
            .clone()
            .prefix(prefix.clone())
            .penalty(Penalty::escalating(SECOND, 3600 * SECOND));
        // The same limit without a penalty, fed the same calls: its `retry_after` is when the limit admits.
        let twin = limit.prefix(format!("pen:obey:plain:{algorithm}:"));
        for round in 1..=6_u32 {
            let (node, other) = if round % 2 == 0 { (&a, &b) } else { (&b, &a) };
            let admitted = node.check(&rule, "k").await;
            assert!(admitted.allowed, "{algorithm}, round {round}: {admitted:?}");
            assert!(node.check(&twin, "k").await.allowed, "{algorithm}");
            let offence = node.check(&rule, "k").await;
            let limited = node.check(&twin, "k").await;
            assert!(!limited.allowed, "{algorithm}");
            let block = SECOND * 2_u32.pow(round - 1);
            assert_eq!(offence.verdict, Verdict::Blocked, "{algorithm}");
            assert_eq!(
                offence.retry_after,
                block.max(limited.retry_after),
                "{algorithm}, round {round}: told the later of the block ({block:?}) and the limit ({:?})",
                limited.retry_after
            );
            // Half way, on the other node: the rest of it, and no new offence.
            let half = offence.retry_after / 2;
            clock.advance(half);
            let waiting = other.check(&rule, "k").await;
            assert_eq!(
                (waiting.verdict, waiting.retry_after),
                (Verdict::Blocked, offence.retry_after - half),
                "{algorithm}, round {round}"
            );
            let listed = other.bans(&prefix).await.unwrap();
            assert_eq!(listed.len(), 1, "{algorithm}: {listed:?}");
            assert_eq!(
                listed[0].offences, round,
                "{algorithm}: obeying is no offence"
            );
            // Exactly as long as told: admitted (the next round's first call).
            clock.advance(offence.retry_after - half);
        }
    }
}

#[tokio::test]
async fn retry_after_is_a_promise_in_memory() {
    retry_after_is_a_promise(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_a_promise_on_redis() {
    let server = RedisServer::start();
    retry_after_is_a_promise(Some(&server)).await;
}

/// Waits, a second at most, for `node` to answer `key` of `rule` as `verdict`: a ban or an unban announced on
/// one node reaches the others within the announcement's delivery (at once in memory, where they are one).
async fn eventually(
    node: &Limiter,
    rule: &Rule,
    key: &str,
    verdict: Verdict,
) -> limiter_runtime::Decision {
    let start = std::time::Instant::now();
    loop {
        let decision = node.check(rule, key).await;
        if decision.verdict == verdict {
            return decision;
        }
        assert!(
            start.elapsed() < SECOND,
            "still {decision:?} a second after, not {verdict:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A ban on a limit without a penalty, reached by its policy's name as an attribute's would be: the other
/// node refuses the key at its next call, another key and policy are untouched, the ban is listed and
/// inspected, a node started after it knows of it, and after its end (or an unban) the key is admitted.
async fn a_ban_on_any_limit(server: Option<&RedisServer>) {
    let clock = FakeClock::new();
    let (a, b) = nodes(server, &clock);
    let search = Rule::new()
        .prefix("pen:any:")
        .policy("search")
        .max(100)
        .window(60 * SECOND);
    assert!(b.check(&search, "eve").await.allowed);
    // The policy by name, as the node that decided a call of it knows it.
    assert!(a.check(&search, "alice").await.allowed);
    let rule = a.policy("search").await.unwrap();
    assert!(a.policy("no such policy").await.is_err());
    a.ban(&rule, "eve", 120 * SECOND).await.unwrap();
    let refused = eventually(&b, &search, "eve", Verdict::Blocked).await;
    assert_eq!(refused.retry_after, 120 * SECOND);
    assert!(b.check(&search, "alice").await.allowed);
    let listed = b.bans("search").await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!((listed[0].key.as_str(), listed[0].banned), ("eve", true));
    let inspected = b.inspect(&search, "eve").await.unwrap();
    assert_eq!(
        (inspected.blocked_for, inspected.banned),
        (120 * SECOND, true)
    );
    if let Some(server) = server {
        let later = server.limiter_with_clock(&clock);
        eventually(&later, &search, "eve", Verdict::Blocked).await;
    }
    // The ban's end: admitted, and counted from where it was.
    clock.advance(120 * SECOND);
    let free = b.check(&search, "eve").await;
    assert!(free.allowed, "{free:?}");
    a.ban(&rule, "eve", 120 * SECOND).await.unwrap();
    eventually(&b, &search, "eve", Verdict::Blocked).await;
    assert!(a.unban(&search, "eve").await.unwrap());
    eventually(&b, &search, "eve", Verdict::Admitted).await;
}

#[tokio::test]
async fn a_ban_on_any_limit_in_memory() {
    a_ban_on_any_limit(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ban_on_any_limit_on_redis() {
    let server = RedisServer::start();
    a_ban_on_any_limit(Some(&server)).await;
}

/// What a call asked Redis, from `MONITOR`'s lines: each script called (by its SHA) and each command a script
/// ran, without keys or times; and whether any line touched a block key.
fn shape(lines: &[String]) -> (Vec<String>, bool) {
    let mut shape = Vec::new();
    for line in lines {
        let quoted: Vec<&str> = line.split('"').skip(1).step_by(2).collect();
        match quoted.first() {
            Some(&"EVALSHA") => shape.push(format!("EVALSHA {}", quoted[1])),
            Some(command) if line.contains(" lua] ") => shape.push(format!("lua {command}")),
            _ => {}
        }
    }
    (shape, lines.iter().any(|line| line.contains("%block")))
}

/// A ban costs a policy with no ban in force nothing: its calls run the same script, the same commands in
/// it, and touch no block key, before and after another policy's key is banned; the banned policy's calls
/// read the block in their one script call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ban_costs_other_policies_nothing() {
    let server = RedisServer::start();
    let monitor = Monitor::start(server.port());
    let search = Rule::new().prefix("cost:search:").max(100);
    let other = Rule::new().prefix("cost:other:").max(100);
    let limiter = tests::quiet_limiter(&server, &monitor, &other).await;
    // The key's first call takes another branch of the script than the ones after it: two, then compare.
    limiter.check(&other, "k").await;
    monitor.take_lines();
    limiter.check(&other, "k").await;
    let before = shape(&monitor.take_lines());
    limiter.ban(&search, "eve", 60 * SECOND).await.unwrap();
    monitor.take_lines();
    limiter.check(&other, "k").await;
    let after = shape(&monitor.take_lines());
    assert!(!before.0.is_empty() && !before.1, "{before:?}");
    assert_eq!(before, after, "the other policy's call changed");
    assert_eq!(
        limiter.check(&search, "eve").await.verdict,
        Verdict::Blocked
    );
    monitor.take_lines();
    limiter.check(&search, "k").await;
    let banned = shape(&monitor.take_lines());
    assert!(
        banned.1,
        "the banned policy's calls read blocks: {banned:?}"
    );
    let scripts = banned.0.iter().filter(|c| c.starts_with("EVALSHA")).count();
    assert_eq!(scripts, 1, "one script call: {banned:?}");
}

/// A key too long to be stored verbatim is listed by what its store key keeps of it and its digest; that
/// listed key is what an operator copies: it inspects, lifts and bans the same key.
async fn a_long_key_as_listed(server: Option<&RedisServer>) {
    let clock = FakeClock::new();
    let (a, b) = nodes(server, &clock);
    let rule = Rule::new()
        .prefix("pen:long:")
        .max(1)
        .window(60 * SECOND)
        .penalty(Penalty::fixed(600 * SECOND));
    let long = format!("{}:{}", "k".repeat(127), "x".repeat(300));
    assert!(a.check(&rule, &long).await.allowed);
    assert_eq!(a.check(&rule, &long).await.verdict, Verdict::Blocked);
    let listed = b.bans("pen:long:").await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let shown = listed[0].key.clone();
    assert_ne!(shown, long);
    assert!(b.inspect(&rule, &shown).await.unwrap().blocked_for > Duration::ZERO);
    assert!(b.unban(&rule, &shown).await.unwrap(), "lifted as listed");
    assert!(b.bans("pen:long:").await.unwrap().is_empty());
    // Once its window has passed (else the limit would refuse it again), the key is admitted.
    clock.advance(60 * SECOND);
    eventually(&a, &rule, &long, Verdict::Admitted).await;
    a.ban(&rule, &shown, 60 * SECOND).await.unwrap();
    assert_eq!(b.check(&rule, &long).await.verdict, Verdict::Blocked);
}

#[tokio::test]
async fn a_long_key_is_lifted_as_listed_in_memory() {
    a_long_key_as_listed(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_key_is_lifted_as_listed_on_redis() {
    let server = RedisServer::start();
    a_long_key_as_listed(Some(&server)).await;
}

/// A call too large for its limit ever to admit (`Reason::TooLarge`) is refused, and is no offence: the key
/// is not blocked, and its next call of a cost that fits is admitted.
async fn too_large_is_no_offence(server: Option<&RedisServer>) {
    for algorithm in ALGORITHMS {
        let clock = FakeClock::new();
        let (a, b) = nodes(server, &clock);
        let rule = Rule::new()
            .prefix(format!("pen:large:{algorithm}:"))
            .algorithm(algorithm)
            .max(2)
            .window(60 * SECOND)
            .penalty(Penalty::fixed(600 * SECOND));
        let large = a.check(&rule, "k").cost(3).await;
        assert_eq!(
            (large.allowed, large.verdict),
            (false, Verdict::Limited),
            "{algorithm}: {large:?}"
        );
        let next = b.check(&rule, "k").await;
        assert!(next.allowed, "{algorithm}: {next:?}");
        assert!(b.bans("").await.unwrap().is_empty(), "{algorithm}");
    }
}

#[tokio::test]
async fn too_large_is_no_offence_in_memory() {
    too_large_is_no_offence(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_large_is_no_offence_on_redis() {
    let server = RedisServer::start();
    too_large_is_no_offence(Some(&server)).await;
}
