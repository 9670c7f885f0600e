//! A call dropped on its way to Redis keeps nothing: a caller that goes away (a client disconnect, a
//! `timeout` around the call) after its call was sent never learns what Redis decided, so what Redis charged
//! for it is given back once the answer is in. For a call alone, a call waiting in a batch, a call across a
//! cluster's slots and a call taking a lease: permits in flight come back at once instead of after their time
//! to live, rate units are not spent, and a lease taken for no one goes back whole. Each test shows (by
//! MONITOR) that dropped calls did reach Redis and were given back there: none passes with every dropped
//! call gone before it was sent.

use std::future::IntoFuture;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, Rule};
use tests::{Monitor, RedisServer, Rng};

/// Polls `call` `polls` times, yielding between polls, and drops it unless it was decided meanwhile: its
/// output if it was.
async fn poll_then_drop<F: IntoFuture>(call: F, polls: u64) -> Option<F::Output> {
    let mut call = pin!(call.into_future());
    for _ in 0..polls {
        if let Poll::Ready(output) = futures::poll!(call.as_mut()) {
            return Some(output);
        }
        tokio::task::yield_now().await;
    }
    None
}

/// Waits (at most 10 s, checking every 20 ms) until `settled` holds.
async fn until(mut settled: impl FnMut() -> bool) {
    let started = Instant::now();
    while !settled() {
        assert!(started.elapsed() < Duration::from_secs(10), "never settled");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The arguments after `key` of every `command` on `key` that `lines` (from MONITOR) show, a script's too.
fn on_key(lines: &[String], command: &str, key: &str) -> Vec<Vec<String>> {
    lines
        .iter()
        .filter_map(|line| {
            let mut quoted = line.split('"').skip(1).step_by(2);
            let named = quoted.next()?.eq_ignore_ascii_case(command);
            (named && quoted.next()? == key).then(|| quoted.map(str::to_owned).collect())
        })
        .collect()
}

/// The members of `key`'s sorted set that `lines` show added (`ZADD`) and later removed (`ZREM`), but "#"
/// (the sliding log's count).
fn added_then_removed(lines: &[String], key: &str) -> Vec<String> {
    let added: std::collections::HashSet<String> = on_key(lines, "ZADD", key)
        .into_iter()
        .flat_map(|args| {
            let args: Vec<String> = args
                .into_iter()
                .skip_while(|a| a == "XX" || a == "CH")
                .collect();
            args.into_iter().skip(1).step_by(2).collect::<Vec<_>>()
        })
        .collect();
    let mut removed: Vec<String> = on_key(lines, "ZREM", key)
        .into_iter()
        .flatten()
        .filter(|member| member != "#" && added.contains(member))
        .collect();
    removed.sort();
    removed.dedup();
    removed
}

/// Waits (at most 10 s, taking what MONITOR shows every 20 ms) until `found` finds something in all it has
/// shown so far: what it found.
async fn until_shown<T>(monitor: &Monitor, mut found: impl FnMut(&[String]) -> Option<T>) -> T {
    let (started, mut lines) = (Instant::now(), Vec::new());
    loop {
        lines.extend(monitor.take_lines());
        if let Some(found) = found(&lines) {
            return found;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "MONITOR never showed it"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn limiter(server: &RedisServer) -> Limiter {
    Limiter::builder()
        .redis(server.url())
        .deadline(tests::PATIENT)
        .deny_cache(false)
        .build()
        .unwrap()
}

/// 300 acquires of an `in_flight(2)` rule from 32 tasks, each dropped after a few polls: once Redis has
/// answered them, no permit is left held, and the key admits two calls at once again, at once (the
/// permits' time to live is a minute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_acquires_leave_no_permit_held() {
    let server = RedisServer::start();
    let limiter = limiter(&server);
    let rule = Rule::new()
        .prefix("dropped:")
        .in_flight(2)
        .in_flight_ttl(Duration::from_secs(60));
    // Connected, the scripts loaded.
    drop(limiter.acquire(&rule, "warm").await.unwrap());
    let monitor = Monitor::start(server.port());
    let tasks: Vec<_> = (0..32)
        .map(|task| {
            let (limiter, rule) = (limiter.clone(), rule.clone());
            tokio::spawn(async move {
                let mut rng = Rng::new(task + 1);
                let (mut decided, mut granted) = (0, 0);
                for _ in 0..10 {
                    let polls = 1 + rng.below(3);
                    // A permit granted in time is dropped too: given back as any permit is.
                    if let Some(acquired) = poll_then_drop(limiter.acquire(&rule, "k"), polls).await
                    {
                        decided += 1;
                        granted += usize::from(acquired.is_ok());
                    }
                }
                (decided, granted)
            })
        })
        .collect();
    let (mut decided, mut granted) = (0, 0);
    for task in tasks {
        let (d, g) = task.await.unwrap();
        decided += d;
        granted += g;
    }
    assert!(
        decided < 320,
        "every call was decided before it was dropped"
    );
    let mut redis = server.connection();
    until(|| {
        redis::cmd("ZCARD")
            .arg("dropped:k")
            .query::<u64>(&mut redis)
            .unwrap()
            == 0
    })
    .await;
    // Dropped calls reached Redis, and their permits were given back: more permits were taken and given back
    // than callers were granted (each granted one is given back once, when dropped).
    until_shown(&monitor, |lines| {
        let back = added_then_removed(lines, "dropped:k").len();
        (back > granted).then_some(())
    })
    .await;
    // A dropped call still on its way may take a permit after that, until its answer is in and it is given
    // back: once every one is, the key admits two calls at once again.
    let started = Instant::now();
    let (first, second) = loop {
        let first = limiter.acquire(&rule, "k").await;
        let second = limiter.acquire(&rule, "k").await;
        if let (Ok(first), Ok(second)) = (first, second) {
            break (first, second);
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "permits still held"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(limiter.acquire(&rule, "k").await.is_err(), "two at once");
    drop((first, second));
}

/// 300 checks of a sliding log from 32 tasks, each dropped after a few polls: once Redis has answered them,
/// the log holds exactly the calls whose callers read an admission, no more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_checks_are_not_charged() {
    let server = RedisServer::start();
    let limiter = limiter(&server);
    let rule = Rule::new()
        .prefix("charged:")
        .max(1_000)
        .window(Duration::from_secs(3_600));
    assert!(limiter.check(&rule, "warm").await.allowed);
    let monitor = Monitor::start(server.port());
    let tasks: Vec<_> = (0..32)
        .map(|task| {
            let (limiter, rule) = (limiter.clone(), rule.clone());
            tokio::spawn(async move {
                let mut rng = Rng::new(task + 100);
                let (mut admitted, mut dropped) = (0, 0);
                for _ in 0..10 {
                    let polls = 1 + rng.below(3);
                    match poll_then_drop(limiter.check(&rule, "k"), polls).await {
                        Some(decision) => admitted += usize::from(decision.allowed),
                        None => dropped += 1,
                    }
                }
                (admitted, dropped)
            })
        })
        .collect();
    let (mut admitted, mut dropped) = (0, 0);
    for task in tasks {
        let (a, d) = task.await.unwrap();
        admitted += a;
        dropped += d;
    }
    assert!(
        dropped > 10,
        "{dropped} calls dropped before their decision"
    );
    let mut redis = server.connection();
    // Settled: the count stays at what callers were told, and a fresh call sees it.
    until(|| tests::logged_calls(&mut redis, "charged:k") == admitted).await;
    // Dropped calls reached Redis, were admitted there, and given back: a check is never given back
    // otherwise, so a member added and then removed is a dropped call's.
    until_shown(&monitor, |lines| {
        (!added_then_removed(lines, "charged:k").is_empty()).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(tests::logged_calls(&mut redis, "charged:k"), admitted);
    let after = limiter.check(&rule, "k").await;
    assert_eq!(after.remaining as usize, 1_000 - admitted - 1);
}

/// On a cluster, 160 calls of two limits in two slots (decided one slot at a time), each dropped after a few
/// polls: once the exchanges are done, each slot's log holds exactly the calls whose callers read an
/// admission. A call dropped between its slots gives back what the first slot charged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_calls_across_slots_are_not_charged() {
    let cluster = tests::RedisCluster::start();
    let limiter = cluster
        .builder()
        .deadline(tests::PATIENT)
        .deny_cache(false)
        .build()
        .unwrap();
    let [one, two] = ["{one}:dropped:", "{two}:dropped:"].map(|prefix| {
        Rule::new()
            .prefix(prefix)
            .max(1_000)
            .window(Duration::from_secs(3_600))
    });
    assert!(limiter.all([(&one, "warm"), (&two, "warm")]).check().await[0].allowed);
    let monitors = ["{one}:dropped:k", "{two}:dropped:k"]
        .map(|key| Monitor::start(cluster.master_of_slot(cluster.slot(key)).port));
    let tasks: Vec<_> = (0..16)
        .map(|task| {
            let (limiter, one, two) = (limiter.clone(), one.clone(), two.clone());
            tokio::spawn(async move {
                let mut rng = Rng::new(task + 200);
                let (mut admitted, mut dropped) = (0, 0);
                for _ in 0..10 {
                    let polls = 1 + rng.below(6);
                    let call = limiter.all([(&one, "k"), (&two, "k")]).check();
                    match poll_then_drop(call, polls).await {
                        Some(decisions) => {
                            admitted += usize::from(decisions.iter().all(|d| d.allowed))
                        }
                        None => dropped += 1,
                    }
                }
                (admitted, dropped)
            })
        })
        .collect();
    let (mut admitted, mut dropped) = (0, 0);
    for task in tasks {
        let (a, d) = task.await.unwrap();
        admitted += a;
        dropped += d;
    }
    assert!(
        dropped > 10,
        "{dropped} calls dropped before their decision"
    );
    let logged = |key: &str| {
        let port = cluster.master_of_slot(cluster.slot(key)).port;
        cluster
            .command::<usize>(port, redis::cmd("ZCOUNT").arg(key).arg(0).arg("+inf"))
            .unwrap()
    };
    until(|| logged("{one}:dropped:k") == admitted && logged("{two}:dropped:k") == admitted).await;
    // Dropped calls reached Redis, were admitted in a slot, and given back there.
    for (monitor, key) in monitors.iter().zip(["{one}:dropped:k", "{two}:dropped:k"]) {
        until_shown(monitor, |lines| {
            (!added_then_removed(lines, key).is_empty()).then_some(())
        })
        .await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        (logged("{one}:dropped:k"), logged("{two}:dropped:k")),
        (admitted, admitted),
        "{admitted} admitted, {dropped} dropped"
    );
}

/// First calls of a leased limit, each taking a lease of 100 for its key, dropped after a few polls: once
/// Redis has answered, every lease taken for no one has gone back whole (a bucket given back whole leaves no
/// key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_lease_takes_give_the_lease_back() {
    let server = RedisServer::start();
    let limiter = server
        .builder()
        .deadline(tests::PATIENT)
        .deny_cache(false)
        .heartbeat_every(Duration::from_secs(3_600))
        .build()
        .unwrap();
    let rule = Rule::new()
        .prefix("leased:")
        .algorithm(limiter_runtime::Algorithm::TokenBucket)
        .max(1_000)
        .window(Duration::from_secs(3_600))
        .lease(100)
        .lease_ttl(Duration::from_secs(60));
    assert!(limiter.check(&rule, "warm").await.allowed);
    let monitor = Monitor::start(server.port());
    let mut redis = server.connection();
    // Script calls so far: with no heartbeat, lease takes (and their give-backs).
    let scripts = |redis: &mut redis::Connection| {
        let stats: String = redis::cmd("INFO").arg("commandstats").query(redis).unwrap();
        stats
            .lines()
            .find_map(|line| line.strip_prefix("cmdstat_evalsha:calls="))
            .and_then(|rest| rest.split(',').next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let before = scripts(&mut redis);
    let (mut rng, mut dropped) = (Rng::new(7), Vec::new());
    for i in 0..60 {
        let key = format!("k{i}");
        let polls = 1 + rng.below(3);
        if poll_then_drop(limiter.check(&rule, &key), polls)
            .await
            .is_none()
        {
            dropped.push(key);
        }
    }
    assert!(dropped.len() >= 10, "{} dropped", dropped.len());
    // Some took a lease in Redis before their callers went away.
    until(|| scripts(&mut redis) >= before + 2).await;
    until(|| {
        dropped.iter().all(|key| {
            !redis::cmd("EXISTS")
                .arg(format!("leased:{key}"))
                .query::<bool>(&mut redis)
                .unwrap()
        })
    })
    .await;
    // A dropped call's lease was taken in Redis (its key written), then given back whole (the key deleted,
    // hours before it would expire): the give-back is what emptied it.
    until_shown(&monitor, |lines| {
        dropped.iter().find(|key| {
            let key = format!("leased:{key}");
            !on_key(lines, "SET", &key).is_empty() && !on_key(lines, "DEL", &key).is_empty()
        })
    })
    .await;
}
