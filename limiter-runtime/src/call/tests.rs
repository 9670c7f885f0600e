//! The call's unit tests: what an override, a plan and a rule each set of a call's terms.

use super::*;
use crate::overrides::Override;

/// Checks that an override of `max` moves what follows it (a bucket's capacity, unless set), and `mode = wait`
/// waits up to the window as overridden.
#[test]
fn overrides_win_and_carry_what_depends_on_them() {
    let overrides = Overrides::default();
    let target = Override::key("p:", "k")
        .max(4)
        .window(Duration::from_secs(2));
    overrides.apply(&crate::overrides::Change::Set(target), None);
    let rule = Rule::new()
        .prefix("p:")
        .max(10)
        .window(Duration::from_secs(1))
        .wait();
    let charge = |rule: &Rule, key: &str| {
        let ask = Ask {
            rule: RuleRef::Borrowed(rule),
            key: StoreKey::of_str("p:", key),
            cost: 1,
            skip: false,
            zone: None,
            anchor: None,
            plan: None,
            priority: Priority::Normal,
        };
        Call::new(&overrides, &crate::FakeClock::new(), [ask]).limits()[0].terms
    };
    let overridden = charge(&rule, "k");
    assert_eq!((overridden.max, overridden.burst), (4, 4));
    assert_eq!(
        (overridden.window, overridden.max_wait),
        (2_000_000, 2_000_000)
    );
    assert_eq!(charge(&rule, "other").max, 10);
    assert_eq!(charge(&rule.clone().burst(20), "k").burst, 20);
}

/// Checks the order of the layers of a call's terms: the key's override over the call's plan over the rule, each
/// completed by the next; a plan's `in_flight` is a limit in flight's `max`; a plan the rule lacks changes
/// nothing, and the call says which plan applied.
#[test]
fn a_plan_sits_between_the_overrides_and_the_rule() {
    let overrides = Overrides::default();
    let pinned = Override::key("p:", "pinned").max(3);
    overrides.apply(&crate::overrides::Change::Set(pinned), None);
    let plans = |rule: Rule| {
        rule.plan(
            "pro",
            crate::Plan::new()
                .max(50)
                .window(Duration::from_secs(5))
                .in_flight(7),
        )
    };
    let rate = plans(
        Rule::new()
            .prefix("p:")
            .max(10)
            .window(Duration::from_secs(1)),
    );
    let permits = plans(Rule::new().prefix("p:").in_flight(2));
    let limit = |rule: &Rule, key: &str, plan: Option<&str>| {
        let ask = Ask::of(
            RuleRef::Borrowed(rule),
            StoreKey::of_str("p:", key),
            1,
            Priority::Normal,
        )
        .on_plan(plan);
        let call = Call::new(&overrides, &crate::FakeClock::new(), [ask]);
        let limit = &call.limits()[0];
        (limit.terms, limit.applied())
    };
    let (pro, applied) = limit(&rate, "k", Some("pro"));
    assert_eq!((pro.max, pro.burst, pro.window), (50, 50, 5_000_000));
    assert_eq!(
        (applied.plan.as_deref(), applied.overridden),
        (Some("pro"), false)
    );
    let (pinned, applied) = limit(&rate, "pinned", Some("pro"));
    assert_eq!(
        (pinned.max, pinned.window),
        (3, 5_000_000),
        "the override's max, the plan's window"
    );
    assert!(applied.overridden);
    let (none, applied) = limit(&rate, "k", Some("gold"));
    assert_eq!((none.max, applied.plan), (10, None));
    assert_eq!(limit(&permits, "k", Some("pro")).0.max, 7);
    assert_eq!(limit(&permits, "k", None).0.max, 2);
}
