//! The order of a decision on made-up sources: each way of taking a step outside `decision/order.rs` is
//! caught, and a step the crate does not define fails the check.

use super::good::LATE;
use super::{made_up, names_the_change};
use crate::layers::checks::steps_taken;
use crate::layers::krate::Crate;
use crate::layers::{ORDER, STEPS};

/// A way of taking a step of the order outside `decision/order.rs`: its name, the step, how the check sees it
/// taken, the changes that make it (the first in the file it is taken in), and words replaced in every file.
struct OrderForm {
    form: &'static str,
    step: &'static str,
    seen: &'static str,
    changes: &'static [(&'static str, &'static str)],
    renames: &'static [(&'static str, &'static str)],
}

/// Each way of taking a step of the order outside `decision/order.rs`.
const ORDER_FORMS: &[OrderForm] = &[
    OrderForm {
        form: "a field renamed",
        step: "Breaker::failed",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "
            impl RedisBackend {
                fn again(&self) { self.guard.failed(); }
            }
            ",
        )],
        renames: &[
            ("breaker: Breaker", "guard: Breaker"),
            ("self.breaker.", "self.guard."),
        ],
    },
    OrderForm {
        form: "a local name",
        step: "Breaker::failed",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "
            impl RedisBackend {
                fn again(&self) {
                    let b = &self.breaker;
                    b.failed();
                }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a local name, cloned",
        step: "Fallback::decide",
        seen: "on a `Fallback`",
        changes: &[(
            LATE,
            "
            impl RedisBackend {
                fn again(&self) {
                    let f = self.fallback.clone();
                    f.decide(todo!());
                }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a local name, an `Arc` of the store",
        step: "RedisBackend::reconcile",
        seen: "on a `RedisBackend`",
        changes: &[(
            LATE,
            "
            fn again(redis: RedisBackend) {
                let held = Arc::new(redis);
                let it = Arc::clone(&held);
                it.reconcile();
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a typed parameter",
        step: "Breaker::succeeded",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "
            use crate::backend::redis::failure::breaker::Breaker;
            fn tell(told: &Breaker) { told.succeeded(); }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a typed closure parameter",
        step: "Breaker::failed",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "fn again() { let tell = |b: &breaker::Breaker| b.failed(); }",
        )],
        renames: &[],
    },
    OrderForm {
        form: "an enum's variant in a pattern",
        step: "Breaker::failed",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "
            enum Held { One(breaker::Breaker) }
            fn again(held: Held) {
                match held { Held::One(b) => b.failed() }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "the method by its path",
        step: "Breaker::failed",
        seen: "through `breaker::Breaker::failed`",
        changes: &[(
            LATE,
            "
            impl RedisBackend {
                fn again(&self) { breaker::Breaker::failed(&self.breaker); }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "the method through a renamed type",
        step: "Breaker::succeeded",
        seen: "through `Guard::succeeded`",
        changes: &[(
            LATE,
            "
            use crate::backend::redis::failure::breaker::Breaker as Guard;
            fn again() { let _ = Guard::succeeded; }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "`Self::` in an `impl` of the store",
        step: "RedisBackend::reconcile",
        seen: "through `Self::reconcile`",
        changes: &[(
            "backend/redis/fleet/mod.rs",
            "
            impl crate::backend::redis::RedisBackend {
                fn again(&self) { Self::reconcile(self); }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a receiver the reader cannot tell, in the backend",
        step: "Fallback::decide",
        seen: "on a receiver of a type the reader cannot tell",
        changes: &[(LATE, "fn again() { make().decide(todo!()); }")],
        renames: &[],
    },
    OrderForm {
        form: "a field of the store, outside the backend",
        step: "Fallback::decide",
        seen: "on a `Fallback`",
        changes: &[(
            "pipeline.rs",
            "fn again(x: Unknown) { x.fallback.decide(todo!()); }",
        )],
        renames: &[],
    },
];

/// The order check looks at what is called, not at what a value is named: each way of taking a step outside
/// the order is caught, where it is written, the order's own steps still seen; calls of another type's method
/// of a step's name (`Lease::failed`), or in tests, are not steps.
#[test]
fn each_way_of_taking_a_step_outside_the_order_is_caught() {
    for OrderForm {
        form,
        step,
        seen,
        changes,
        renames,
    } in ORDER_FORMS
    {
        let sources = made_up(changes, renames);
        let (file, text) = changes[0];
        let taken = steps_taken(&Crate::read(&sources), &STEPS).unwrap();
        for (other, places) in &taken {
            let outside = Vec::from_iter(places.iter().filter(|p| !p.starts_with(ORDER)));
            let caught =
                |p: &&String| names_the_change(p, &sources, file, text) && p.ends_with(seen);
            if other == step {
                assert!(
                    outside.len() == 1 && outside.iter().all(caught),
                    "{form}: {places:#?}"
                );
            } else {
                assert!(outside.is_empty(), "{form}: {other} at {outside:#?}");
            }
            assert!(
                places.iter().any(|p| p.starts_with(ORDER)),
                "{form}: {other} in the order"
            );
        }
    }
}

/// A step the crate does not define (renamed, moved to another type) fails the check, naming it, rather than
/// being found taken nowhere.
#[test]
fn a_step_defined_nowhere_fails_the_check() {
    let sources = made_up(&[], &[("fn failed(&self) {}", "fn failing(&self) {}")]);
    let failed = steps_taken(&Crate::read(&sources), &STEPS).unwrap_err();
    let expected = "Breaker::failed should be defined once, is defined at []";
    assert!(failed.starts_with(expected), "{failed}");
}
