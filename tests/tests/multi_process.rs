//! Exactness across OS processes. Four processes of 50 tasks each (`tests/src/bin/hammer.rs`) hammer one
//! limit (max 100, window 2 s) for 6 s, against one Redis and against a Redis Cluster. Every admission is
//! recorded with Redis time (`Decision::decided_at`), and then:
//! - **never too many:** no interval of 2 s holds more than 100 admissions;
//! - **never too few:** every refusal is recorded too, with the Redis time it was decided at, and no call was
//!   refused while its window held fewer admissions than its ceiling (100; 80 for a normal call where 20% is
//!   kept for critical ones). This is exact, and holds however little CPU the processes get: how many are
//!   admitted in a window depends on how soon the callers ask again, whether a call is refused does not.
//!
//! And two processes whose own clocks are 5 s apart still share one exact window, because every decision
//! reads Redis `TIME`; the same two clocks passed into the scripts break it. And with every call charged to a
//! stacked pair (the same limit and a token bucket), both limits' guarantees hold together. A calendar quota
//! (100 a day) admits exactly 100 a day across four processes whose clocks are hours apart. And with 20% kept
//! for critical calls, no normal call is admitted past its ceiling of 80. (A test binary of its own: the
//! processes of one test need the machine's two cores to themselves.)

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
    /// Every refusal, by its Redis time.
    refusals: Vec<Refusal>,
    /// Each process's own clock minus Redis's, µs, measured before the run.
    offsets: Vec<i64>,
    calls: u64,
    degraded: u64,
}

/// A refused call, as a hammer process reported it.
#[derive(Debug)]
struct Refusal {
    /// When it was decided, Redis time, µs (`Decision::decided_at`).
    at: u64,
    /// Its `retry_after`, µs: zero for the deny cache's "ask again now".
    retry_after: u64,
    verdict: String,
    critical: bool,
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
    let (mut admissions, mut critical, mut refusals, mut calls, mut degraded) =
        (Vec::new(), Vec::new(), Vec::new(), 0, 0);
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
                ["refused", at, retry_after, verdict, ref rest @ ..] => refusals.push(Refusal {
                    at: at.parse().unwrap(),
                    retry_after: retry_after.parse().unwrap(),
                    verdict: verdict.to_owned(),
                    critical: match rest {
                        [] => false,
                        ["critical"] => true,
                        _ => panic!("unexpected line {line:?}"),
                    },
                }),
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
    refusals.sort_unstable_by_key(|refusal| refusal.at);
    Run {
        admissions,
        critical,
        refusals,
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

/// Returns how many of the sorted admissions `t` a sliding log counts at `at`: those in `(at - window, at]`.
/// Those at `at` itself are counted: a refusal at the same microsecond as admissions was decided in the same
/// script call as they were (one Redis `TIME`), maybe after them (the script decides its calls in arrival
/// order, which the processes cannot see). This is the one way the count can be more than the script saw; it
/// can hide a wrong refusal only in a script call that also admitted.
fn in_window(t: &[u64], at: u64) -> usize {
    t.partition_point(|&s| s <= at) - t.partition_point(|&s| s + WINDOW_US <= at)
}

/// Never too few: no call was refused while `room(refusal)` says its limit had room for it, given the
/// admissions recorded. A refusal's `decided_at` is Redis's `TIME` when Redis decided it. Served from a node's
/// deny cache, it is the cached refusal's Redis time `D` plus the time since that call was sent (`e`); the
/// cache serves it only while `e < retry_after` as Redis told it (and never past the `HOLD`), and Redis's
/// `retry_after` is when a call of that cost would first be admitted if nothing else happened (other nodes'
/// admissions only make it later): at `D + e` the limit still has no room, so the cached time is checked
/// exactly like Redis's. (A charge given back can end a denial early, but nothing is given back in these runs
/// except leases' units; the lease runs' checks count every unit a lease may hold as still held, so what they
/// allow at `D` they allow at `D + e`.) The one refusal the design makes with room: once a cached denial has
/// run out, one call per node re-asks Redis, and calls meanwhile are refused with a `retry_after` of zero,
/// "ask again now": those are counted, not checked (Redis's own refusals of these limits always carry a
/// positive `retry_after`: the time until the log's blocking admission leaves, the bucket has a token, the
/// fixed window ends). Sanity floor: some call was refused by Redis, so the run reached the limit.
fn assert_never_too_few(run: &Run, mut room: impl FnMut(&Refusal) -> Option<String>) {
    let t = &run.admissions;
    let (mut checked, mut asked_again) = (0, 0);
    for refusal in &run.refusals {
        if refusal.retry_after == 0 {
            asked_again += 1;
            continue;
        }
        checked += 1;
        if let Some(room) = room(refusal) {
            panic!(
                "a call refused ({} at {} µs, retry after {} µs{}) with room: {room}",
                refusal.verdict,
                refusal.at,
                refusal.retry_after,
                if refusal.critical { ", critical" } else { "" }
            );
        }
    }
    // How full the first 3 windows from the first admission were (300 for an ideal limiter and callers that
    // ask again at once): shown, not checked, as it depends on the CPU the callers get.
    let first = t[0];
    let filled = t.iter().filter(|&&at| at < first + 3 * WINDOW_US).count();
    eprintln!(
        "{} calls, {} admitted ({filled} in the first 3 windows), {} refused: {checked} checked, \
         {asked_again} asked to ask again",
        run.calls,
        t.len(),
        run.refusals.len()
    );
    assert!(
        checked > 0,
        "no call was refused: the run never reached the limit"
    );
}

/// [`assert_never_too_few`] for a sliding log of `MAX`: a call of ceiling `ceiling(refusal)` has room while its
/// window holds fewer than that.
fn assert_never_refused_below(run: &Run, ceiling: impl Fn(&Refusal) -> usize) {
    assert_never_too_few(run, |refusal| {
        let held = in_window(&run.admissions, refusal.at);
        (held < ceiling(refusal))
            .then(|| format!("{held} in its window, its ceiling {}", ceiling(refusal)))
    });
}

#[test]
fn four_processes_admit_exactly_the_limit_on_one_redis() {
    let server = RedisServer::start();
    let run = hammer(&server.url(), "shared", &[0; 4], 6_000);
    assert_eq!(run.degraded, 0, "every decision was made in Redis");
    assert_never_too_many(&run);
    assert_never_refused_below(&run, |_| MAX);
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
    assert_never_refused_below(&run, |_| MAX);
}

#[test]
fn four_processes_admit_exactly_the_limit_on_a_cluster() {
    let cluster = RedisCluster::start();
    let target = format!("cluster:{}", cluster.seeds().join(","));
    let run = hammer(&target, "shared", &[0; 4], 6_000);
    assert_eq!(run.degraded, 0, "every decision was made in Redis");
    assert_never_too_many(&run);
    assert_never_refused_below(&run, |_| MAX);
}

/// Four processes charging every call to a stacked pair: the sliding log (100 per 2 s) and a token bucket
/// (`burst` 120, 60 per 6 s) decided as one. No interval breaks either guarantee, and a refused call is charged
/// to neither: no call was refused while both had room for it, as the admissions leave them.
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
    // Never too few, of either: a call was refused only while the log's window held 100, or the bucket, as
    // its admissions leave it (a refused call is charged to neither), had less than a token. A refusal
    // served from the deny cache holds until the later of the two limits' `retry_after`: until then, the
    // limit that told it still has no room (see `assert_never_too_few`).
    let mut bucket = Bucket::new(120, 60, 6_000_000);
    let mut replayed = 0;
    assert_never_too_few(&run, |refusal| {
        while replayed < t.len() && t[replayed] <= refusal.at {
            bucket.admit(t[replayed]);
            replayed += 1;
        }
        let held = in_window(t, refusal.at);
        (held < MAX && bucket.has_room(refusal.at)).then(|| {
            format!(
                "{held} in the log's window, the bucket {} µs·units used of {}",
                bucket.used(refusal.at),
                bucket.capacity()
            )
        })
    });
}

/// A token bucket replayed from its admissions (of one unit each), kept as the limiter keeps it (GCRA, in
/// µs × `max`, one token weighing `window`): the refusals of a limit that holds nothing else (no lease, nothing
/// given back) are checked against it exactly.
struct Bucket {
    burst: u128,
    max: u128,
    window: u128,
    /// When it is full again, µs × `max`.
    full_at: u128,
}

impl Bucket {
    fn new(burst: u64, max: u64, window: u64) -> Bucket {
        Bucket {
            burst: burst.into(),
            max: max.into(),
            window: window.into(),
            full_at: 0,
        }
    }

    /// The part of it in use at `at` (µs), in µs × `max`.
    fn used(&self, at: u64) -> u128 {
        self.full_at.saturating_sub(u128::from(at) * self.max)
    }

    fn capacity(&self) -> u128 {
        self.burst * self.window
    }

    fn admit(&mut self, at: u64) {
        self.full_at = u128::from(at) * self.max + self.used(at) + self.window;
    }

    /// Whether a call of one unit fits at `at`.
    fn has_room(&self, at: u64) -> bool {
        self.used(at) + self.window <= self.capacity()
    }
}

/// Four processes, one task in ten calling as `Critical`, on a limit that keeps 20% for critical calls: no
/// interval of a window holds more than 100 admissions; the critical calls get their share: none was refused
/// while its window held fewer than 100; a normal call was refused only once its window held 80 (its
/// ceiling), and admitted only while it held fewer than 80.
#[test]
fn four_processes_keep_the_critical_share() {
    let server = RedisServer::start();
    let env = [("HAMMER_PRIORITIES", "1")];
    let run = hammer_with(&server.url(), "prioritized", &[0; 4], 6_000, &env);
    assert_eq!(run.degraded, 0, "every decision was made in Redis");
    assert_never_too_many(&run);
    // The critical calls' share, exactly: a critical call is never refused while its window holds fewer than
    // 100 (the whole limit is its ceiling), a normal call never while it holds fewer than 80 (its ceiling,
    // 100 less the 20% kept).
    assert_never_refused_below(&run, |refusal| match refusal.critical {
        true => MAX,
        false => MAX * 80 / 100,
    });
    let t = &run.admissions;
    eprintln!(
        "{} admitted, {} of them critical; critical refusals: {}",
        t.len(),
        run.critical.len(),
        run.refusals
            .iter()
            .filter(|refusal| refusal.critical)
            .count()
    );
    assert!(!run.critical.is_empty(), "no critical call was admitted");
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
/// nothing but the units they hold: no call was refused while the bucket had room, those units counted.
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
    // Never too few: Redis counts a lease's units when it is taken, and a process spends them later (each
    // admission is recorded when spent), so at a refusal Redis's bucket holds what was spent (charged later
    // than taken, which only leaves the replayed bucket fuller) and the units still in leases: at most one
    // lease of 20 per process (one is taken at a time, what is left of the last given back with it), 80 in
    // all. A call was refused only while the bucket replayed from the admissions, plus those 80, had less
    // than a token.
    let mut bucket = Bucket::new(100, 100, WINDOW_US);
    let mut replayed = 0;
    assert_never_too_few(&run, |refusal| {
        while replayed < t.len() && t[replayed] <= refusal.at {
            bucket.admit(t[replayed]);
            replayed += 1;
        }
        let leased = LEASED * bucket.window;
        (bucket.used(refusal.at) + leased + bucket.window <= bucket.capacity()).then(|| {
            format!(
                "the bucket {} µs·units used of {} as replayed, at most {leased} more in leases",
                bucket.used(refusal.at),
                bucket.capacity()
            )
        })
    });
}

/// The units a lease run's four processes hold in leases at once, at most: one lease of 20 each.
const LEASED: u128 = 4 * 20;

/// The same with a fixed window of 100 per 2 s: never more than 100 in an aligned window, leases or not, and
/// no call refused while its window had room, the units in leases counted.
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
    // Never too few: a call was refused only once its window held `MAX`, counting, as Redis does, the units
    // taken in leases when taken: those spent by then (a lease ends with its window, so they are spent in it)
    // and at most `LEASED` not yet spent.
    let t = &run.admissions;
    assert_never_too_few(&run, |refusal| {
        let start = refusal.at - refusal.at % WINDOW_US;
        let held = t.partition_point(|&s| s <= refusal.at) - t.partition_point(|&s| s < start);
        (held + (LEASED as usize) < MAX)
            .then(|| format!("{held} in its window, {LEASED} more in leases at most"))
    });
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
    assert_never_refused_below(&run, |_| MAX);
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
