//! Where counts live, each backend owning what it needs: this process's memory, or Redis (one global count
//! for every node) with what decides when Redis cannot.
//!
//! Both run the same algorithms on the same integers (see [`crate::algorithm`]); a backend is asked about a
//! key, an algorithm and a charge, and knows nothing of rules, overrides or HTTP.

mod memory;
pub(crate) mod redis;

use std::sync::Arc;

use crate::algorithm::{Algorithm, Charge, Outcome, Receipt};
use crate::key::KeyRef;
use crate::rule::LeaseTerms;
use crate::{Decision, OnError};

pub(crate) use self::memory::{MemoryStore, DEFAULT_MAX_KEYS};
pub(crate) use self::redis::RedisBackend;

/// One limit of a call, as a backend is asked about it. A call's limits are decided as one: admitted when
/// every limit that vetoes admits it, and then charged to each; else charged to none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ask<'a> {
    pub(crate) algorithm: Algorithm,
    pub(crate) key: KeyRef<'a>,
    pub(crate) charge: Charge,
    /// Whether its denial denies the call (a shadow limit's does not).
    pub(crate) vetoes: bool,
    /// What decides it when Redis cannot.
    pub(crate) on_error: OnError,
    /// Set when it is decided before any store is asked: then no store hears of it.
    pub(crate) preset: Option<Preset>,
    /// Its rule's lease: with Redis, units this node takes at once and spends in memory.
    pub(crate) lease: Option<LeaseTerms>,
}

/// A limit of a call decided before any store is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Preset {
    /// The call skips it (its `skip_if` held): admitted, counted nowhere.
    Skipped,
    /// It admits nothing (`max = 0`; no algorithm divides by zero).
    Closed,
}

impl Preset {
    /// What it decides of a call of `charge`.
    pub(crate) fn outcome(self, charge: &Charge) -> Outcome {
        match self {
            Preset::Skipped => Outcome::admit(charge.max),
            Preset::Closed => Outcome::denied(0, charge.window, 0),
        }
    }
}

/// What a backend answered for one limit of a call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Answer {
    pub(crate) decision: Decision,
    /// What an admission charged, for giving it back.
    pub(crate) receipt: Receipt,
    /// Where it charged it.
    pub(crate) charged: Charged,
}

/// Where an answer charged the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Charged {
    /// Nowhere: a denial, a call another limit denied, or one admitted without counting.
    Nothing,
    /// The backend's store: this process's memory, or Redis.
    Store,
    /// This process's memory, deciding for Redis in degraded mode (`on_error = local`).
    Local,
    /// A lease this node holds (its units were counted in Redis when it was taken).
    Lease,
}

impl Answer {
    /// What `outcome`, decided at `at` (µs), says of `ask` in a call that was (`call_admitted`) or was not
    /// admitted: charged to the store when the call was admitted and this limit counted it.
    #[inline(always)]
    pub(crate) fn of(ask: &Ask<'_>, outcome: Outcome, at: u64, call_admitted: bool) -> Answer {
        let charged = call_admitted && outcome.allowed && ask.preset.is_none();
        Answer {
            decision: Decision::new(&ask.charge, outcome, at, false),
            receipt: outcome.receipt,
            charged: if charged {
                Charged::Store
            } else {
                Charged::Nothing
            },
        }
    }

    /// A decision that charged nothing.
    pub(crate) fn uncharged(decision: Decision) -> Answer {
        Answer {
            decision,
            receipt: Receipt::default(),
            charged: Charged::Nothing,
        }
    }
}

/// Whether a call is admitted, its limits' answers told by `allowed`: no limit that vetoes denied it.
pub(crate) fn admitted<const N: usize>(
    asks: &[Ask<'_>; N],
    allowed: impl Fn(usize) -> bool,
) -> bool {
    (0..N).all(|i| allowed(i) || !asks[i].vetoes)
}

/// The backend of one limiter.
#[derive(Debug)]
pub(crate) enum Backend {
    Memory(MemoryStore),
    /// Shared with the background tasks that keep Redis's view current (heartbeats, overrides).
    Redis(Arc<RedisBackend>),
}
