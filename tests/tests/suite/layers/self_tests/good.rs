//! A made-up runtime laid out as the real one is, small, and the test that every check accepts it.

use super::{everything_broken, made_up};
use crate::layers::checks::{layering, room_layering, Graph};
use crate::layers::krate::Crate;
use crate::layers::ORDER;

/// A made-up runtime laid out as the real one is, small: each layer and room uses only its own and those
/// below (through groups, renames, globs, `super::`, inline paths and re-exports), and `decision/order.rs`
/// alone takes the order's steps (another type's `failed` is called elsewhere, a breaker's in its tests).
pub(super) const GOOD: &[(&str, &str)] = &[
    (
        "lib.rs",
        r#"
        //! A made-up runtime.
        mod algorithm;
        mod backend;
        mod call;
        mod limiter;
        mod pipeline;
        #[doc(hidden)]
        #[path = "private.rs"]
        pub mod __private;
        pub use crate::limiter::{Limit as Resolved, Limiter};
        "#,
    ),
    (
        "algorithm/mod.rs",
        r#"
        pub(crate) mod state;
        pub(crate) use self::state::*;
        /// Says `crate::limiter` in a comment, and in a string, which are no uses: "crate::limiter::Limiter".
        pub struct Algorithm;
        "#,
    ),
    (
        "algorithm/state.rs",
        "
        pub(crate) struct State;
        impl State {
            pub(crate) fn decide(&mut self) {}
        }
        #[cfg(test)]
        mod tests {
            use super::*;
            use crate::__private::Part;
        }
        ",
    ),
    (
        "call.rs",
        "
        use crate::algorithm::{self, state::{State as Held}};
        pub(crate) struct Call(Held);
        fn algorithm() -> algorithm::Algorithm { crate::Algorithm }
        ",
    ),
    (
        "backend/mod.rs",
        "
        pub(crate) mod redis;
        pub(crate) use self::redis::{one_limit_source, RedisBackend};
        ",
    ),
    (
        "backend/redis/mod.rs",
        "
        mod decision;
        mod failure;
        mod fleet;
        mod sparing;
        mod wire;
        use self::failure::breaker::Breaker;
        pub(crate) use self::failure::degraded::Fallback;
        pub(crate) use self::wire::Connection;
        pub(crate) struct RedisBackend {
            breaker: Breaker,
            pub(crate) fallback: Fallback,
            connection: Connection,
        }
        pub(crate) fn one_limit_source() {}
        ",
    ),
    (
        "backend/redis/wire/mod.rs",
        "
        //! The wire.
        pub(super) mod connection;
        pub(crate) use self::connection::Connection;
        ",
    ),
    (
        "backend/redis/wire/connection.rs",
        "
        use crate::call::Call;
        pub(crate) struct Connection;
        pub(in crate::backend::redis) fn send(_: &Call) {}
        ",
    ),
    (
        "backend/redis/failure/mod.rs",
        "
        //! Failures.
        pub(super) mod breaker;
        pub(super) mod degraded;
        ",
    ),
    (
        "backend/redis/failure/breaker.rs",
        "
        pub(crate) struct Breaker;
        impl Breaker {
            pub(crate) fn succeeded(&self) {}
            pub(crate) fn failed(&self) {}
        }
        #[cfg(test)]
        mod tests {
            use super::*;
            fn breaker() -> Breaker { Breaker }
            #[test]
            fn opens() {
                let b = breaker();
                b.failed();
            }
        }
        ",
    ),
    (
        "backend/redis/failure/degraded.rs",
        "
        use super::super::wire::connection::Connection;
        pub(crate) struct Fallback;
        impl Fallback {
            pub(crate) fn decide(&self, _: &Connection) {}
        }
        ",
    ),
    (
        "backend/redis/sparing/mod.rs",
        "
        //! Sparing.
        use super::Connection;
        pub(crate) struct Lease;
        impl Lease {
            pub(crate) fn failed(&self) {}
        }
        fn give_up(lease: &Lease) { lease.failed(); }
        ",
    ),
    (
        "backend/redis/decision/mod.rs",
        "
        //! The steps.
        pub(super) mod late;
        pub(super) mod order;
        ",
    ),
    (
        ORDER,
        "
        use crate::backend::redis::{sparing::Lease, RedisBackend};
        impl RedisBackend {
            pub(crate) fn ask(&self, lease: &Lease) {
                self.breaker.failed();
                self.breaker.succeeded();
                self.fallback.decide(&self.connection);
                self.reconcile();
                lease.failed();
            }
        }
        ",
    ),
    (
        LATE,
        "
        use std::sync::Arc;
        use crate::backend::redis::{failure::{breaker}, wire::{self, Connection as Wired}};
        use crate::backend::redis::RedisBackend;
        impl RedisBackend {
            pub(crate) fn reconcile(&self) {
                let Some(mut state) = crate::algorithm::State::new() else { return };
                state.decide();
            }
        }
        ",
    ),
    (
        "backend/redis/fleet/mod.rs",
        "
        //! The fleet.
        use super::decision::*;
        use crate::backend::redis::sparing;
        pub(crate) struct Fleet;
        impl Fleet {
            pub(crate) fn new() -> Fleet { Fleet }
        }
        ",
    ),
    (
        "pipeline.rs",
        "
        use crate::backend::{self, one_limit_source};
        use crate::call::Call;
        fn sources() { backend::one_limit_source(); }
        ",
    ),
    (
        "limiter/mod.rs",
        "
        use crate::pipeline;
        pub struct Limiter;
        pub struct Limit;
        ",
    ),
    (
        "private.rs",
        "
        pub struct Part;
        use crate::{Limiter, Resolved};
        ",
    ),
];

/// A file of a decision's steps other than the order, under `src`.
pub(super) const LATE: &str = "backend/redis/decision/late.rs";

#[test]
fn a_good_layout_is_accepted() {
    let krate = Crate::read(&made_up(&[], &[]));
    assert_eq!(everything_broken(&krate), Vec::<String>::new());
    let (modules, _) = layering(&krate);
    let (rooms, _) = room_layering(&krate);
    let used = |graph: &Graph, part: &str| Vec::from_iter(graph[part].iter().cloned());
    assert_eq!(
        used(&modules, "private"),
        ["limiter"],
        "the root's re-exports followed"
    );
    assert_eq!(used(&modules, "call"), ["algorithm"]);
    assert_eq!(used(&modules, "backend"), ["algorithm", "call"]);
    assert_eq!(
        used(&rooms, "decision"),
        ["failure", "sparing", "wire"],
        "groups read"
    );
    assert_eq!(used(&rooms, "failure"), ["wire"]);
    assert_eq!(
        used(&rooms, "sparing"),
        ["wire"],
        "the hub's re-export, by `super::`"
    );
    assert_eq!(
        used(&rooms, "fleet"),
        ["decision", "sparing"],
        "a glob, a module by name"
    );
}
