//! Exactness across OS processes. Four processes of 50 tasks each (`tests/src/bin/hammer.rs`) hammer one
//! limit (max 100, window 2 s) for 6 s, against one Redis and against a Redis Cluster. Every admission is
//! recorded with Redis time (`Decision::decided_at`), and then:
//! - **never too many:** no interval of 2 s holds more than 100 admissions;
//! - **never too few:** demand is far above the limit, so an exact sliding log admits 100 at once, then each
//!   slot again as soon as it leaves the window: exactly 300 in the first three windows from the first
//!   admission. We demand at least 297 (within 1%).
//!
//! And two processes whose own clocks are 5 s apart still share one exact window, because every decision
//! reads Redis `TIME`; the same two clocks passed into the scripts break it. And with every call charged to a
//! stacked pair (the same limit and a token bucket), both limits' guarantees hold together. A calendar quota
//! (100 a day) admits exactly 100 a day across four processes whose clocks are hours apart. And with 20% kept
//! for critical calls, no normal call is admitted past its ceiling of 80.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use limiter_runtime::{FakeClock, Limiter, Rule};
use tests::{RedisCluster, RedisServer};

const MAX: usize = 100;
const WINDOW_US: u64 = 2_000_000;

/// The processes of one test need the machine's two cores to themselves, more than the tests need to run
/// side by side.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// What the processes of one run reported.
#[derive(Debug)]
struct Run {
    /// Every admission's Redis time, µs, sorted.
    admissions: Vec<u64>,
    /// The critical calls' admissions among them (`HAMMER_PRIORITIES`), sorted.
    critical: Vec<u64>,
    /// Each process's own clock minus Redis's, µs, measured before the run.
    offsets: Vec<i64>,
    calls: u64,
    degraded: u64,
}

/// Runs one `hammer` process per entry of `skews_ms` (its own clock's skew), each with 50 tasks for
/// `millis`, all on `key` of `target`, started together.
fn hammer(target: &str, key: &str, skews_ms: &[i64], millis: u64) -> Run {
    hammer_with(target, key, skews_ms, millis, &[])
}

/// [`hammer`], with the environment `env` (`HAMMER_STACKED`, `HAMMER_LEASE`, `HAMMER_ACROSS_KEYS`) set for
/// each process.
fn hammer_with(
    target: &str,
    key: &str,
    skews_ms: &[i64],
    millis: u64,
    env: &[(&str, &str)],
) -> Run {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut children: Vec<_> = skews_ms
        .iter()
        .map(|skew| {
            Command::new(env!("CARGO_BIN_EXE_hammer"))
                .args([target, key, "50", &millis.to_string()])
                .env("HAMMER_CLOCK_SKEW_MS", skew.to_string())
                .envs(env.iter().copied())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("the hammer binary runs")
        })
        .collect();
    let mut outputs: Vec<_> = children
        .iter_mut()
        .map(|child| BufReader::new(child.stdout.take().unwrap()).lines())
        .collect();
    let mut offsets = Vec::new();
    for output in &mut outputs {
        let line = output
            .next()
            .expect("a hammer process exited before it was ready")
            .unwrap();
        let words: Vec<&str> = line.split_whitespace().collect();
        let ["ready", own, redis] = words[..] else {
            panic!("unexpected line {line:?}");
        };
        offsets.push(own.parse::<i64>().unwrap() - redis.parse::<i64>().unwrap());
    }
    for child in &mut children {
        writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
    }
    let (mut admissions, mut critical, mut calls, mut degraded) = (Vec::new(), Vec::new(), 0, 0);
    for output in outputs {
        for line in output {
            let line = line.unwrap();
            let words: Vec<&str> = line.split_whitespace().collect();
            match words[..] {
                ["admitted", at] => admissions.push(at.parse::<u64>().unwrap()),
                ["admitted", at, "critical"] => {
                    admissions.push(at.parse::<u64>().unwrap());
                    critical.push(at.parse::<u64>().unwrap());
                }
                ["done", c, d] => {
                    calls += c.parse::<u64>().unwrap();
                    degraded += d.parse::<u64>().unwrap();
                }
                _ => panic!("unexpected line {line:?}"),
            }
        }
    }
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a hammer process failed");
    }
    admissions.sort_unstable();
    critical.sort_unstable();
    Run {
        admissions,
        critical,
        offsets,
        calls,
        degraded,
    }
}

/// No interval of one window holds more than `MAX` admissions: each admission is at least a window after
/// the one `MAX` places before it (sliding log: an admission at `s` counts while `s > now - window`).
fn assert_never_too_many(run: &Run) {
    let t = &run.admissions;
    for j in MAX..t.len() {
        assert!(
            t[j] - t[j - MAX] >= WINDOW_US,
            "{} admissions within {} µs",
            MAX + 1,
            t[j] - t[j - MAX]
        );
    }
}

/// Demand far above the limit is admitted at the full limit: `windows` × `MAX` admissions (exactly, for an
/// ideal limiter) from the first admission on, less 1% at most.
fn assert_never_too_few(run: &Run, windows: u64) {
    let t = &run.admissions;
    let first = t[0];
    let admitted = t
        .iter()
        .filter(|&&at| at < first + windows * WINDOW_US)
        .count();
    let full = windows as usize * MAX;
    // How long a freed slot waited for its next admission: the reaction time of the callers.
    let worst_reuse = (MAX..admitted)
        .map(|j| t[j] - t[j - MAX] - WINDOW_US)
        .max()
        .unwrap_or(0);
    eprintln!(
        "{} calls, {} admitted in all, {admitted} in the first {windows} windows (full: {full}), \
         a freed slot reused within {worst_reuse} µs",
        run.calls,
        t.len()
    );
    assert!(
        admitted * 100 >= full * 99,
        "under-admitted: {admitted} of {full}"
    );
}

#[test]
fn four_processes_admit_exactly_the_limit_on_one_redis() {
    let server = RedisServer::start();
    let run = hammer(&server.url(), "shared", &[0; 4], 6_000);
    assert_eq!(run.degraded, 0, "every decision was made in Redis");
    assert_never_too_many(&run);
    assert_never_too_few(&run, 3);
}

/// The same, each process batching the key's calls with calls on 10,000 other keys
/// (`batch_across_keys`): every admission is still the key's own, exactly.
#[test]
fn four_processes_batching_across_keys_admit_exactly_the_limit() {
    let server = RedisServer::start();
    let run = hammer_with(
        &server.url(),
        "batched",
        &[0; 4],
        6_000,
        &[("HAMMER_ACROSS_KEYS", "1")],
    );
    assert_eq!(run.degraded, 0, "every decision was made in Redis");
    assert_never_too_many(&run);
    assert_never_too_few(&run, 3);
}

#[test]
fn four_processes_admit_exactly_the_limit_on_a_cluster() {
    let cluster = RedisCluster::start();
    let target = format!("cluster:{}", cluster.seeds().join(","));
    let run = hammer(&target, "shared", &[0; 4], 6_000);
    assert_eq!(run.degraded, 0, "every decision was made in Redis");
    assert_never_too_many(&run);
    assert_never_too_few(&run, 3);
}

/// Four processes charging every call to a stacked pair: the sliding log (100 per 2 s) and a token bucket
/// (`burst` 120, 60 per 6 s) decided as one. No interval breaks either guarantee, and a refused call is charged
/// to neither: the bucket admits its whole allowance, no less than a bucket alone would.
#[test]
fn four_processes_keep_both_limits_of_a_stacked_pair() {
    let server = RedisServer::start();
    let run = hammer_with(
        &server.url(),
        "stacked",
        &[0; 4],
        6_000,
        &[("HAMMER_STACKED", "1")],
    );
    assert_eq!(run.degraded, 0, "every decision was made in Redis");
    assert_never_too_many(&run);
    let t = &run.admissions;
    assert_token_bucket_bound(t, 120, 60, 6_000_000, 0);
    // The bucket's allowance over the run, less 1%: refused calls took none of it.
    let span = t[t.len() - 1] - t[0];
    let allowance = 120 + 60 * span / 6_000_000;
    assert!(
        t.len() as u64 * 100 >= allowance * 99,
        "{} admitted of the bucket's {allowance}",
        t.len()
    );
}

/// Four processes, one task in five calling as `Critical`, on a limit that keeps 20% for critical calls: no
/// interval of a window holds more than 100 admissions; a normal call was admitted only while the window held
/// fewer than 80 (its ceiling); the limit is still filled, and the critical calls get at least their share.
#[test]
fn four_processes_keep_the_critical_share() {
    let server = RedisServer::start();
    let env = [("HAMMER_PRIORITIES", "1")];
    let run = hammer_with(&server.url(), "prioritized", &[0; 4], 6_000, &env);
    assert_eq!(run.degraded, 0, "every decision was made in Redis");
    assert_never_too_many(&run);
    assert_never_too_few(&run, 3);
    let t = &run.admissions;
    let mut critical = run.critical.iter().peekable();
    for (j, &at) in t.iter().enumerate() {
        // Admissions at the same microsecond were one script call's: whichever came first, a normal call
        // among them found the window holding what was admitted strictly before it.
        if critical.next_if_eq(&&at).is_some() {
            continue;
        }
        let before = t[..j]
            .iter()
            .filter(|&&s| s > at.saturating_sub(WINDOW_US) && s < at)
            .count();
        assert!(
            before < 80,
            "a normal call admitted with {before} in its window"
        );
    }
    let first = t[0];
    let in_three = run
        .critical
        .iter()
        .filter(|&&at| at < first + 3 * WINDOW_US)
        .count();
    eprintln!(
        "{} admitted, {} of them critical; {in_three} critical in the first 3 windows",
        t.len(),
        run.critical.len()
    );
    assert!(
        in_three * 100 >= 60 * 95,
        "the critical calls' share: {in_three} of 60"
    );
}

/// A calendar quota of 100 a day in Kolkata, hammered by four processes whose own clocks are up to 10 hours
/// apart (less than the period: Redis picks the period on its clock), alone and stacked with a token bucket:
/// no day holds more than 100 admissions, and a day the whole run fell in holds exactly 100.
#[test]
fn four_processes_hours_apart_admit_exactly_a_days_quota() {
    let server = RedisServer::start();
    let hours = |h: i64| h * 3_600_000;
    let skews = [hours(-10), hours(-1), 0, hours(7)];
    for stacked in ["0", "1"] {
        let key = format!("daily-{stacked}");
        let env = [
            ("HAMMER_CALENDAR", "Asia/Kolkata"),
            ("HAMMER_STACKED", stacked),
        ];
        let run = hammer_with(&server.url(), &key, &skews, 2_000, &env);
        assert_eq!(run.degraded, 0, "every decision was made in Redis");
        let tz = jiff::tz::TimeZone::get("Asia/Kolkata").unwrap();
        let mut days = std::collections::BTreeMap::new();
        for &at in &run.admissions {
            let instant = jiff::Timestamp::from_microsecond(at as i64).unwrap();
            *days
                .entry(instant.to_zoned_datetime(tz.clone()).date())
                .or_insert(0) += 1;
        }
        assert!(
            days.values().all(|&n| n <= 100),
            "stacked {stacked}: {days:?}"
        );
        if days.len() == 1 {
            assert_eq!(
                run.admissions.len(),
                100,
                "stacked {stacked}: exactly the quota"
            );
        }
    }
}

/// A token bucket's bound: at most `burst + max · (span + slack) / window` units over any span between two
/// admissions (`slack`: a lease's time to live, µs).
fn assert_token_bucket_bound(t: &[u64], burst: u64, max: u64, window: u64, slack: u64) {
    for i in 0..t.len() {
        for j in i..t.len() {
            let units = (j - i + 1) as u64;
            assert!(
                units * window <= burst * window + max * (t[j] - t[i] + slack),
                "{units} admissions in {} µs",
                t[j] - t[i]
            );
        }
    }
}

/// Four processes spending leases of 20 units (for at most 200 ms) of a token bucket of 100 per 2 s: over any
/// interval t, at most burst + max · (t + 200 ms) / window, as the docs state; and the leases cost the demand
/// nothing: the bucket's allowance is admitted, less 5%.
#[test]
fn four_processes_spending_leases_of_a_token_bucket_keep_its_stated_bound() {
    let server = RedisServer::start();
    let env = [("HAMMER_LEASE", "token_bucket")];
    let run = hammer_with(&server.url(), "leased", &[0; 4], 4_000, &env);
    assert_eq!(
        run.degraded, 0,
        "every decision was made in Redis or a lease"
    );
    let t = &run.admissions;
    assert_token_bucket_bound(t, 100, 100, WINDOW_US, 200_000);
    let allowance = 100 + 100 * (t[t.len() - 1] - t[0]) / WINDOW_US;
    eprintln!(
        "{} admitted of the bucket's {allowance}, {} calls",
        t.len(),
        run.calls
    );
    assert!(
        t.len() as u64 * 100 >= allowance * 95,
        "{} admitted of the bucket's {allowance}",
        t.len()
    );
}

/// The same with a fixed window of 100 per 2 s: never more than 100 in an aligned window, leases or not.
#[test]
fn four_processes_spending_leases_of_a_fixed_window_never_pass_max_per_window() {
    let server = RedisServer::start();
    let env = [("HAMMER_LEASE", "fixed_window")];
    let run = hammer_with(&server.url(), "leased", &[0; 4], 4_000, &env);
    assert_eq!(
        run.degraded, 0,
        "every decision was made in Redis or a lease"
    );
    let mut per_window = std::collections::BTreeMap::new();
    for at in &run.admissions {
        *per_window.entry(at / WINDOW_US).or_insert(0usize) += 1;
    }
    eprintln!("admissions per window: {per_window:?}");
    for (window, admitted) in &per_window {
        assert!(*admitted <= MAX, "{admitted} admissions in window {window}");
    }
    // The windows the run covered whole were filled, less 5%.
    let whole: Vec<_> = per_window
        .values()
        .skip(1)
        .take(per_window.len().saturating_sub(2))
        .collect();
    assert!(!whole.is_empty(), "the run covered no whole window");
    for admitted in whole {
        assert!(
            admitted * 100 >= MAX * 95,
            "under-admitted: {admitted} of {MAX}"
        );
    }
}

#[test]
fn two_processes_with_clocks_5_s_apart_share_one_exact_window() {
    let server = RedisServer::start();
    let run = hammer(&server.url(), "skewed", &[0, 5_000], 4_000);
    // The processes' own clocks really are 5 s apart (each offset is measured against Redis time, so how
    // far apart the processes started does not matter)...
    let apart = run.offsets[1] - run.offsets[0];
    assert!(
        (apart - 5_000_000).abs() < 500_000,
        "own clocks {apart} µs apart"
    );
    // ...and yet they share one exact window.
    assert_eq!(run.degraded, 0);
    assert_never_too_many(&run);
    assert_never_too_few(&run, 2);
}

/// The counterfactual: the same two clocks, passed into the scripts as "now" (the test-only mode of
/// `LimiterBuilder::clock`), let twice the limit through at once. Redis `TIME` is what keeps the window one.
#[tokio::test]
async fn the_same_skew_passed_in_as_now_would_break_the_window() {
    let server = RedisServer::start();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let node = |clock: FakeClock| {
        Limiter::builder()
            .redis(server.url())
            .clock(clock)
            .build()
            .unwrap()
    };
    let (behind, ahead) = (
        node(FakeClock::starting_at(now)),
        node(FakeClock::starting_at(now + Duration::from_secs(5))),
    );
    let rule = Rule::new().max(MAX as u64).window(Duration::from_secs(2));
    let mut admitted = 0;
    for node in [&behind, &ahead] {
        for _ in 0..MAX {
            admitted += usize::from(node.check(&rule, "skewed").await.allowed);
        }
    }
    assert_eq!(
        admitted,
        2 * MAX,
        "the node ahead saw the other's admissions as expired"
    );
}
