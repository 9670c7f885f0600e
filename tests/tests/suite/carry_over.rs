//! Carry-over: what a key's count keeps when its limit changes between two calls on it (another rule for the
//! same prefix, as a reloaded limits file gives; an operator's override), for every algorithm, in memory and
//! on Redis alike (each call is decided by both stores, on clocks moved together, and their decisions must
//! agree): raising `max` admits exactly the difference at once, lowering it admits nothing past it, a changed
//! window keeps what falls in the new one, a bucket's level carries by its rule's `Carry`, an algorithm change
//! starts the key afresh (never degraded) and says so, and the same terms again change nothing. The table is
//! `guide::limits`'s.

use std::time::Duration;

use limiter_runtime::{
    Algorithm, Carry, Decision, FakeClock, Limiter, Override, Period, Permit, Rule,
};
use tests::logs::Captured;
use tests::{RedisServer, Rng, PATIENT};
use tracing::instrument::WithSubscriber;

const SECOND: Duration = Duration::from_secs(1);

/// A memory limiter and a Redis one, each on its own fake clock, moved together.
struct Both {
    memory: Limiter,
    redis: Limiter,
    clocks: [FakeClock; 2],
}

/// What both stores must agree on of a decision (without a deny cache, all of it but when it was made).
fn seen(d: &Decision) -> (bool, u64, Duration, Duration, Duration, u64) {
    (
        d.allowed,
        d.remaining,
        d.retry_after,
        d.reset_after,
        d.delay,
        d.limit,
    )
}

impl Both {
    /// Both stores, at `start` (since the Unix epoch).
    fn new(server: &RedisServer, start: Duration) -> Both {
        let clocks = [FakeClock::starting_at(start), FakeClock::starting_at(start)];
        let memory = Limiter::builder().clock(clocks[0].clone()).build().unwrap();
        let redis = server
            .builder()
            .deadline(PATIENT)
            .deny_cache(false)
            .clock(clocks[1].clone())
            .build()
            .unwrap();
        Both {
            memory,
            redis,
            clocks,
        }
    }

    fn advance(&self, by: Duration) {
        for clock in &self.clocks {
            clock.advance(by);
        }
    }

    /// Decides a call of `cost` on `key` under `rule` in both stores: neither degraded, both alike.
    async fn check(&self, rule: &Rule, key: &str, cost: u64) -> Decision {
        let memory = self.memory.check(rule, key).cost(cost).await;
        let redis = self.redis.check(rule, key).cost(cost).await;
        assert!(
            !memory.degraded && !redis.degraded,
            "{rule:?} {key}: {redis:?}"
        );
        assert_eq!(
            seen(&memory),
            seen(&redis),
            "{rule:?} {key}:\n memory {memory:?}\n redis  {redis:?}"
        );
        memory
    }

    /// Takes a permit of `rule` (in flight) for `key` in both stores, alike; the permits, if taken.
    async fn acquire(&self, rule: &Rule, key: &str) -> Option<[Permit; 2]> {
        let memory = self.memory.acquire(rule, key).await;
        let redis = self.redis.acquire(rule, key).await;
        match (memory, redis) {
            (Ok(memory), Ok(redis)) => Some([memory, redis]),
            (Err(memory), Err(redis)) => {
                let decisions = (memory.decision(), redis.decision());
                assert!(!decisions.1.degraded, "{rule:?} {key}: {redis:?}");
                assert_eq!(seen(decisions.0), seen(decisions.1), "{rule:?} {key}");
                None
            }
            (memory, redis) => panic!("{rule:?} {key}: memory {memory:?}, redis {redis:?}"),
        }
    }

    /// Counts the calls of `rule` on `key` admitted out of `calls` at once (permits, in flight, kept in `held`).
    async fn admitted(
        &self,
        rule: &Rule,
        key: &str,
        calls: usize,
        held: &mut Vec<[Permit; 2]>,
    ) -> usize {
        let mut admitted = 0;
        for _ in 0..calls {
            let allowed = match rule_is_in_flight(rule) {
                true => self
                    .acquire(rule, key)
                    .await
                    .map(|permits| held.push(permits))
                    .is_some(),
                false => self.check(rule, key, 1).await.allowed,
            };
            admitted += usize::from(allowed);
        }
        admitted
    }
}

/// Whether `rule` is a limit of calls in flight (its own rule's `Debug` tells; the rule keeps it private).
fn rule_is_in_flight(rule: &Rule) -> bool {
    format!("{rule:?}").contains("InFlight")
}

/// Mid-March 2026, noon UTC, a whole minute: where the calendar's periods are a day and a month.
const START: Duration = Duration::from_secs(1_773_576_000);

/// A rule of `algorithm` under `prefix`, of `max` per `window` (a calendar's: per day; in flight: `max` at once).
fn rule(prefix: &str, algorithm: Algorithm, max: u64, window: Duration) -> Rule {
    let rule = Rule::new().prefix(prefix.to_owned());
    match algorithm {
        Algorithm::Calendar => rule.period(Period::Day).max(max),
        Algorithm::InFlight => rule.in_flight(max),
        _ => rule.algorithm(algorithm).max(max).window(window),
    }
}

/// The algorithms that count: the windows, the log, the calendar, in flight.
const COUNTING: [Algorithm; 5] = [
    Algorithm::SlidingLog,
    Algorithm::FixedWindow,
    Algorithm::SlidingWindow,
    Algorithm::Calendar,
    Algorithm::InFlight,
];

/// Checks that a limit raised while its key is full admits exactly the difference at once, by a new rule (a
/// reload) or by an operator's override, for every algorithm that counts.
#[tokio::test]
async fn raising_max_admits_exactly_the_difference_at_once() {
    let server = RedisServer::start();
    let both = Both::new(&server, START);
    let hour = Duration::from_secs(3_600);
    let mut held = Vec::new();
    for algorithm in COUNTING {
        let prefix = format!("raise:{algorithm}:");
        assert_eq!(
            both.admitted(&rule(&prefix, algorithm, 5, hour), "k", 7, &mut held)
                .await,
            5
        );
        let raised = rule(&prefix, algorithm, 8, hour);
        assert_eq!(
            both.admitted(&raised, "k", 5, &mut held).await,
            3,
            "{algorithm}"
        );
    }
    // An override raises a key's limit alike.
    for algorithm in [Algorithm::SlidingLog, Algorithm::FixedWindow] {
        let prefix = format!("raise:override:{algorithm}:");
        let five = rule(&prefix, algorithm, 5, hour);
        assert_eq!(both.admitted(&five, "k", 6, &mut held).await, 5);
        for limiter in [&both.memory, &both.redis] {
            let raised = Override::key(prefix.clone(), "k").max(7);
            limiter.set_override(raised).await.unwrap();
        }
        assert_eq!(
            both.admitted(&five, "k", 4, &mut held).await,
            2,
            "{algorithm}"
        );
    }
}

/// Checks that a limit lowered below what its key holds admits nothing in the current window, then exactly
/// what is left under a limit raised again.
#[tokio::test]
async fn lowering_max_admits_nothing_past_the_new_max() {
    let server = RedisServer::start();
    let both = Both::new(&server, START);
    let hour = Duration::from_secs(3_600);
    let mut held = Vec::new();
    for algorithm in COUNTING {
        let prefix = format!("lower:{algorithm}:");
        assert_eq!(
            both.admitted(&rule(&prefix, algorithm, 6, hour), "k", 4, &mut held)
                .await,
            4
        );
        let lowered = rule(&prefix, algorithm, 3, hour);
        assert_eq!(
            both.admitted(&lowered, "k", 3, &mut held).await,
            0,
            "{algorithm}"
        );
        both.advance(SECOND);
        assert_eq!(
            both.admitted(&lowered, "k", 3, &mut held).await,
            0,
            "{algorithm}"
        );
        let five = rule(&prefix, algorithm, 5, hour);
        assert_eq!(
            both.admitted(&five, "k", 3, &mut held).await,
            1,
            "{algorithm}"
        );
    }
}

/// Checks that a changed window keeps what the old one still counts and falls in the new one: the log its
/// admissions by their times; a fixed window its whole count, into the window now is in, while its own is
/// current; a sliding window what it weighs; a calendar's day its count, into the month.
#[tokio::test]
async fn a_changed_window_keeps_what_falls_in_the_new_one() {
    let server = RedisServer::start();
    let both = Both::new(&server, START);
    let mut held = Vec::new();
    let minute = Duration::from_secs(60);

    // The log: three at 0 s, two at 30 s; at 40 s a window of 20 s counts the two only.
    let log = |window| rule("window:log:", Algorithm::SlidingLog, 5, window);
    assert_eq!(both.admitted(&log(minute), "k", 3, &mut held).await, 3);
    both.advance(30 * SECOND);
    assert_eq!(both.admitted(&log(minute), "k", 3, &mut held).await, 2);
    both.advance(10 * SECOND);
    assert_eq!(both.admitted(&log(20 * SECOND), "k", 5, &mut held).await, 3);
    // Grown again at 45 s: the two of 30 s and the three of 40 s count (those of 0 s had left).
    both.advance(5 * SECOND);
    assert_eq!(both.admitted(&log(minute), "k", 1, &mut held).await, 0);

    // A fixed window (at 45 s): five in the minute; a window of 10 s at 55 s holds them until 60 s, then
    // counts anew.
    let fixed = |window, max| rule("window:fixed:", Algorithm::FixedWindow, max, window);
    assert_eq!(both.admitted(&fixed(minute, 5), "k", 5, &mut held).await, 5);
    both.advance(10 * SECOND);
    assert_eq!(
        both.admitted(&fixed(10 * SECOND, 5), "k", 1, &mut held)
            .await,
        0
    );
    both.advance(10 * SECOND);
    assert_eq!(
        both.admitted(&fixed(10 * SECOND, 5), "k", 6, &mut held)
            .await,
        5
    );
    // Grown to a minute at 68 s: the window of 10 s is current, its five move into the minute's.
    both.advance(3 * SECOND);
    assert_eq!(both.admitted(&fixed(minute, 8), "k", 4, &mut held).await, 3);
    // Once the old window has ended, nothing moves: a window of 10 s at 128 s counts from zero.
    both.advance(60 * SECOND);
    assert_eq!(
        both.admitted(&fixed(10 * SECOND, 5), "k", 6, &mut held)
            .await,
        5
    );

    // A sliding window: ten at 128 s, in the minute of 120 s; at 210 s they weigh half, five units, which
    // move into a window of 30 s.
    let sliding = |window| rule("window:sliding:", Algorithm::SlidingWindow, 10, window);
    assert_eq!(
        both.admitted(&sliding(minute), "k", 10, &mut held).await,
        10
    );
    both.advance(82 * SECOND);
    assert_eq!(
        both.admitted(&sliding(30 * SECOND), "k", 10, &mut held)
            .await,
        5
    );

    // A calendar: three today of a daily quota of 5; a monthly quota of 10 counts them.
    let daily = Rule::new()
        .prefix("window:calendar:")
        .period(Period::Day)
        .max(5);
    let monthly = Rule::new()
        .prefix("window:calendar:")
        .period(Period::Month)
        .max(10);
    assert_eq!(both.admitted(&daily, "k", 3, &mut held).await, 3);
    assert_eq!(both.admitted(&monthly, "k", 10, &mut held).await, 7);
}

/// A token bucket of `burst`, refilled at `max` a second, carrying by `carry`.
fn bucket(prefix: &str, max: u64, burst: u64, carry: Carry) -> Rule {
    Rule::new()
        .prefix(prefix.to_owned())
        .algorithm(Algorithm::TokenBucket)
        .window(SECOND)
        .max(max)
        .burst(burst)
        .carry(carry)
}

/// Checks that a token bucket keeps its share of the burst (proportional, the default) or its tokens, at
/// most the burst (as is), when its burst or rate changes; never refilled, even changed back.
#[tokio::test]
async fn a_token_bucket_carries_its_level_proportionally_or_as_is() {
    let server = RedisServer::start();
    let both = Both::new(&server, START);
    // Each case: the burst and rate it changes to, and the tokens left of the three a bucket of 10 kept.
    let cases = [
        (Carry::Proportional, 20, 20, 6),
        (Carry::AsIs, 20, 20, 3),
        (Carry::Proportional, 10, 5, 1),
        (Carry::AsIs, 10, 5, 3),
        (Carry::AsIs, 10, 2, 2),
        (Carry::Proportional, 20, 10, 3),
        (Carry::AsIs, 5, 10, 3),
    ];
    for (i, (carry, max, burst, left)) in cases.into_iter().enumerate() {
        let prefix = format!("bucket:{i}:");
        let before = bucket(&prefix, 10, 10, carry);
        for _ in 0..7 {
            assert!(both.check(&before, "k", 1).await.allowed);
        }
        let after = bucket(&prefix, max, burst, carry);
        let decision = both.check(&after, "k", 1).await;
        assert_eq!(
            decision.remaining + u64::from(decision.allowed),
            left,
            "{carry:?} to {max}/{burst}: {decision:?}"
        );
    }
    // Changed back, a bucket is not refilled: 30% of 20 is 6 tokens, 14 in use; of 10, 7 in use again.
    let before = bucket("bucket:back:", 10, 10, Carry::Proportional);
    for _ in 0..7 {
        assert!(both.check(&before, "k", 1).await.allowed);
    }
    let doubled = bucket("bucket:back:", 20, 20, Carry::Proportional);
    assert_eq!(both.check(&doubled, "k", 0).await.remaining, 6);
    assert_eq!(both.check(&before, "k", 0).await.remaining, 3);
    // The level left is what an operator's inspection reads, in both stores.
    let memory = both.memory.inspect(&before, "k").await.unwrap();
    let redis = both.redis.inspect(&before, "k").await.unwrap();
    assert_eq!((memory.used, memory.remaining), (7, 3), "{memory:?}");
    assert_eq!((redis.used, redis.remaining), (7, 3), "{redis:?}");
}

/// A leaky bucket of `max` slots a second, a call waiting up to `wait` seconds for its slot, carrying by
/// `carry`.
fn line(prefix: &str, max: u64, wait: u64, carry: Carry) -> Rule {
    Rule::new()
        .prefix(prefix.to_owned())
        .algorithm(Algorithm::LeakyBucket)
        .window(SECOND)
        .max(max)
        .max_wait(Duration::from_secs(wait))
        .carry(carry)
}

/// Checks that a leaky bucket's line keeps its slots, spaced anew (proportional), or its end (as is: every call
/// admitted keeps its slot) when its rate changes; and that a call's wait, its own patience, moves nothing.
#[tokio::test]
async fn a_leaky_line_carries_its_slots_or_its_end() {
    let server = RedisServer::start();
    let both = Both::new(&server, START);
    // Five queued at 10 a second: the line ends at 0.5 s. Each case: the rate and wait it changes to, and the
    // next call's delay (ms).
    let cases = [
        (Carry::Proportional, 20, 1, 250),
        (Carry::Proportional, 5, 1, 1_000),
        (Carry::Proportional, 10, 2, 500),
        (Carry::AsIs, 20, 1, 500),
        (Carry::AsIs, 5, 1, 500),
        (Carry::AsIs, 10, 2, 500),
    ];
    for (i, (carry, max, wait, delay)) in cases.into_iter().enumerate() {
        let prefix = format!("line:{i}:");
        let before = line(&prefix, 10, 1, carry);
        for _ in 0..5 {
            assert!(both.check(&before, "k", 1).await.allowed);
        }
        let decision = both.check(&line(&prefix, max, wait, carry), "k", 1).await;
        assert!(decision.allowed, "{decision:?}");
        assert_eq!(
            decision.delay,
            Duration::from_millis(delay),
            "{carry:?} to {max} a second, waiting {wait} s"
        );
    }
}

/// Every algorithm, in flight and the calendar included.
const EVERY: [Algorithm; 7] = [
    Algorithm::SlidingLog,
    Algorithm::FixedWindow,
    Algorithm::SlidingWindow,
    Algorithm::TokenBucket,
    Algorithm::LeakyBucket,
    Algorithm::InFlight,
    Algorithm::Calendar,
];

/// Checks that a key counted by one algorithm, then asked by another (its rule's algorithm changed), starts
/// afresh in both stores, never degraded (no `WRONGTYPE` from Redis), told once per prefix in the log. But a
/// sliding log on Redis that finds permits in flight under its key (the same sorted set) counts them as
/// admissions while they are held: it admits less, never more, and is not told.
#[tokio::test]
async fn an_algorithm_change_starts_the_key_afresh_and_says_so() {
    let server = RedisServer::start();
    let both = Both::new(&server, START);
    let hour = Duration::from_secs(3_600);
    let mut held = Vec::new();
    for from in EVERY {
        for to in EVERY {
            if from == to || (from, to) == (Algorithm::InFlight, Algorithm::SlidingLog) {
                continue;
            }
            let prefix = format!("afresh:{from}:{to}:");
            let before = rule(&prefix, from, 2, hour);
            both.admitted(&before, "k", 3, &mut held).await;
            // As a key never counted: three, a line's one (it waits for no slot).
            let after = rule(&prefix, to, 3, hour);
            let fresh = both.admitted(&after, "fresh", 4, &mut held).await;
            assert_eq!(
                both.admitted(&after, "k", 4, &mut held).await,
                fresh,
                "{from} then {to}"
            );
        }
    }
    // In flight, then a log: in memory, afresh; on Redis, the two permits held count.
    let permits = rule("afresh:permits:", Algorithm::InFlight, 2, hour);
    let _permits = (
        both.memory.acquire(&permits, "k").await.unwrap(),
        both.redis.acquire(&permits, "k").await.unwrap(),
    );
    let log = rule("afresh:permits:", Algorithm::SlidingLog, 3, hour);
    assert_eq!(both.memory.check(&log, "k").await.remaining, 2);
    let redis = both.redis.check(&log, "k").await;
    assert!(redis.allowed && !redis.degraded, "{redis:?}");
    assert_eq!(redis.remaining, 1, "the permit counts as an admission");

    // Told once per prefix, at warn level, by each store.
    let logs = Captured::default();
    async {
        let fixed = rule("afresh:told:", Algorithm::FixedWindow, 2, hour);
        let bucket = rule("afresh:told:", Algorithm::TokenBucket, 2, hour);
        for key in ["a", "b"] {
            assert!(both.check(&fixed, key, 1).await.allowed);
            assert!(both.check(&bucket, key, 1).await.allowed);
        }
        // Redis alone says so too.
        let fixed = rule("afresh:told:redis:", Algorithm::FixedWindow, 2, hour);
        let bucket = rule("afresh:told:redis:", Algorithm::TokenBucket, 2, hour);
        assert!(both.redis.check(&fixed, "a").await.allowed);
        assert!(both.redis.check(&bucket, "a").await.allowed);
    }
    .with_subscriber(logs.subscriber())
    .await;
    let text = logs.text();
    let told = text.matches("held another algorithm's count").count();
    assert_eq!(told, 2, "once per prefix, whichever store: {text}");
    assert!(
        text.contains("WARN") && text.contains("prefix=\"afresh:told:redis:\""),
        "{text}"
    );
}

/// Checks that the same terms again, however the rule is built (a reloaded file gives an equal rule; the carry
/// names how a change carries, and is none), change nothing: no reset, no refill, for every algorithm. A key
/// asked by the reloaded rule decides exactly as one asked by the first.
#[tokio::test]
async fn the_same_terms_again_change_nothing() {
    let server = RedisServer::start();
    let both = Both::new(&server, START);
    let minute = Duration::from_secs(60);
    let mut held = Vec::new();
    for algorithm in EVERY {
        let prefix = format!("same:{algorithm}:");
        let first = rule(&prefix, algorithm, 4, minute);
        let again = rule(&prefix, algorithm, 4, minute).carry(Carry::AsIs);
        let reloaded = match algorithm {
            Algorithm::TokenBucket => again.burst(4),
            Algorithm::LeakyBucket => again.max_wait(Duration::ZERO),
            _ => again,
        };
        let kept = both.admitted(&first, "kept", 3, &mut held).await;
        assert_eq!(both.admitted(&first, "reloaded", 3, &mut held).await, kept);
        // A token bucket refills part of a token meanwhile, which a carry would round away.
        both.advance(7 * SECOND);
        for _ in 0..3 {
            if algorithm == Algorithm::InFlight {
                let kept = both
                    .acquire(&first, "kept")
                    .await
                    .map(|permits| held.push(permits));
                let again = both
                    .acquire(&reloaded, "reloaded")
                    .await
                    .map(|permits| held.push(permits));
                assert_eq!(kept.is_some(), again.is_some());
                continue;
            }
            let kept = both.check(&first, "kept", 1).await;
            let again = both.check(&reloaded, "reloaded", 1).await;
            assert_eq!(seen(&kept), seen(&again), "{algorithm}");
        }
    }
}

/// Checks that a sliding log on Redis whose window grew keeps its key as long as its newest admission counts
/// in the new window, refused calls or not (its expiry was set for the old one).
#[tokio::test]
async fn a_grown_log_keeps_its_key_on_redis() {
    let server = RedisServer::start();
    let both = Both::new(&server, START);
    let log = |minutes: u64| {
        rule(
            "ttl:",
            Algorithm::SlidingLog,
            2,
            Duration::from_secs(60 * minutes),
        )
    };
    let mut held = Vec::new();
    assert_eq!(both.admitted(&log(20), "k", 2, &mut held).await, 2);
    both.advance(10 * SECOND);
    assert_eq!(both.admitted(&log(60), "k", 1, &mut held).await, 0);
    let ttl: i64 = redis::cmd("PTTL")
        .arg("ttl:k")
        .query(&mut server.connection())
        .unwrap();
    assert!(
        ttl > 3_500_000,
        "the key lives its newest admission's new window: {ttl} ms"
    );
}

/// Checks that a seeded schedule of calls whose limit changes between calls (its max, window, burst, wait,
/// the carry) decides alike in both stores, for every algorithm of a rate.
#[tokio::test]
async fn limit_changes_between_calls_decide_alike_in_both_stores() {
    let server = RedisServer::start();
    for algorithm in Algorithm::ALL {
        for seed in 1..=2 {
            let both = Both::new(&server, START);
            let mut rng = Rng::new(seed);
            let prefix = format!("changes:{algorithm}:{seed}:");
            // A log's window stays: its key outlives the window here (a test's keys live 10 minutes at least,
            // as Redis expires them on its own clock), so admissions that left a shorter window, and which its
            // key would have taken with it, count again under a longer one; in memory, they expired.
            let windows: &[u64] = match algorithm {
                Algorithm::SlidingLog => &[1_500_000],
                _ => &[1_000_000, 1_500_000, 3_333_333],
            };
            let rules: Vec<Rule> = (0..3)
                .map(|_| {
                    let window = Duration::from_micros(*rng.pick(windows));
                    let max = *rng.pick(&[1, 3, 7, 10, 100]);
                    let carry = *rng.pick(&[Carry::Proportional, Carry::AsIs]);
                    let rule = rule(&prefix, algorithm, max, window).carry(carry);
                    match algorithm {
                        Algorithm::TokenBucket => rule.burst(*rng.pick(&[1, max, 2 * max + 1])),
                        Algorithm::LeakyBucket => {
                            rule.max_wait(*rng.pick(&[Duration::ZERO, window, window / 3]))
                        }
                        _ => rule,
                    }
                })
                .collect();
            let (mut admitted, mut refused) = (0, 0);
            for _ in 0..600 {
                let rule = match rng.below(8) {
                    0 => &rules[1],
                    1 => &rules[2],
                    _ => &rules[0],
                };
                let step = match rng.below(10) {
                    0..=3 => 0,
                    4..=8 => rng.below(400_000),
                    _ => rng.below(4_000_000),
                };
                both.advance(Duration::from_micros(step));
                let key = format!("k{}", rng.below(3));
                let cost = *rng.pick(&[1, 1, 1, 2, 3, 0]);
                let decision = both.check(rule, &key, cost).await;
                admitted += usize::from(decision.allowed);
                refused += usize::from(!decision.allowed);
            }
            assert!(
                admitted > 30 && refused > 30,
                "{algorithm}: {admitted} admitted, {refused} refused"
            );
        }
    }
}
