//! The deny cache's own rules: what it answers, until when, and what a probe does.

use super::*;

const T0: Duration = Duration::from_secs(3_600);

fn denied(retry_after: Duration) -> Decision {
    Decision {
        allowed: false,
        limit: 5,
        window: Duration::from_secs(10),
        remaining: 0,
        retry_after,
        reset_after: Duration::from_secs(9),
        delay: Duration::ZERO,
        decided_at: Duration::from_secs(1_000),
        degraded: false,
        in_flight: false,
        verdict: crate::Verdict::Limited,
    }
}

const DEADLINE: Duration = Duration::from_millis(50);

fn get(cache: &DenyCache, key: &str, cost: u64, now: Duration) -> Lookup {
    cache.get(key.into(), [cost].into_iter(), now, DEADLINE, false)
}

fn denied_now(cache: &DenyCache, key: &str, cost: u64, now: Duration) -> Option<Decision> {
    match get(cache, key, cost, now) {
        Lookup::Denied(decisions) => Some(decisions[0]),
        _ => None,
    }
}

/// Returns an admission, as Redis reports it.
fn admitted() -> Decision {
    Decision {
        allowed: true,
        ..denied(Duration::ZERO)
    }
}

/// Tells `cache` Redis denied a call of cost 1 on `k`, sent at `T0`, for 500 ms.
fn denied_for_500ms(cache: &DenyCache) {
    answered(cache, "k", 1, denied(Duration::from_millis(500)), T0, false);
}

fn answered(
    cache: &DenyCache,
    key: &str,
    cost: u64,
    decision: Decision,
    sent: Duration,
    probe: bool,
) {
    cache.answered(
        key.into(),
        [cost].into_iter(),
        &[decision],
        decision.allowed,
        sent,
        probe,
    );
}

#[test]
fn answers_until_retry_after_from_the_send() {
    let cache = DenyCache::default();
    let sent = T0;
    answered(
        &cache,
        "k",
        2,
        denied(Duration::from_millis(500)),
        sent,
        false,
    );
    let later = sent + Duration::from_millis(200);
    let cached = denied_now(&cache, "k", 2, later).unwrap();
    assert_eq!(cached.retry_after, Duration::from_millis(300));
    assert_eq!(cached.decided_at, Duration::from_millis(1_000_200));
    assert!(
        matches!(get(&cache, "k", 3, later), Lookup::Miss),
        "another cost: ask Redis"
    );
    assert!(matches!(get(&cache, "other", 2, later), Lookup::Miss));
}

#[test]
fn while_redis_fails_a_denial_that_ran_out_holds_nothing_back() {
    let cache = DenyCache::default();
    denied_for_500ms(&cache);
    let fails = |now| cache.get("k".into(), [1].into_iter(), now, DEADLINE, true);
    assert!(
        matches!(fails(T0 + Duration::from_millis(499)), Lookup::Denied(_)),
        "a denial still running is exact"
    );
    let expired = T0 + Duration::from_millis(500);
    assert!(matches!(get(&cache, "k", 1, expired), Lookup::Probe));
    // A probe is out, and Redis fails: no call is held back by it.
    assert!(matches!(fails(expired), Lookup::Miss));
    assert!(matches!(fails(expired + DEADLINE), Lookup::Miss));
}

#[test]
fn once_expired_one_call_at_a_time_re_asks() {
    let cache = DenyCache::default();
    denied_for_500ms(&cache);
    let expired = T0 + Duration::from_millis(500);
    assert!(matches!(get(&cache, "k", 1, expired), Lookup::Probe));
    let meanwhile = denied_now(&cache, "k", 1, expired).expect("denied while the probe is out");
    assert_eq!(meanwhile.retry_after, Duration::ZERO, "ask again now");
    // A probe that never reports back is given up after the deadline.
    assert!(matches!(
        get(&cache, "k", 1, expired + DEADLINE),
        Lookup::Probe
    ));
    // The probe was admitted: the next call probes in turn.
    answered(&cache, "k", 1, admitted(), expired, true);
    assert!(matches!(get(&cache, "k", 1, expired), Lookup::Probe));
    // That one was denied again: a fresh denial.
    answered(
        &cache,
        "k",
        1,
        denied(Duration::from_millis(100)),
        expired,
        true,
    );
    assert!(denied_now(&cache, "k", 1, expired + Duration::from_millis(50)).is_some());
    // An admission seen outside a probe forgets the key.
    answered(&cache, "k", 1, admitted(), expired, false);
    assert!(matches!(get(&cache, "k", 1, expired), Lookup::Miss));
}

#[test]
fn keeps_no_degraded_decision() {
    let cache = DenyCache::default();
    let mut degraded = denied(Duration::from_secs(1));
    degraded.degraded = true;
    answered(&cache, "a", 1, degraded, T0, false);
    assert!(matches!(get(&cache, "a", 1, T0), Lookup::Miss));
    answered(&cache, "c", 1, denied(Duration::from_secs(1)), T0, false);
    cache.clear();
    assert!(matches!(get(&cache, "c", 1, T0), Lookup::Miss));
}

/// Checks that a call of several limits is denied until the last of its refusing limits would admit it, and only a
/// call of the same costs is answered.
#[test]
fn a_call_of_several_limits_is_denied_until_the_last_would_admit_it() {
    let cache = DenyCache::default();
    let admitted = Decision {
        allowed: true,
        ..denied(Duration::ZERO)
    };
    let decisions = [
        denied(Duration::from_millis(200)),
        admitted,
        denied(Duration::from_millis(500)),
    ];
    cache.answered(
        "call".into(),
        [1, 2, 1].into_iter(),
        &decisions,
        false,
        T0,
        false,
    );
    let later = T0 + Duration::from_millis(300);
    match cache.get("call".into(), [1, 2, 1].into_iter(), later, DEADLINE, false) {
        Lookup::Denied(decisions) => {
            let [a, b, c] = [decisions[0], decisions[1], decisions[2]];
            assert_eq!(a.retry_after, Duration::ZERO);
            assert!(b.allowed && b.retry_after.is_zero());
            assert_eq!(c.retry_after, Duration::from_millis(200));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        cache.get("call".into(), [1, 1, 1].into_iter(), later, DEADLINE, false),
        Lookup::Miss
    ));
    let expired = T0 + Duration::from_millis(500);
    assert!(matches!(
        cache.get(
            "call".into(),
            [1, 2, 1].into_iter(),
            expired,
            DEADLINE,
            false
        ),
        Lookup::Probe
    ));
}

/// Checks that a denial of weeks (a month's quota) is held for a second, telling the weeks left, and then one call
/// re-asks Redis: another node's give-backs are seen by then.
#[test]
fn a_long_denial_is_held_one_second_then_re_asked() {
    let cache = DenyCache::default();
    let weeks = Duration::from_secs(14 * 86_400);
    answered(&cache, "month", 1, denied(weeks), T0, false);
    let held = denied_now(&cache, "month", 1, T0 + Duration::from_millis(999));
    assert_eq!(
        held.map(|d| d.retry_after),
        Some(weeks - Duration::from_millis(999))
    );
    assert!(matches!(get(&cache, "month", 1, T0 + HOLD), Lookup::Probe));
}
