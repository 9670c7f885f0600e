//! Differential: the same seeded schedule of calls (many keys, mixed costs, controlled times) gives
//! identical decisions in memory and in Redis, for every algorithm. A mismatch names the first diverging call.
//!
//! Seeds 3 and 4 keep shares of the limit for the higher priorities ([`Rule::reserve`]) and give each call a
//! priority: a call fits only under its own ceiling, in both stores alike. So do the stacked runs of seeds 4
//! to 6 and the batched rounds: each limit's share, each call's priority.
//!
//! Run twice: without the deny cache, whole decisions are identical; with it (the default), whether each call
//! is admitted, its `retry_after` and its limit still are (a cached answer's `remaining` and `reset_after` are
//! as Redis last reported them).

use std::sync::Arc;
use std::time::Duration;

use limiter_runtime::{Algorithm, Decision, FakeClock, Limiter, Penalty, Priority, Rule};
use tests::{RedisServer, Rng};

const CALLS: usize = 3_000;

/// One schedule: a rule, then calls at times the schedule controls.
async fn replay(algorithm: Algorithm, seed: u64, server: &RedisServer, deny_cache: bool) {
    let mut rng = Rng::new(seed);
    let window = Duration::from_micros(
        *rng.pick(&[1_000_000, 1_500_000, 10_000_000, 60_000_000, 3_333_333]),
    );
    // A cost is a weight: a limit of millions takes costs of millions, each one entry.
    let max = *rng.pick(&[1, 3, 7, 10, 100, 10_000_000]);
    let mut rule = Rule::new()
        .algorithm(algorithm)
        .window(window)
        .max(max)
        .prefix(format!("diff:{seed}:"));
    if algorithm == Algorithm::TokenBucket {
        rule = rule.burst(*rng.pick(&[1, max, 2 * max + 1]));
    }
    let mut max_wait = Duration::ZERO;
    if algorithm == Algorithm::LeakyBucket {
        max_wait = *rng.pick(&[Duration::ZERO, window, window / 3]);
        rule = rule.max_wait(max_wait);
    }
    // Its own generator, so that the schedules of seeds 1 and 2 stay as they were.
    let mut priorities = Rng::new(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let prioritized = seed >= 3;
    if prioritized {
        rule = rule
            .reserve(Priority::Critical, *priorities.pick(&[10, 20, 50]))
            .reserve(Priority::High, *priorities.pick(&[0, 30, 60]));
    }

    let memory_clock = FakeClock::new();
    let redis_clock = FakeClock::new();
    let memory = Limiter::builder()
        .clock(memory_clock.clone())
        .build()
        .unwrap();
    let redis = Limiter::builder()
        .redis(server.url())
        .deadline(tests::PATIENT)
        .clock(redis_clock.clone())
        .deny_cache(deny_cache)
        .prefix(format!("diff:{deny_cache}:"))
        .build()
        .unwrap();
    let slot = window.as_micros() as u64 / max;
    let (mut admitted, mut rejected, mut delayed, mut reserved) = (0, 0, 0, 0);

    for call in 0..CALLS {
        // Mostly bursts and steps around one slot, sometimes whole windows.
        let step = match rng.below(10) {
            0..=2 => 0,
            3..=6 => rng.below(2 * slot + 1),
            7 | 8 => rng.below(window.as_micros() as u64 / 4 + 1),
            _ => rng.below(3 * window.as_micros() as u64),
        };
        memory_clock.advance(Duration::from_micros(step));
        redis_clock.advance(Duration::from_micros(step));
        let key = format!("k{}", rng.below(12));
        let heavy = rng.below(max + 1);
        let cost = *rng.pick(&[1, 1, 1, 1, 2, 3, 0, max, max + 1, heavy, heavy]);

        let priority = match prioritized {
            true => *priorities.pick(&Priority::ALL),
            false => Priority::Normal,
        };
        let in_memory = memory
            .check(&rule, &key)
            .cost(cost)
            .priority(priority)
            .await;
        let in_redis = redis.check(&rule, &key).cost(cost).priority(priority).await;
        assert!(!in_redis.degraded, "Redis failed at call {call}");
        let compared = |d: &limiter_runtime::Decision| {
            if deny_cache {
                (
                    d.allowed,
                    d.verdict,
                    d.retry_after,
                    d.limit,
                    Duration::ZERO,
                    0,
                )
            } else {
                (
                    d.allowed,
                    d.verdict,
                    d.retry_after,
                    d.limit,
                    d.reset_after,
                    d.remaining,
                )
            }
        };
        assert_eq!(in_memory.delay, in_redis.delay);
        assert_eq!(
            compared(&in_memory),
            compared(&in_redis),
            "{algorithm:?}, seed {seed}, deny cache {deny_cache}: first divergence at call {call} (key {key}, cost {cost}, \
             priority {priority}, rule {rule:?}):\n memory {in_memory:?}\n redis  {in_redis:?}"
        );
        admitted += usize::from(in_memory.allowed);
        rejected += usize::from(!in_memory.allowed);
        delayed += usize::from(!in_memory.delay.is_zero());
        reserved += usize::from(in_memory.verdict == limiter_runtime::Verdict::Reserved);
    }
    // Agreement means something only if the schedule exercised both answers.
    assert!(
        admitted > 100 && rejected > 100,
        "{algorithm:?}, seed {seed}: {admitted} admitted, {rejected} rejected"
    );
    if max_wait.is_zero() {
        assert_eq!(delayed, 0, "without max_wait nothing waits");
    }
    assert_eq!(
        reserved > 0,
        prioritized,
        "{algorithm:?}, seed {seed}: {reserved} refused for a share kept above them"
    );
}

async fn differential(algorithm: Algorithm) {
    let server = RedisServer::start();
    for seed in 1..=4 {
        let _: () = redis::cmd("FLUSHALL")
            .query(&mut server.connection())
            .unwrap();
        replay(algorithm, seed, &server, false).await;
        let _: () = redis::cmd("FLUSHALL")
            .query(&mut server.connection())
            .unwrap();
        replay(algorithm, seed, &server, true).await;
    }
}

#[tokio::test]
async fn sliding_log() {
    differential(Algorithm::SlidingLog).await;
}

#[tokio::test]
async fn fixed_window() {
    differential(Algorithm::FixedWindow).await;
}

#[tokio::test]
async fn sliding_window() {
    differential(Algorithm::SlidingWindow).await;
}

#[tokio::test]
async fn token_bucket() {
    differential(Algorithm::TokenBucket).await;
}

#[tokio::test]
async fn leaky_bucket() {
    differential(Algorithm::LeakyBucket).await;
}

/// One random limit of a stacked schedule.
fn random_rule(rng: &mut Rng, name: &str) -> Rule {
    let algorithm = *rng.pick(&Algorithm::ALL);
    let window = Duration::from_micros(*rng.pick(&[1_000_000, 1_500_000, 10_000_000, 3_333_333]));
    let max = *rng.pick(&[2, 3, 5, 1_000_000]);
    let mut rule = Rule::new()
        .prefix(format!("{name}:"))
        .algorithm(algorithm)
        .window(window)
        .max(max);
    if algorithm == Algorithm::TokenBucket {
        rule = rule.burst(*rng.pick(&[1, max, 2 * max + 1]));
    }
    if algorithm == Algorithm::LeakyBucket {
        rule = rule.max_wait(*rng.pick(&[Duration::ZERO, window, window / 3]));
    }
    rule
}

/// `rule`, keeping shares of its limit for the higher priorities when `prioritized` (`rng`'s draws, as the single
/// limit's schedules draw them: critical 10, 20 or 50%, high 0, 30 or 60%). (Its own generator, so that the
/// schedules drawn without priorities stay as they were.)
fn maybe_reserved(rng: &mut Rng, rule: Rule, prioritized: bool) -> Rule {
    if !prioritized {
        return rule;
    }
    rule.reserve(Priority::Critical, *rng.pick(&[10, 20, 50]))
        .reserve(Priority::High, *rng.pick(&[0, 30, 60]))
}

/// `rule`, under a penalty half the time (`rng`'s draw): blocks read and written in the call that counts, and
/// their decay. (Its own generator, so that the schedules drawn without penalties stay as they were.)
fn maybe_penalized(rng: &mut Rng, rule: Rule) -> Rule {
    if rng.below(2) == 0 {
        return rule;
    }
    let first = Duration::from_micros(*rng.pick(&[300_000, 1_000_000, 2_500_000]));
    let cap = first * *rng.pick(&[1, 4]);
    rule.penalty(Penalty::escalating(first, cap))
}

/// Stacked calls (two or three limits of random algorithms) and estimates settled or cancelled later, the
/// same seeded schedule in memory and in Redis: identical decisions, call by call. From seed 4, each limit keeps
/// shares for the higher priorities and each stacked call has a priority: some calls are refused for a share
/// kept above them ([`Verdict::Reserved`](limiter_runtime::Verdict::Reserved)), alike in both stores.
///
/// With the deny cache, a cached answer of a call reports its other limits as Redis last did (another call
/// sharing one of their keys may have charged it since) and a charge given back by another call can end a
/// denial early: so that run makes no estimates, and compares whether each call is admitted, which stays
/// exact.
async fn replay_stacked(seed: u64, server: &RedisServer, deny_cache: bool) {
    let mut rng = Rng::new(seed);
    let tag = format!("stacked:{seed}:{deny_cache}");
    let mut penalties = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    // Its own generator, so that the schedules of seeds 1 to 3 stay as they were.
    let mut priorities = Rng::new(seed.wrapping_mul(0xD1B5_4A32_D192_ED03));
    let prioritized = seed >= 4;
    let rules = [
        random_rule(&mut rng, &format!("{tag}:a")),
        random_rule(&mut rng, &format!("{tag}:b")),
        random_rule(&mut rng, &format!("{tag}:c")),
    ]
    .map(|rule| maybe_penalized(&mut penalties, rule))
    .map(|rule| maybe_reserved(&mut priorities, rule, prioritized));
    let (memory_clock, redis_clock) = (FakeClock::new(), FakeClock::new());
    let memory = Limiter::builder()
        .clock(memory_clock.clone())
        .build()
        .unwrap();
    let redis = Limiter::builder()
        .redis(server.url())
        .deadline(tests::PATIENT)
        .clock(redis_clock.clone())
        .deny_cache(deny_cache)
        .build()
        .unwrap();
    let compared = |d: &limiter_runtime::Decision| {
        (
            d.allowed,
            d.retry_after,
            d.limit,
            d.reset_after,
            d.remaining,
            d.delay,
            d.verdict,
        )
    };
    // With the deny cache, only whether the call is admitted: every part of it the same.
    let verdicts = |in_memory: &[limiter_runtime::Decision],
                    in_redis: &[limiter_runtime::Decision]| {
        let seen = |decisions: &[limiter_runtime::Decision]| -> Vec<_> {
            match deny_cache {
                true => {
                    let admitted = decisions.iter().all(|d| d.allowed);
                    vec![(
                        admitted,
                        Duration::ZERO,
                        0,
                        Duration::ZERO,
                        0,
                        Duration::ZERO,
                        limiter_runtime::Verdict::Admitted,
                    )]
                }
                false => decisions.iter().map(compared).collect(),
            }
        };
        (seen(in_memory), seen(in_redis))
    };
    let mut held = Vec::new();
    let (mut admitted, mut refused, mut settled, mut reserved) = (0, 0, 0, 0);
    let any_reserved = |decisions: &[Decision]| {
        decisions
            .iter()
            .any(|d| d.verdict == limiter_runtime::Verdict::Reserved)
    };
    for call in 0..1_500 {
        let step = match rng.below(10) {
            0..=5 => 0,
            6..=8 => rng.below(300_000),
            _ => rng.below(3_000_000),
        };
        memory_clock.advance(Duration::from_micros(step));
        redis_clock.advance(Duration::from_micros(step));
        let key = |rng: &mut Rng| format!("k{}", rng.below(2));
        let cost = |rng: &mut Rng| *rng.pick(&[1, 1, 1, 2, 3, 0, 600_000]);
        let priority = match prioritized {
            true => *priorities.pick(&Priority::ALL),
            false => Priority::Normal,
        };
        let context = format!(
            "seed {seed}, deny cache {deny_cache}, call {call}, priority {priority}, rules {rules:?}"
        );
        match rng.below(10) {
            0..=4 => {
                let (i, j) = *rng.pick(&[(0, 1), (1, 2), (2, 0)]);
                let limits = [
                    (&rules[i], key(&mut rng), cost(&mut rng)),
                    (&rules[j], key(&mut rng), cost(&mut rng)),
                ];
                let in_memory = memory.all(limits.clone()).check().priority(priority).await;
                let in_redis = redis.all(limits.clone()).check().priority(priority).await;
                let (m, r) = verdicts(&in_memory, &in_redis);
                assert_eq!(
                    m, r,
                    "{context}: {limits:?}\n memory {in_memory:?}\n redis {in_redis:?}"
                );
                let all = in_memory.iter().all(|d| d.allowed);
                admitted += usize::from(all);
                refused += usize::from(!all);
                reserved += usize::from(any_reserved(&in_memory));
            }
            5 => {
                let limits = [0, 1, 2].map(|i| (&rules[i], key(&mut rng), cost(&mut rng)));
                let in_memory = memory.all(limits.clone()).check().priority(priority).await;
                let in_redis = redis.all(limits.clone()).check().priority(priority).await;
                let (m, r) = verdicts(&in_memory, &in_redis);
                assert_eq!(
                    m, r,
                    "{context}: {limits:?}\n memory {in_memory:?}\n redis {in_redis:?}"
                );
                reserved += usize::from(any_reserved(&in_memory));
            }
            6..=7 if !deny_cache => {
                let (rule, key, estimate) = (rng.pick(&rules), key(&mut rng), cost(&mut rng) * 2);
                let in_memory = memory.estimate(rule, &key).cost(estimate).await;
                let in_redis = redis.estimate(rule, &key).cost(estimate).await;
                match (in_memory, in_redis) {
                    (Ok(m), Ok(r)) => {
                        assert_eq!(
                            compared(&m.decision()),
                            compared(&r.decision()),
                            "{context}: reserve {key}"
                        );
                        held.push((m, r, estimate));
                    }
                    (Err(m), Err(r)) => {
                        assert_eq!(
                            compared(m.decision()),
                            compared(r.decision()),
                            "{context}: reserve {key}"
                        )
                    }
                    (m, r) => panic!("{context}: reserve {key}: memory {m:?}, Redis {r:?}"),
                }
            }
            8..=9 if !held.is_empty() => {
                let (m, r, estimate) = held.swap_remove(rng.below(held.len() as u64) as usize);
                let used = rng.below(estimate + 1);
                m.settle(used).await;
                r.settle(used).await;
                settled += 1;
            }
            _ => {}
        }
    }
    assert!(
        admitted > 50 && refused > 50,
        "{admitted} admitted, {refused} refused"
    );
    assert!(deny_cache || settled > 50, "{settled} settled");
    // Each prioritized seed refuses 166 to 380 of its 1,500 calls for a share: at least 100 of them.
    assert!(
        match prioritized {
            true => reserved > 100,
            false => reserved == 0,
        },
        "seed {seed}: {reserved} refused for a share kept above them"
    );
}

#[tokio::test]
async fn stacked_calls_and_give_backs() {
    let server = RedisServer::start();
    for seed in 1..=6 {
        replay_stacked(seed, &server, false).await;
        replay_stacked(seed, &server, true).await;
    }
}

/// One call of a batched round: each limit's rule (an index), key, cost and the call's priority.
type Limits = Vec<(usize, String, u64, Priority)>;

/// What one limiter decides of `limits` (one call, stacked or not, of the first limit's priority: a call's
/// limits share one).
async fn decide(limiter: &Limiter, rules: &[Rule], limits: &Limits) -> Vec<Decision> {
    let at = |i: usize| {
        let (rule, key, cost, _) = &limits[i];
        (&rules[*rule], key.as_str(), *cost)
    };
    let priority = limits[0].3;
    match limits.len() {
        1 => {
            let (rule, key, cost) = at(0);
            vec![limiter.check(rule, key).cost(cost).priority(priority).await]
        }
        2 => limiter
            .all([at(0), at(1)])
            .check()
            .priority(priority)
            .await
            .to_vec(),
        _ => limiter
            .all([at(0), at(1), at(2)])
            .check()
            .priority(priority)
            .await
            .to_vec(),
    }
}

/// Batched: 64 calls at once, round after round, on a frozen clock that moves between rounds; random keys,
/// algorithms, costs and stacked limits. In a round, no two calls share a key, so what each is decided does
/// not depend on the order Redis runs them: Redis, deciding them in batches of many keys, answers each call
/// exactly as memory does, whole decisions compared (verdict, limit, remaining, retry, reset, delay); and the
/// batches are few script calls ([`batch_across_keys`](limiter_runtime::LimiterBuilder::batch_across_keys)).
/// Four of the six rules keep shares for the higher priorities, and each call has a priority: a call refused for
/// a share kept above it is refused so in both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batched_calls_on_many_keys_decide_as_memory_does() {
    const TASKS: usize = 64;
    let server = RedisServer::start();
    let mut rng = Rng::new(40);
    // Its own generator, so that the rounds' keys and costs stay as they were.
    let mut priorities = Rng::new(41);
    let rules: Arc<Vec<Rule>> = Arc::new(
        (0..6)
            .map(|i| random_rule(&mut rng, &format!("batched:{i}")))
            .enumerate()
            .map(|(i, rule)| maybe_reserved(&mut priorities, rule, i >= 2))
            .collect(),
    );
    let (memory_clock, redis_clock) = (FakeClock::new(), FakeClock::new());
    let memory = Limiter::builder()
        .clock(memory_clock.clone())
        .build()
        .unwrap();
    let redis = Limiter::builder()
        .redis(server.url())
        .batch_across_keys(true)
        .deadline(tests::PATIENT)
        .clock(redis_clock.clone())
        .deny_cache(false)
        .build()
        .unwrap();
    let (mut decisions, mut admitted, mut refused, mut reserved) = (0, 0, 0, 0);
    let scripts_before = server.calls("evalsha") + server.calls("eval");
    for round in 0..60 {
        let step = Duration::from_micros(*rng.pick(&[0, 0, 100_000, 700_000, 2_000_000]));
        memory_clock.advance(step);
        redis_clock.advance(step);
        // Keys of this round, each for one limit of one call: a shuffled pool of 400.
        let mut pool: Vec<u64> = (0..400).collect();
        for i in (1..pool.len()).rev() {
            pool.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut keys = pool.into_iter();
        let calls: Vec<Limits> = (0..TASKS)
            .map(|_| {
                let mut picked: Vec<usize> = (0..rules.len()).collect();
                let n = *rng.pick(&[1, 1, 1, 2, 3]);
                let priority = *priorities.pick(&Priority::ALL);
                (0..n)
                    .map(|_| {
                        let rule = picked.swap_remove(rng.below(picked.len() as u64) as usize);
                        let cost = *rng.pick(&[1, 1, 1, 2, 3, 0, 600_000]);
                        (rule, format!("k{}", keys.next().unwrap()), cost, priority)
                    })
                    .collect()
            })
            .collect();
        let mut in_memory = Vec::with_capacity(TASKS);
        for call in &calls {
            in_memory.push(decide(&memory, &rules, call).await);
        }
        let tasks: Vec<_> = calls
            .iter()
            .cloned()
            .map(|call| {
                let (redis, rules) = (redis.clone(), Arc::clone(&rules));
                tokio::spawn(async move { decide(&redis, &rules, &call).await })
            })
            .collect();
        for ((task, call), in_memory) in tasks.into_iter().zip(&calls).zip(in_memory) {
            let in_redis = task.await.unwrap();
            // Whole decisions: verdict, limit, remaining, retry, reset, delay, when each was decided.
            assert_eq!(
                in_memory, in_redis,
                "round {round}: {call:?}\n memory {in_memory:?}\n redis {in_redis:?}"
            );
            decisions += 1;
            reserved += usize::from(
                in_memory
                    .iter()
                    .any(|d| d.verdict == limiter_runtime::Verdict::Reserved),
            );
            match in_memory.iter().all(|d| d.allowed) {
                true => admitted += 1,
                false => refused += 1,
            }
        }
    }
    let scripts = server.calls("evalsha") + server.calls("eval") - scripts_before;
    assert!(
        admitted > 500 && refused > 100,
        "{admitted} admitted, {refused} refused"
    );
    // 398 of its 3,840 calls are refused for a share kept above them: at least 50.
    assert!(
        reserved > 50,
        "{reserved} refused for a share kept above them"
    );
    assert!(
        scripts * 4 <= decisions,
        "{scripts} script calls for {decisions} decisions: not batched"
    );
    eprintln!("{decisions} decisions ({reserved} refused for a share) in {scripts} script calls");
}

/// A token bucket's estimates settled in random order while it drains: its records of give-backs out of
/// order, in memory and in Redis's scripts, leave the same bucket after every step.
#[tokio::test]
async fn a_bucket_settled_in_any_order_while_it_drains() {
    let server = RedisServer::start();
    for seed in 1..=4 {
        let mut rng = Rng::new(seed);
        let rule = Rule::new()
            .prefix(format!("drains:{seed}:"))
            .algorithm(Algorithm::TokenBucket)
            .max(*rng.pick(&[10, 7]))
            .window(Duration::from_secs(1))
            .burst(40);
        let (memory_clock, redis_clock) = (FakeClock::new(), FakeClock::new());
        let memory = Limiter::builder()
            .clock(memory_clock.clone())
            .build()
            .unwrap();
        let redis = Limiter::builder()
            .redis(server.url())
            .deadline(tests::PATIENT)
            .deny_cache(false)
            .clock(redis_clock.clone())
            .build()
            .unwrap();
        let mut held = Vec::new();
        let mut settled = 0;
        for step in 0..400 {
            match rng.below(10) {
                0..=3 => {
                    let cost = 1 + rng.below(8);
                    let m = memory.estimate(&rule, "k").cost(cost).await;
                    let r = redis.estimate(&rule, "k").cost(cost).await;
                    assert_eq!(m.is_ok(), r.is_ok(), "seed {seed}, step {step}");
                    if let (Ok(m), Ok(r)) = (m, r) {
                        held.push((m, r, cost));
                    }
                }
                4..=7 if !held.is_empty() => {
                    let (m, r, cost) = held.swap_remove(rng.below(held.len() as u64) as usize);
                    let used = rng.below(cost + 1);
                    m.settle(used).await;
                    r.settle(used).await;
                    settled += 1;
                }
                _ => {
                    let step = Duration::from_micros(rng.below(400_000));
                    memory_clock.advance(step);
                    redis_clock.advance(step);
                }
            }
            let (m, r) = (
                memory.check(&rule, "k").cost(0).await,
                redis.check(&rule, "k").cost(0).await,
            );
            assert_eq!(
                (m.remaining, m.reset_after),
                (r.remaining, r.reset_after),
                "seed {seed}, step {step}"
            );
        }
        assert!(settled > 100, "{settled} settled");
    }
}

/// Pauses `key` of `rule` on `limiter` for `seconds`, as a turn whose upstream answered 429 does (the turn
/// cancelled: its slot given back). The key is one no call has charged yet, so the turn's slot is now.
async fn pause(limiter: &Limiter, rule: &Rule, key: &str, seconds: u64) {
    let turn = limiter.turn(rule, key).await.expect("a fresh key's turn");
    let retry = seconds.to_string();
    let left = turn
        .answered(429, [("retry-after", retry.as_str())])
        .await
        .unwrap();
    assert_eq!(left, Some(Duration::from_secs(seconds)));
    turn.cancel().await;
}

/// Upstreams' pauses on a leaky bucket and a token bucket: the same seeded schedule of pauses and of calls (alone
/// and stacked) in memory and in Redis gives identical decisions, whole. While its key is paused, the leaky
/// bucket gives slots after the pause, or refuses a call whose slot is past its wait (`Limited`), and the
/// token bucket refuses as blocked. The calls read their keys' blocks while a ban is in force under their
/// policies; seeds 3 and 4 put the leaky bucket under a penalty too (no offence while paused). Each pause is
/// of a fresh key, so that the turn that writes it takes its slot now.
async fn replay_paused(seed: u64, server: &RedisServer) {
    let mut rng = Rng::new(seed);
    let window = Duration::from_micros(*rng.pick(&[1_000_000, 1_500_000, 3_333_333]));
    let max = *rng.pick(&[3, 7, 10, 100]);
    let max_wait = *rng.pick(&[Duration::ZERO, window / 3, window, 3 * window]);
    let mut line = Rule::new()
        .prefix(format!("paused:{seed}:line:"))
        .algorithm(Algorithm::LeakyBucket)
        .window(window)
        .max(max)
        .max_wait(max_wait);
    if seed >= 3 {
        line = line.penalty(Penalty::escalating(
            Duration::from_millis(300),
            Duration::from_millis(1_200),
        ));
    }
    let tokens = Rule::new()
        .prefix(format!("paused:{seed}:tokens:"))
        .algorithm(Algorithm::TokenBucket)
        .window(window)
        .max(max);
    let (memory_clock, redis_clock) = (FakeClock::new(), FakeClock::new());
    let memory = Limiter::builder()
        .clock(memory_clock.clone())
        .build()
        .unwrap();
    let redis = Limiter::builder()
        .redis(server.url())
        .deadline(tests::PATIENT)
        .clock(redis_clock.clone())
        .deny_cache(false)
        .build()
        .unwrap();
    for limiter in [&memory, &redis] {
        for rule in [&line, &tokens] {
            let banned = Duration::from_secs(36_000);
            limiter.ban(rule, "banned", banned).await.unwrap();
        }
    }
    // Each of four keys in turn, a fresh one after each pause; when its pause ends (on the fake clocks), for
    // the leaky bucket and the token bucket.
    let (mut generation, mut paused_until) = ([0u32; 4], [[Duration::ZERO; 2]; 4]);
    let mut now = Duration::ZERO;
    let (mut waited, mut refused, mut blocked, mut pauses) = (0, 0, 0, 0);
    for call in 0..1_000 {
        let step = Duration::from_micros(match rng.below(10) {
            0..=4 => 0,
            5..=8 => rng.below(window.as_micros() as u64 / 2),
            _ => rng.below(3 * window.as_micros() as u64),
        });
        memory_clock.advance(step);
        redis_clock.advance(step);
        now += step;
        let slot = rng.below(4) as usize;
        let paused = paused_until[slot].map(|until| until > now);
        let key = format!("k{slot}.{}", generation[slot]);
        let cost = *rng.pick(&[1, 1, 1, 2, 0, max, max + 1]);
        let context = format!("seed {seed}, call {call}, key {key}, cost {cost}, {line:?}");
        // Each decision in both stores, and which rule decided it (0: the leaky bucket).
        let decided = match rng.below(12) {
            0 if !paused[0] && !paused[1] => {
                generation[slot] += 1;
                let key = format!("k{slot}.{}", generation[slot]);
                let seconds = 1 + rng.below(3);
                let both = rng.below(2) == 0;
                for limiter in [&memory, &redis] {
                    pause(limiter, &line, &key, seconds).await;
                    if both {
                        pause(limiter, &tokens, &key, seconds).await;
                    }
                }
                let until = now + Duration::from_secs(seconds);
                paused_until[slot] = [until, if both { until } else { Duration::ZERO }];
                pauses += 1;
                continue;
            }
            1..=6 => {
                let m = memory.check(&line, &key).cost(cost).await;
                let r = redis.check(&line, &key).cost(cost).await;
                vec![(0, m, r)]
            }
            7..=8 => {
                let limits = [(&line, key.as_str(), cost), (&tokens, key.as_str(), 1)];
                let m = memory.all(limits).check().await.to_vec();
                let r = redis.all(limits).check().await.to_vec();
                m.into_iter()
                    .zip(r)
                    .enumerate()
                    .map(|(i, (m, r))| (i, m, r))
                    .collect()
            }
            _ => {
                let m = memory.check(&tokens, &key).cost(cost.min(max)).await;
                let r = redis.check(&tokens, &key).cost(cost.min(max)).await;
                vec![(1, m, r)]
            }
        };
        for (i, m, r) in &decided {
            assert!(!r.degraded, "{context}: Redis failed");
            assert_eq!(m, r, "{context}:\n memory {m:?}\n redis  {r:?}");
            if !paused[*i] {
                continue;
            }
            let left = paused_until[slot][*i] - now;
            match i {
                0 => {
                    waited += usize::from(m.allowed && m.delay >= left);
                    refused += usize::from(m.verdict == limiter_runtime::Verdict::Limited);
                    assert_ne!(m.verdict, limiter_runtime::Verdict::Blocked, "{context}");
                }
                _ => {
                    assert_eq!(m.verdict, limiter_runtime::Verdict::Blocked, "{context}");
                    blocked += 1;
                }
            }
        }
    }
    // The schedule exercised every answer a pause gives (each seed: 58 to 76 pauses; 25 to 72 calls given a
    // slot after one, 12 to 40 blocked, 5 to 90 refused).
    assert!(
        pauses > 50 && waited > 20 && blocked > 10,
        "seed {seed}: {pauses} pauses, {waited} calls given a slot after one, {blocked} blocked"
    );
    assert!(
        refused > 4,
        "seed {seed}: {refused} refused while paused (max wait {max_wait:?})"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_pauses_on_a_leaky_bucket() {
    let server = RedisServer::start();
    for seed in 1..=4 {
        replay_paused(seed, &server).await;
    }
}
