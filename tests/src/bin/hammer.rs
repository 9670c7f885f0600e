//! One process of the multi-process exactness test: many tasks hammering one limit (max 100, window 2 s).
//!
//! `hammer <target> <key> <tasks> <millis>`, where `<target>` is a Redis URL, or `cluster:` followed by
//! comma-separated seed URLs. With `HAMMER_CLOCK_SKEW_MS=<n>` (may be negative) this process's own clock runs
//! `n` ms off; Redis decisions still read Redis `TIME`. With `HAMMER_STACKED=1` every call is also charged to
//! a second limit, a token bucket (`burst` 120, 60 per 6 s), decided with the first as one. With
//! `HAMMER_LEASE=<algorithm>` (`token_bucket` or `fixed_window`) the limit is of that algorithm instead, with
//! a lease of 20 units for at most 200 ms. With `HAMMER_CALENDAR=<zone>` it is a calendar quota instead: 100
//! a day in that zone. With `HAMMER_ACROSS_KEYS=1` the limiter batches calls of different keys together
//! (`batch_across_keys`), and as many tasks again call on 10,000 other keys meanwhile, so that the key's calls
//! go in batches with theirs. With `HAMMER_PRIORITIES=1` the limit keeps 20% for critical calls, and one task in
//! ten calls as `Critical` (the others `Normal`): fewer than the share, so that a limit that did not keep it
//! would give them less.
//!
//! It makes one decision on another key, then prints `ready <own clock µs> <Redis time µs>`: its own clock is
//! read from a decision with the switch off, which is decided in-process. Then it waits for a `go` line on
//! stdin, runs `<tasks>` tasks for `<millis>` ms of its own time (a rejected task pauses 5 ms), and prints
//! `admitted <Redis time µs>` for every admission (`admitted <µs> critical` for a critical call's),
//! `refused <Redis time µs> <retry_after µs> <verdict>` for every refusal (` critical` added for a critical
//! call's; of a stacked pair, the later `retry_after` of the two and the refusing limit's verdict), and
//! `done <calls> <degraded>` last. A refusal's time is its `decided_at`: when Redis decided it, or, served from
//! the node's deny cache, Redis's time of the cached refusal plus the time since it was sent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use limiter_runtime::{Algorithm, Clock, Limiter, Period, Priority, Rule, SystemClock, Zone};
use tokio::io::{AsyncBufReadExt, BufReader};

const USAGE: &str = "usage: hammer <redis-url | cluster:url,url,...> <key> <tasks> <millis>";

/// The system clock, `skew_ms` off.
#[derive(Debug)]
struct Skewed {
    system: SystemClock,
    skew_ms: i64,
}

impl Clock for Skewed {
    fn now(&self) -> Duration {
        let skew = Duration::from_millis(self.skew_ms.unsigned_abs());
        if self.skew_ms >= 0 {
            self.system.now() + skew
        } else {
            self.system.now() - skew
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, key, tasks, millis] = &args[..] else {
        panic!("{USAGE}");
    };
    let tasks: usize = tasks.parse().expect(USAGE);
    let run_for = Duration::from_millis(millis.parse().expect(USAGE));
    let skew_ms: i64 = std::env::var("HAMMER_CLOCK_SKEW_MS")
        .map(|ms| ms.parse().expect("HAMMER_CLOCK_SKEW_MS is a number of ms"))
        .unwrap_or(0);

    let builder = match target.strip_prefix("cluster:") {
        Some(seeds) => Limiter::builder().redis_cluster(seeds.split(',')),
        None => Limiter::builder().redis(target.as_str()),
    };
    let across_keys = std::env::var("HAMMER_ACROSS_KEYS").is_ok_and(|v| v == "1");
    let limiter = builder
        .batch_across_keys(across_keys)
        .local_clock(Skewed {
            system: SystemClock::new(),
            skew_ms,
        })
        // Patient: a call that fails open would count as an admission the limit never made.
        .deadline(Duration::from_secs(10))
        .build()
        .expect("a valid target");

    let warm_up = Rule::new().prefix("warm-up:");
    let redis_now = limiter.check(&warm_up, std::process::id()).await;
    assert!(!redis_now.degraded, "Redis does not answer");
    limiter.set_enabled_here(false);
    let own_now = limiter.check(&warm_up, "own clock").await.decided_at;
    limiter.set_enabled_here(true);
    println!(
        "ready {} {}",
        own_now.as_micros(),
        redis_now.decided_at.as_micros()
    );

    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    match stdin.next_line().await {
        Ok(Some(line)) if line.trim() == "go" => {}
        other => panic!("expected `go`, read {other:?}"),
    }

    let rule = Rule::new().max(100).window(Duration::from_secs(2));
    let calendar = std::env::var("HAMMER_CALENDAR").ok();
    let rule = Arc::new(match (calendar, std::env::var("HAMMER_LEASE")) {
        (Some(zone), _) => Rule::new()
            .prefix("calendar:")
            .period(Period::Day)
            .tz(Zone::get(&zone).expect("HAMMER_CALENDAR names a zone"))
            .max(100),
        (None, Ok(algorithm)) => rule
            .prefix("leased:")
            .algorithm(algorithm.parse().expect("HAMMER_LEASE names an algorithm"))
            .lease(20)
            .lease_ttl(Duration::from_millis(200)),
        (None, Err(_)) => rule,
    });
    let prioritized = std::env::var("HAMMER_PRIORITIES").is_ok_and(|v| v == "1");
    let rule = match prioritized {
        true => Arc::new((*rule).clone().reserve(Priority::Critical, 20)),
        false => rule,
    };
    let quota = Arc::new(
        Rule::new()
            .prefix("quota:")
            .algorithm(Algorithm::TokenBucket)
            .max(60)
            .burst(120)
            .window(Duration::from_secs(6)),
    );
    let stacked = std::env::var("HAMMER_STACKED").is_ok_and(|v| v == "1");
    let started = Instant::now();
    let workers: Vec<_> = (0..tasks)
        .map(|task| {
            let (limiter, rule, quota, key) =
                (limiter.clone(), rule.clone(), quota.clone(), key.clone());
            let priority = match prioritized && task % 10 == 0 {
                true => Priority::Critical,
                false => Priority::Normal,
            };
            tokio::spawn(async move {
                let (mut admitted, mut refused, mut calls, mut degraded) =
                    (Vec::new(), Vec::new(), 0u64, 0u64);
                while started.elapsed() < run_for {
                    let decision = match stacked {
                        false => limiter.check(&rule, &key).priority(priority).await,
                        true => {
                            let [mut first, second] =
                                limiter.all([(&*rule, &key), (&*quota, &key)]).check().await;
                            // Refused: when the pair is asked again, whichever limit refused.
                            if !second.allowed {
                                first.retry_after = first.retry_after.max(second.retry_after);
                                if first.allowed {
                                    first.verdict = second.verdict;
                                }
                            }
                            first.allowed &= second.allowed;
                            first.degraded |= second.degraded;
                            first
                        }
                    };
                    calls += 1;
                    degraded += u64::from(decision.degraded);
                    if decision.allowed {
                        admitted.push(decision.decided_at.as_micros());
                    } else {
                        refused.push((
                            decision.decided_at.as_micros(),
                            decision.retry_after.as_micros(),
                            decision.verdict,
                        ));
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                }
                (admitted, refused, calls, degraded, priority)
            })
        })
        .collect();
    // Other keys' calls, for the key's to be batched with (they report nothing).
    let noise: Vec<_> = (0..if across_keys { tasks } else { 0 })
        .map(|task| {
            let limiter = limiter.clone();
            let rule = Rule::new().prefix("noise:").max(1_000_000);
            tokio::spawn(async move {
                let mut n = task as u64;
                while started.elapsed() < run_for {
                    n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    limiter.check(&rule, (n >> 33) % 10_000).await;
                }
            })
        })
        .collect();
    let (mut calls, mut degraded) = (0, 0);
    let mut out = String::new();
    for worker in workers {
        let (admitted, refused, c, d, priority) = worker.await.expect("a task panicked");
        calls += c;
        degraded += d;
        let mark = match priority {
            Priority::Critical => " critical",
            _ => "",
        };
        for at in admitted {
            out.push_str(&format!("admitted {at}{mark}\n"));
        }
        for (at, retry_after, verdict) in refused {
            out.push_str(&format!("refused {at} {retry_after} {verdict}{mark}\n"));
        }
    }
    for task in noise {
        task.await.expect("a task panicked");
    }
    print!("{out}");
    println!("done {calls} {degraded}");
}
