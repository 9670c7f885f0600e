//! Calendar quotas: counts per day, week or month in a time zone, reset at the period's first instant there.
//!
//! Every trap of the calendar, on both stores, each on a fake clock (Redis decides on the test's "now"): a day
//! of 23 hours and one of 25, a billing day of 31 in February (leap and not), the year's end, two tenants at
//! the same instant in UTC+14 and UTC−11. Then what only Redis can show: the same decisions as memory over a
//! random schedule (stacked with a rate, with give-backs), a client clock hours off changing nothing, a key
//! that expires with its period, and, at the real time on Redis's own clock, the period's end in several
//! zones. And what a client reads: `usage`, and the quota fields of an HTTP answer.

use crate::fields;

use std::net::SocketAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jiff::tz::TimeZone;
use jiff::Timestamp;
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{FakeClock, Limiter, OnError, Period, Rule, Verdict, Zone};
use tests::http::request;
use tests::{RedisServer, Rng};

const HOUR: Duration = Duration::from_secs(3_600);
const MICRO: Duration = Duration::from_micros(1);

/// An instant written as RFC 3339 (`2026-03-29T00:30:00+01:00`), as a duration since the Unix epoch.
fn at(text: &str) -> Duration {
    let instant: Timestamp = text.parse().expect("an RFC 3339 instant");
    Duration::from_micros(instant.as_microsecond() as u64)
}

fn zone(name: &str) -> Zone {
    Zone::get(name).expect("a zone in the bundled data")
}

/// Runs `scenario` on each store, each on a fake clock reading `start`: memory, then Redis told "now" by the
/// test.
async fn on_both<F, Fut>(server: &RedisServer, start: &str, scenario: F)
where
    F: Fn(&'static str, Limiter, FakeClock) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let clock = FakeClock::starting_at(at(start));
    let memory = Limiter::builder().clock(clock.clone()).build().unwrap();
    scenario("memory", memory, clock).await;
    let clock = FakeClock::starting_at(at(start));
    scenario("redis", server.limiter_with_clock(&clock), clock).await;
}

/// Takes what is left of `rule`'s quota for `key` (`max` calls of cost 1), then checks the next call is refused
/// until `end`, and admitted from `end` on (the clock set just before it, then to it).
async fn exhaust_then_reset(
    store: &str,
    limiter: &Limiter,
    clock: &FakeClock,
    rule: &Rule,
    key: &str,
    end: &str,
) {
    let end = at(end);
    loop {
        let decision = limiter.check(rule, key).await;
        assert!(!decision.degraded, "{store}: {decision:?}");
        if !decision.allowed {
            let now = decision.decided_at;
            assert_eq!(
                decision.retry_after,
                end - now,
                "{store}: retry until the period's end"
            );
            assert_eq!(decision.reset_after, end - now, "{store}");
            break;
        }
        assert_eq!(decision.reset_after, end - decision.decided_at, "{store}");
    }
    clock.set(end - MICRO);
    let last = limiter.check(rule, key).await;
    assert!(
        !last.allowed,
        "{store}: still the old period 1 µs before its end"
    );
    assert_eq!(last.retry_after, MICRO, "{store}");
    clock.set(end);
    let first = limiter.check(rule, key).await;
    assert!(first.allowed, "{store}: a new period at {end:?}");
    assert_eq!(first.remaining, first.limit - 1, "{store}: counted afresh");
}

#[tokio::test]
async fn a_day_of_23_hours_and_one_of_25_each_end_at_midnight() {
    let server = RedisServer::start();
    let berlin = Rule::new()
        .prefix("day:")
        .period(Period::Day)
        .tz(zone("Europe/Berlin"))
        .max(3);
    // 2026-03-29: clocks go forward at 02:00 (23 hours); 2026-10-25: back at 03:00 (25 hours).
    on_both(
        &server,
        "2026-03-29T00:00:00+01:00",
        |store, limiter, clock| {
            let rule = berlin.clone();
            async move {
                let first = limiter.check(&rule, "spring").await;
                assert_eq!(first.reset_after, 23 * HOUR, "{store}: a day of 23 hours");
                assert_eq!(first.window, 23 * HOUR, "{store}");
                let end = "2026-03-30T00:00:00+02:00";
                exhaust_then_reset(store, &limiter, &clock, &rule, "spring", end).await;
            }
        },
    )
    .await;
    on_both(
        &server,
        "2026-10-25T00:00:00+02:00",
        |store, limiter, clock| {
            let rule = berlin.clone();
            async move {
                let first = limiter.check(&rule, "autumn").await;
                assert_eq!(first.reset_after, 25 * HOUR, "{store}: a day of 25 hours");
                // The hour that happens twice is one day's.
                clock.set(at("2026-10-25T02:30:00+01:00"));
                let twice = limiter.check(&rule, "autumn").await;
                assert_eq!(twice.remaining, 1, "{store}");
                let end = "2026-10-26T00:00:00+01:00";
                exhaust_then_reset(store, &limiter, &clock, &rule, "autumn", end).await;
            }
        },
    )
    .await;
}

#[tokio::test]
async fn a_billing_day_of_31_is_februarys_last_leap_year_or_not() {
    let server = RedisServer::start();
    let billing = Rule::new()
        .prefix("billing:")
        .period(Period::Month)
        .anchor(31)
        .max(2);
    // 2026: the month from January 31 ends on February 28; the next, from then, on March 31.
    on_both(&server, "2026-02-10T12:00:00Z", |store, limiter, clock| {
        let rule = billing.clone();
        async move {
            exhaust_then_reset(store, &limiter, &clock, &rule, "t", "2026-02-28T00:00:00Z").await;
            let usage = limiter.usage(&rule, "t").await.unwrap();
            assert_eq!(usage.resets_at, "2026-03-31T00:00:00+00:00", "{store}");
            assert_eq!((usage.used, usage.remaining), (1, 1), "{store}");
        }
    })
    .await;
    // 2028, a leap year: February 29.
    on_both(&server, "2028-02-10T12:00:00Z", |store, limiter, clock| {
        let rule = billing.clone();
        async move {
            exhaust_then_reset(store, &limiter, &clock, &rule, "t", "2028-02-29T00:00:00Z").await;
            let usage = limiter.usage(&rule, "t").await.unwrap();
            assert_eq!(usage.resets_at, "2028-03-31T00:00:00+00:00", "{store}");
        }
    })
    .await;
}

#[tokio::test]
async fn the_years_end_starts_a_month_and_a_week_keeps_going() {
    let server = RedisServer::start();
    let new_york = zone("America/New_York");
    let monthly = Rule::new()
        .prefix("m:")
        .period(Period::Month)
        .tz(new_york.clone())
        .max(2);
    // 2026-12-31 is a Thursday: its week ends on Monday 2027-01-04.
    let weekly = Rule::new()
        .prefix("w:")
        .period(Period::Week)
        .tz(new_york)
        .max(2);
    on_both(
        &server,
        "2026-12-31T23:00:00-05:00",
        |store, limiter, clock| {
            let (monthly, weekly) = (monthly.clone(), weekly.clone());
            async move {
                let week = limiter.check(&weekly, "t").await;
                let end = "2027-01-01T00:00:00-05:00";
                exhaust_then_reset(store, &limiter, &clock, &monthly, "t", end).await;
                let usage = limiter.usage(&monthly, "t").await.unwrap();
                assert_eq!(usage.resets_at, "2027-02-01T00:00:00-05:00", "{store}");
                let same_week = limiter.check(&weekly, "t").await;
                assert_eq!(
                    same_week.remaining, 0,
                    "{store}: the week goes on past the year"
                );
                assert_eq!(
                    week.reset_after,
                    at("2027-01-04T00:00:00-05:00") - at("2026-12-31T23:00:00-05:00"),
                    "{store}"
                );
            }
        },
    )
    .await;
}

#[tokio::test]
async fn tenants_in_utc_plus_14_and_utc_minus_11_at_the_same_instant() {
    let server = RedisServer::start();
    let daily = Rule::new().prefix("tenant:").period(Period::Day).max(5);
    let kiritimati = daily.clone().tz(zone("Pacific/Kiritimati"));
    let pago_pago = daily.tz(zone("Pacific/Pago_Pago"));
    // 10:30 UTC: 00:30 on the 27th in Kiritimati, 23:30 on the 25th in Pago Pago.
    on_both(&server, "2026-11-26T10:30:00Z", |store, limiter, _clock| {
        let (east, west) = (kiritimati.clone(), pago_pago.clone());
        async move {
            let early = limiter.check(&east, "east").await;
            let late = limiter.check(&west, "west").await;
            assert_eq!(early.reset_after, 23 * HOUR + HOUR / 2, "{store}");
            assert_eq!(late.reset_after, HOUR / 2, "{store}");
            let east = limiter.usage(&east, "east").await.unwrap();
            let west = limiter.usage(&west, "west").await.unwrap();
            assert_eq!(east.resets_at, "2026-11-28T00:00:00+14:00", "{store}");
            assert_eq!(west.resets_at, "2026-11-26T00:00:00-11:00", "{store}");
            assert_eq!((east.used, west.used), (1, 1), "{store}");
        }
    })
    .await;
}

/// The same seeded schedule (keys, costs, zones, steps of minutes to days across both changes of the clocks)
/// gives identical decisions in memory and on Redis: calls of the quota alone (its own script), stacked with
/// a fixed window (decided as one: a call the window refuses charges the quota nothing), and estimates
/// settled below their estimate (units given back to the period they were charged in, none to a later one).
#[tokio::test]
async fn memory_and_redis_decide_a_calendar_schedule_alike() {
    let server = RedisServer::start();
    let start = at("2026-03-27T18:00:00+01:00");
    let (memory_clock, redis_clock) =
        (FakeClock::starting_at(start), FakeClock::starting_at(start));
    let memory = Limiter::builder()
        .clock(memory_clock.clone())
        .build()
        .unwrap();
    let redis = server.limiter_with_clock(&redis_clock);
    let zones = [
        "Europe/Berlin",
        "America/Sao_Paulo",
        "Australia/Lord_Howe",
        "UTC",
    ]
    .map(zone);
    let periods = [Period::Day, Period::Week, Period::Month];
    let burst = Rule::new()
        .prefix("diff:burst:")
        .window(Duration::from_secs(600))
        .max(4);
    let mut rng = Rng::new(7);
    let (mut admitted, mut refused) = (0, 0);
    for call in 0..2_000 {
        let step = match rng.below(10) {
            0..=4 => rng.below(120),
            5..=7 => rng.below(6 * 3_600),
            _ => rng.below(3 * 86_400),
        };
        memory_clock.advance(Duration::from_secs(step));
        redis_clock.advance(Duration::from_secs(step));
        // A key is counted under one rule: its count is of one period (another zone's or billing day's starts
        // it afresh), and a denial this node keeps is of one `max`.
        let period = *rng.pick(&periods);
        let tz = rng.pick(&zones).clone();
        let anchor = *rng.pick(&[1, 15, 31]);
        let max = *rng.pick(&[3, 10]);
        let quota = Rule::new()
            .prefix(format!("diff:{period}:{tz}:{anchor}:{max}:"))
            .period(period)
            .anchor(anchor)
            .tz(tz)
            .max(max);
        let key = format!("k{}", rng.below(3));
        let cost = *rng.pick(&[1, 1, 2, 3, 0, 11]);
        let path = rng.below(3);
        let (in_memory, in_redis) = match path {
            0 => {
                let decide = |l: &Limiter| {
                    let (quota, key, burst) = (quota.clone(), key.clone(), burst.clone());
                    let l = l.clone();
                    async move {
                        l.all([(&burst, &key, 1), (&quota, &key, cost)])
                            .check()
                            .await
                            .to_vec()
                    }
                };
                (decide(&memory).await, decide(&redis).await)
            }
            1 => {
                let reserve = |l: &Limiter| {
                    let (quota, key) = (quota.clone(), key.clone());
                    let l = l.clone();
                    async move {
                        match l.estimate(&quota, &key).cost(cost).await {
                            Ok(estimate) => {
                                let decision = estimate.decision();
                                estimate.settle(cost / 2).await;
                                vec![decision]
                            }
                            Err(refused) => vec![*refused.decision()],
                        }
                    }
                };
                (reserve(&memory).await, reserve(&redis).await)
            }
            _ => (
                vec![memory.check(&quota, &key).cost(cost).await],
                vec![redis.check(&quota, &key).cost(cost).await],
            ),
        };
        let seen = |ds: &[limiter_runtime::Decision]| {
            ds.iter()
                .map(|d| {
                    (
                        d.allowed,
                        d.remaining,
                        d.retry_after,
                        d.reset_after,
                        d.degraded,
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            seen(&in_memory),
            seen(&in_redis),
            "call {call}: {quota:?} {key} cost {cost}"
        );
        match in_redis.iter().all(|d| d.allowed) {
            true => admitted += 1,
            false => refused += 1,
        }
    }
    assert!(
        admitted > 300 && refused > 300,
        "{admitted} admitted, {refused} refused"
    );
}

/// Today's end in UTC after `now` (µs since the Unix epoch), from first principles.
fn next_midnight_utc(now: Duration) -> Duration {
    let day = Duration::from_secs(86_400);
    Duration::from_secs((now.as_secs() / 86_400 + 1) * 86_400).min(now + day)
}

/// Redis decides which period a call is in on its own clock: a node whose clock is off by hours (less than
/// a period) counts in the very period Redis is in, and the answer's reset is Redis's. A node a whole period
/// behind is refused by the script, and its rule's failure policy decides.
#[tokio::test]
async fn a_node_clock_hours_off_changes_nothing() {
    let server = RedisServer::start();
    let rule = Rule::new()
        .prefix("skew:")
        .period(Period::Day)
        .max(100)
        .on_error(OnError::Closed);
    let real = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let mut used = 0;
    for (name, skew) in [
        ("20 h ahead", 20.0),
        ("20 h behind", -20.0),
        ("3 h ahead", 3.0),
        ("on time", 0.0),
    ] {
        let offset = Duration::from_secs_f64(f64::abs(skew) * 3_600.0);
        let local = match skew >= 0.0 {
            true => real + offset,
            false => real - offset,
        };
        let node = server
            .builder()
            .deadline(tests::PATIENT)
            .local_clock(FakeClock::starting_at(local))
            .build()
            .unwrap();
        let decision = node.check(&rule, "k").await;
        used += 1;
        assert!(
            decision.allowed && !decision.degraded,
            "{name}: {decision:?}"
        );
        assert_eq!(
            decision.remaining,
            100 - used,
            "{name}: one count, whatever the node's clock"
        );
        let redis_now = decision.decided_at;
        assert_eq!(
            decision.reset_after,
            next_midnight_utc(redis_now) - redis_now,
            "{name}"
        );
    }
    let behind = server
        .builder()
        .deadline(tests::PATIENT)
        .local_clock(FakeClock::starting_at(
            real - Duration::from_secs(2 * 86_400),
        ))
        .build()
        .unwrap();
    let decision = behind.check(&rule, "k").await;
    assert!(decision.degraded && !decision.allowed, "{decision:?}");
    assert_eq!(decision.verdict, Verdict::Unavailable);
}

/// A period's key lives until the period ends, on Redis's own clock, and no longer.
#[tokio::test]
async fn a_key_expires_when_its_period_ends() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = Rule::new()
        .prefix("ttl:")
        .period(Period::Day)
        .tz(zone("Asia/Kolkata"))
        .max(3);
    let decision = limiter.check(&rule, "k").await;
    let ttl: i64 = redis::cmd("PTTL")
        .arg("ttl:k")
        .query(&mut server.connection())
        .unwrap();
    let reset = decision.reset_after.as_millis() as i64;
    assert!(
        ttl > 0 && ttl <= reset + 1 && ttl >= reset - 2_000,
        "PTTL {ttl} ms, period ends in {reset} ms"
    );
}

/// At the real time, on Redis's own clock: in each zone the day ends at its next midnight there, as jiff says,
/// and `usage` writes that instant in the zone.
#[tokio::test]
async fn at_the_real_time_each_zone_ends_its_day_at_its_midnight() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let zones = [
        "UTC",
        "Europe/Berlin",
        "America/New_York",
        "Asia/Kolkata",
        "America/St_Johns",
        "Pacific/Kiritimati",
        "Pacific/Pago_Pago",
        "Australia/Lord_Howe",
    ];
    for name in zones {
        let rule = Rule::new()
            .prefix(format!("real:{name}:"))
            .period(Period::Day)
            .tz(zone(name))
            .max(10);
        let decision = limiter.check(&rule, "k").await;
        assert!(
            decision.allowed && !decision.degraded,
            "{name}: {decision:?}"
        );
        let now = Timestamp::from_microsecond(decision.decided_at.as_micros() as i64).unwrap();
        let tz = TimeZone::get(name).unwrap();
        let midnight = now
            .to_zoned_datetime(tz.clone())
            .tomorrow()
            .unwrap()
            .start_of_day()
            .unwrap();
        let expected = Duration::from_micros(
            (midnight.timestamp().as_microsecond() - now.as_microsecond()) as u64,
        );
        assert_eq!(decision.reset_after, expected, "{name}");
        let usage = limiter.usage(&rule, "k").await.unwrap();
        let written = midnight
            .timestamp()
            .display_with_offset(midnight.offset())
            .to_string();
        assert_eq!(
            (usage.used, usage.resets_at.as_str()),
            (1, written.as_str()),
            "{name}"
        );
    }
}

/// What a client reads: a refused call's `Retry-After` and every answer's `t` are the seconds to the
/// period's end (read with a Structured Fields parser), and `w` the period's length.
#[tokio::test]
async fn the_quota_fields_count_down_to_the_periods_end() {
    let server = RedisServer::start();
    let clock = FakeClock::starting_at(at("2026-11-26T22:59:30+01:00"));
    let limiter = server.limiter_with_clock(&clock);
    let rule = Rule::new()
        .prefix("http-day:")
        .policy("daily")
        .period(Period::Day)
        .tz(zone("Europe/Paris"))
        .max(1);
    let app = axum::Router::new()
        .route("/hello", axum::routing::get(|| async { "hello" }))
        .layer(RateLimitLayer::new(&limiter, [rule], Key::peer_ip()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address: SocketAddr = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let admitted = request(address, "GET", "/hello").await;
    assert_eq!(admitted.status, 200);
    let state = &fields::members(&admitted, "ratelimit")[0];
    assert_eq!(
        (state.policy.as_str(), state.get("r"), state.get("t")),
        ("daily", 0, 3_630)
    );
    let policy = &fields::members(&admitted, "ratelimit-policy")[0];
    assert_eq!((policy.get("q"), policy.get("w")), (1, 86_400));
    clock.advance(Duration::from_secs(600));
    let refused = request(address, "GET", "/hello").await;
    assert_eq!(refused.status, 429);
    assert_eq!(fields::members(&refused, "ratelimit")[0].get("t"), 3_030);
    assert_eq!(refused.header("retry-after"), Some("3030"));
}

/// A node told "no more this month" does not keep refusing for weeks what another node gave back: its deny
/// cache re-asks Redis after a second.
#[tokio::test]
async fn a_give_back_on_another_node_is_seen_within_a_second() {
    let server = RedisServer::start();
    let (a, b) = (server.limiter(), server.limiter());
    let monthly = Rule::new().prefix("month:").period(Period::Month).max(1);
    let estimate = b
        .estimate(&monthly, "acme")
        .cost(1)
        .await
        .expect("the month's one unit");
    assert!(
        !a.check(&monthly, "acme").await.allowed,
        "the month is spent"
    );
    let before = server.calls("evalsha");
    assert!(!a.check(&monthly, "acme").await.allowed);
    assert_eq!(
        server.calls("evalsha"),
        before,
        "node a refuses from its deny cache"
    );
    estimate.cancel().await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    assert!(
        a.check(&monthly, "acme").await.allowed,
        "the unit b gave back"
    );
}

/// A tenant, with its own zone and billing day.
struct Tenant {
    id: u64,
    zone: Zone,
    billing_day: u8,
}

/// A month's tokens per tenant, from the tenant's billing day, at midnight in its zone.
#[limiter_runtime::rate_limit(prefix = "tenant-month:", key = tenant.id, period = month, tz = tenant.zone,
                              anchor = tenant.billing_day, max = 1_000, cost = tokens)]
async fn complete(tenant: &Tenant, tokens: u32) -> Result<u32, limiter_runtime::RateLimited> {
    Ok(tokens)
}

/// One call a day per tenant, at midnight in the tenant's zone (`tz = <expr>`, this call's zone).
#[limiter_runtime::rate_limit(prefix = "tenant-day:", key = tenant.id, period = day, tz = tenant.zone, max = 1)]
async fn daily_report(tenant: &Tenant) -> Result<u64, limiter_runtime::RateLimited> {
    Ok(tenant.id)
}

/// The attribute with a zone per call: each tenant's day ends at its own midnight, on both stores, and the
/// zone is borrowed from the arguments, not moved.
#[tokio::test]
async fn a_zone_given_per_call_decides_that_calls_period() {
    let server = RedisServer::start();
    // 22:00 UTC: 03:30 the next day in Kolkata, 23:00 in Lisbon (summer), 22:00 in UTC.
    on_both(
        &server,
        "2026-06-01T22:00:00Z",
        |store, limiter, _clock| async move {
            let tenants = [
                (1, "Asia/Kolkata", 20 * HOUR + HOUR / 2),
                (2, "Europe/Lisbon", HOUR),
                (3, "UTC", 2 * HOUR),
            ];
            limiter
                .scope(async {
                    for (id, name, until_midnight) in tenants {
                        let tenant = Tenant {
                            id,
                            zone: zone(name),
                            billing_day: 1,
                        };
                        assert_eq!(daily_report(&tenant).await.unwrap(), id, "{store}");
                        let refused = daily_report(&tenant).await.unwrap_err();
                        assert_eq!(refused.retry_after(), until_midnight, "{store}: {name}");
                        assert_eq!(tenant.zone.name(), name);
                    }
                })
                .await;
        },
    )
    .await;
}

/// An operator's override of a calendar quota's `max` applies to the period in course (a `window` has no
/// say: the period is the window), and `usage` of a rate tells when it is whole again, in UTC.
#[tokio::test]
async fn an_override_raises_the_months_quota_and_usage_reads_a_rate_too() {
    let server = RedisServer::start();
    let clock = FakeClock::starting_at(at("2026-11-26T12:00:00Z"));
    let limiter = server.limiter_with_clock(&clock);
    let monthly = Rule::new().prefix("ovr:").period(Period::Month).max(1);
    assert!(limiter.check(&monthly, "acme").await.allowed);
    assert!(!limiter.check(&monthly, "acme").await.allowed);
    let raised = limiter_runtime::Override::key("ovr:", "acme")
        .max(3)
        .window(Duration::from_secs(1));
    limiter.set_override(raised).await.unwrap();
    let decision = limiter.check(&monthly, "acme").await;
    assert!(decision.allowed, "{decision:?}");
    assert_eq!((decision.limit, decision.remaining), (3, 1));
    assert_eq!(
        decision.reset_after,
        at("2026-12-01T00:00:00Z") - at("2026-11-26T12:00:00Z")
    );

    let hourly = Rule::new()
        .prefix("rate:")
        .algorithm(limiter_runtime::Algorithm::FixedWindow)
        .window(Duration::from_secs(3_600))
        .max(5);
    limiter.check(&hourly, "acme").await;
    let usage = limiter.usage(&hourly, "acme").await.unwrap();
    assert_eq!((usage.used, usage.remaining), (1, 4));
    assert_eq!(usage.resets_at, "2026-11-26T13:00:00+00:00");
}

/// The attribute with a billing day per call: at one instant, each tenant's month ends on its own day, at
/// midnight in its own zone, on both stores.
#[tokio::test]
async fn a_billing_day_given_per_call_decides_that_calls_month() {
    let server = RedisServer::start();
    on_both(
        &server,
        "2026-02-20T12:00:00Z",
        |store, limiter, _clock| async move {
            let tenants = [
                // From January 31: February's last day, the 28th.
                (1, "UTC", 31, "2026-02-28T00:00:00Z"),
                // From February 15 to March 15, in Tokyo.
                (2, "Asia/Tokyo", 15, "2026-03-15T00:00:00+09:00"),
                // From February 20 at midnight in Honolulu (10:00 UTC), to March 20.
                (3, "Pacific/Honolulu", 20, "2026-03-20T00:00:00-10:00"),
            ];
            limiter
                .scope(async {
                    for (id, name, billing_day, end) in tenants {
                        let tenant = Tenant {
                            id,
                            zone: zone(name),
                            billing_day,
                        };
                        assert_eq!(complete(&tenant, 600).await.unwrap(), 600, "{store}");
                        let refused = complete(&tenant, 600).await.unwrap_err();
                        let now = refused.decision().decided_at;
                        assert_eq!(refused.retry_after(), at(end) - now, "{store}: tenant {id}");
                        assert_eq!(refused.remaining(), 400, "{store}");
                    }
                })
                .await;
        },
    )
    .await;
}

/// A zone the attribute checked at compile time that the running build does not have counts in UTC, and
/// says so once, naming the zone: never silently.
#[tokio::test]
async fn a_checked_zone_unknown_at_run_time_counts_in_utc_and_says_so() {
    use tracing::instrument::WithSubscriber;
    let logs = tests::logs::Captured::default();
    async {
        let limiter = Limiter::builder().build().unwrap();
        let rule = Rule::new()
            .prefix("nowhere:")
            .period(Period::Day)
            .tz_checked("Atlantis/Poseidonia")
            .max(2);
        for _ in 0..3 {
            limiter.check(&rule, "k").await;
        }
    }
    .with_subscriber(logs.subscriber())
    .await;
    let text = logs.text();
    let said = text.matches("Atlantis/Poseidonia was checked").count();
    assert_eq!(said, 1, "{text}");
    assert!(text.contains("count their periods in UTC"), "{text}");
}

/// A give-back reaches only the period its charge was made in: settled after that period ended, it takes
/// nothing of the next one. And a key's count carries into the period of another zone, or of another
/// billing day, while its own period is current (`guide::limits`).
#[tokio::test]
async fn nothing_goes_back_to_an_ended_period_and_another_zone_or_day_carries_the_count() {
    let server = RedisServer::start();
    on_both(
        &server,
        "2026-05-10T22:00:00+00:00",
        |store, limiter, clock| async move {
            let daily = Rule::new()
                .prefix(format!("ended:{store}:"))
                .period(Period::Day)
                .max(5);
            // 3 reserved on the 10th, settled on the 11th having used none of them.
            let reserved = limiter.estimate(&daily, "k").cost(3).await.unwrap();
            clock.set(at("2026-05-11T01:00:00+00:00"));
            for _ in 0..5 {
                assert!(limiter.check(&daily, "k").await.allowed, "{store}");
            }
            reserved.settle(0).await;
            let sixth = limiter.check(&daily, "k").await;
            assert!(
                !sixth.allowed,
                "{store}: the 10th's give-back took nothing of the 11th: {sixth:?}"
            );

            // The same key, its day in Tokyo: the five of the UTC day, still current, count in Tokyo's.
            let tokyo = daily.clone().tz(zone("Asia/Tokyo"));
            let first = limiter.check(&tokyo, "k").await;
            assert!(!first.allowed && first.remaining == 0, "{store}: {first:?}");

            // The same key, billed from the 1st, then from the 11th: the month's five count in the other.
            let monthly = Rule::new()
                .prefix(format!("billed:{store}:"))
                .period(Period::Month)
                .max(5);
            for _ in 0..5 {
                assert!(limiter.check(&monthly.clone().anchor(1), "k").await.allowed);
            }
            assert!(!limiter.check(&monthly.clone().anchor(1), "k").await.allowed);
            let other = limiter.check(&monthly.clone().anchor(11), "k").await;
            assert!(!other.allowed && other.remaining == 0, "{store}: {other:?}");
        },
    )
    .await;
}
