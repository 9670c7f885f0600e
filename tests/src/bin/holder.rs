//! One process of the in-flight tests (`tests/tests/in_flight.rs`): tasks that take permits of one limit in
//! flight and hold them while they "run".
//!
//! `holder run <redis-url> <keys> <tasks> <millis> <permits> [<least>]`: `<tasks>` tasks, for `<millis>` ms and
//! then until the process has admitted `<least>` calls (0 unless given; at most a minute more), each taking
//! a permit (`Rule::in_flight(<permits>)`, prefix `held:`) on one of `<keys>` keys in turn, and, admitted,
//! counting itself in Redis as running (`INCR running:<key>`, the answer the bodies of that key running at
//! that instant, across every process), holding a few ms, then counting itself out (`DECR`) before it gives
//! the permit back. Prints `done <admitted> <refused> <degraded> <most running at once>` last.
//!
//! `holder hold <redis-url> <key> <permits> <ttl ms>`: takes `<permits>` permits of `<key>` (`in_flight_ttl` of
//! `<ttl ms>`), prints `held`, and holds them until killed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use limiter_runtime::{Limiter, Rule};

const USAGE: &str =
    "usage: holder run <redis-url> <keys> <tasks> <millis> <permits> [<least>] | holder hold \
                     <redis-url> <key> <permits> <ttl ms>";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["run", url, keys, tasks, millis, permits, ref least @ ..] if least.len() <= 1 => {
            let number = |text: &str| text.parse::<u64>().expect(USAGE);
            run(
                url,
                number(keys),
                number(tasks),
                number(millis),
                number(permits),
                least.first().map_or(0, |least| number(least)),
            )
            .await;
        }
        ["hold", url, key, permits, ttl] => {
            let permits: u64 = permits.parse().expect(USAGE);
            let ttl = Duration::from_millis(ttl.parse().expect(USAGE));
            hold(url, key, permits, ttl).await;
        }
        _ => panic!("{USAGE}"),
    }
}

async fn run(url: &str, keys: u64, tasks: u64, millis: u64, permits: u64, least: u64) {
    let limiter = Limiter::builder()
        .redis(url)
        .deadline(Duration::from_secs(2))
        .build()
        .expect("a valid Redis URL");
    limiter.ready().await.expect("Redis is ready");
    let client = redis::Client::open(url).expect("a valid Redis URL");
    // The count of bodies running is the test's witness, not what it tests: its answers may be slow on a loaded
    // machine (the client's own default of 500 ms is not enough there), never wrong.
    let patient =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    let redis = client
        .get_multiplexed_async_connection_with_config(&patient)
        .await
        .expect("a connection of the test's own");
    let rule = Rule::new().prefix("held:").in_flight(permits);
    let until = Instant::now() + Duration::from_millis(millis);
    // Past `until`, on until the process has admitted `least` calls (on a loaded machine, fewer fit in `millis`).
    let cap = until + Duration::from_secs(60);
    let total = std::sync::Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let (limiter, rule, mut redis) = (limiter.clone(), rule.clone(), redis.clone());
            let total = std::sync::Arc::clone(&total);
            tokio::spawn(async move {
                let (mut admitted, mut refused, mut most) = (0u64, 0u64, 0i64);
                let mut turn = task;
                let going = || {
                    let now = Instant::now();
                    now < until || (now < cap && total.load(Ordering::Relaxed) < least)
                };
                while going() {
                    turn += 1;
                    let key = format!("k{}", turn % keys);
                    let Ok(permit) = limiter.acquire(&rule, &key).await else {
                        refused += 1;
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        continue;
                    };
                    admitted += 1;
                    total.fetch_add(1, Ordering::Relaxed);
                    let running: i64 = redis::cmd("INCR")
                        .arg(format!("running:{key}"))
                        .query_async(&mut redis)
                        .await
                        .expect("INCR");
                    most = most.max(running);
                    tokio::time::sleep(Duration::from_millis(1 + turn % 3)).await;
                    let _: i64 = redis::cmd("DECR")
                        .arg(format!("running:{key}"))
                        .query_async(&mut redis)
                        .await
                        .expect("DECR");
                    drop(permit);
                }
                (admitted, refused, most)
            })
        })
        .collect();
    let (mut admitted, mut refused, mut most) = (0, 0, 0);
    for handle in handles {
        let (a, r, m) = handle.await.expect("a task panicked");
        (admitted, refused, most) = (admitted + a, refused + r, most.max(m));
    }
    let degraded = limiter.stats().degraded;
    println!("done {admitted} {refused} {degraded} {most}");
}

async fn hold(url: &str, key: &str, permits: u64, ttl: Duration) {
    // Patient: past the default deadline (50 ms, which a loaded machine overruns), a degraded call is admitted
    // holding no permit in Redis, and the tests would watch permits nobody holds.
    let limiter = Limiter::builder()
        .redis(url)
        .deadline(Duration::from_secs(10))
        .build()
        .expect("a valid Redis URL");
    let rule = Rule::new()
        .prefix("held:")
        .in_flight(permits)
        .in_flight_ttl(ttl);
    let mut held = Vec::new();
    for _ in 0..permits {
        let permit = limiter.acquire(&rule, key).await.expect("a permit");
        assert!(!permit.decision().degraded, "a permit held in Redis");
        held.push(permit);
    }
    println!("held");
    std::future::pending::<()>().await;
}
