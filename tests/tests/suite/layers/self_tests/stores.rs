//! The stores on made-up sources: each way a store is named where it may not be is caught where written.

use super::{made_up, names_the_change};
use crate::layers::checks::{store_named_above_the_backend, store_named_below_the_steps};
use crate::layers::krate::Crate;

/// Each way a store is named where it may not be: a store's module from above the backend (as written, or a
/// store's own type through the backend's interface), the store from a room below a decision's steps.
const STORE_FORMS: &[(&str, &str, &str)] = &[
    (
        "a store's module, above the backend",
        "pipeline.rs",
        "use crate::backend::redis::wire::Connection;",
    ),
    (
        "a store's module, through an alias",
        "pipeline.rs",
        "
        use crate::backend as stores;
        fn reach() { stores::redis::one_limit_source(); }
        ",
    ),
    (
        "a store's type, through the backend's interface",
        "pipeline.rs",
        "fn reach(_: &crate::backend::RedisBackend) {}",
    ),
    (
        "the store, below the steps",
        "backend/redis/wire/mod.rs",
        "use crate::backend::redis::RedisBackend;",
    ),
    (
        "the store, below the steps, by `super::`",
        "backend/redis/sparing/mod.rs",
        "fn reach(_: super::RedisBackend) {}",
    ),
];

#[test]
fn the_stores_are_named_only_where_they_may_be() {
    for (form, file, text) in STORE_FORMS {
        let sources = made_up(&[(file, text)], &[]);
        let krate = Crate::read(&sources);
        let above = store_named_above_the_backend(&krate);
        let broken = Vec::from_iter(above.into_iter().chain(store_named_below_the_steps(&krate)));
        let caught = |b: &String| names_the_change(b, &sources, file, text);
        assert!(
            broken.len() == 1 && broken.iter().all(caught),
            "{form}: {broken:#?}"
        );
    }
}
