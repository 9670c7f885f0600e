//! The contenders: who decides, on what load, and one call of each.

use std::sync::Arc;
use std::time::Duration;

use limiter_runtime::{Algorithm, Limiter, Plan, RateLimited, Rule};
use redis::aio::ConnectionManager;
use redis::Script;

use crate::scripts;

/// The load a run puts on one limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    /// Random keys among many, a limit high enough that most calls are admitted.
    Spread,
    /// Every task on one key, with a low limit: almost every call is denied.
    Abuse,
    /// Every task (of every process) on one key, with a limit no call reaches: every call is admitted.
    Hot,
}

/// The spread scenario's limit: 1 000 per 10 s per key (the annotated functions below repeat it).
const SPREAD_MAX: u64 = 1_000;
const SPREAD_WINDOW: Duration = Duration::from_secs(10);
/// The abusive key's limit: 5 per 500 ms (the annotated functions below repeat it).
pub(crate) const ABUSE_MAX: u64 = 5;
pub(crate) const ABUSE_WINDOW: Duration = Duration::from_millis(500);
/// The hot key's limit: 100 000 000 per second (the annotated functions below repeat it).
pub(crate) const HOT_MAX: u64 = 100_000_000;
pub(crate) const HOT_WINDOW: Duration = Duration::from_secs(1);
/// The leased contender's lease: units taken at once, and how long they may be spent. Sized for the rate it
/// serves, as a user sizes it: at a few million decisions a second, a few hundred leases.
pub(crate) const LEASE_UNITS: u64 = 10_000;
pub(crate) const LEASE_TTL: Duration = Duration::from_millis(100);

impl Scenario {
    pub(crate) fn limit(self) -> scripts::Limit {
        let (max, window) = match self {
            Scenario::Spread => (SPREAD_MAX, SPREAD_WINDOW),
            Scenario::Abuse => (ABUSE_MAX, ABUSE_WINDOW),
            Scenario::Hot => (HOT_MAX, HOT_WINDOW),
        };
        scripts::Limit { max, window }
    }

    fn prefix(self, who: &str) -> String {
        match self {
            Scenario::Spread => format!("bench:{who}:"),
            Scenario::Abuse => format!("bench:abuse:{who}:"),
            Scenario::Hot => format!("bench:hot:{who}:"),
        }
    }
}

/// Who decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Contender {
    /// A `#[rate_limit]` function.
    Annotated,
    /// `Limiter::check`.
    Plain,
    /// `Limiter::check` with the deny cache switched off (abusive key).
    PlainNoCache,
    /// `Limiter::check` with coalescing switched off (hot key).
    PlainNoCoalesce,
    /// `Limiter::check` with each key's calls in script calls of their own (`batch_across_keys(false)`,
    /// `--per-key`).
    PlainPerKey,
    /// `Limiter::check` on a rule with a lease (hot key).
    PlainLease,
    /// `Limiter::check(..).plan("pro")` on a rule with three plans, the plan's limit the scenario's.
    PlainPlan,
    /// What a user writes without the library: `redis::Script` of the minimal script on a `ConnectionManager`.
    Baseline,
    /// `redis-benchmark` calling the library's script of one limit (not a task-based contender: see `ceiling`).
    Ceiling,
    /// `redis-benchmark` calling the minimal script.
    CeilingMinimal,
    /// Ablation (`--ablation`): the baseline, each call bounded by `tokio::time::timeout`, as the library's are.
    BaselineTimeout,
    /// Ablation (`--ablation`): the baseline, cloning its `ConnectionManager` for every call, as the library does.
    BaselineClone,
}

impl Contender {
    /// The contenders whose runs a worker process can make (`hot::worker`), by their `name`.
    const DRIVEN: [Contender; 10] = [
        Contender::Annotated,
        Contender::Plain,
        Contender::PlainNoCache,
        Contender::PlainNoCoalesce,
        Contender::PlainPerKey,
        Contender::PlainLease,
        Contender::PlainPlan,
        Contender::Baseline,
        Contender::BaselineTimeout,
        Contender::BaselineClone,
    ];

    pub(crate) fn label(self) -> &'static str {
        match self {
            Contender::Annotated => "annotated fn",
            Contender::Plain => "plain API",
            Contender::PlainNoCache => "plain API, deny cache off",
            Contender::PlainNoCoalesce => "plain API, coalescing off",
            Contender::PlainPerKey => "plain API, a script call per key",
            Contender::PlainLease => "plain API, lease 10 000 / 100 ms",
            Contender::PlainPlan => "plain API, on a plan",
            Contender::Baseline => "baseline (minimal script)",
            Contender::Ceiling => "redis-benchmark -P 16, library script",
            Contender::CeilingMinimal => "redis-benchmark -P 16, minimal script",
            Contender::BaselineTimeout => "baseline + timeout per call",
            Contender::BaselineClone => "baseline + connection clone per call",
        }
    }

    /// A one-word name, for a worker's command line.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Contender::Annotated => "annotated",
            Contender::Plain => "plain",
            Contender::PlainNoCache => "plain-no-cache",
            Contender::PlainNoCoalesce => "plain-no-coalesce",
            Contender::PlainPerKey => "plain-per-key",
            Contender::PlainLease => "plain-lease",
            Contender::PlainPlan => "plain-plan",
            Contender::Baseline => "baseline",
            Contender::Ceiling => "ceiling",
            Contender::CeilingMinimal => "ceiling-minimal",
            Contender::BaselineTimeout => "baseline-timeout",
            Contender::BaselineClone => "baseline-clone",
        }
    }

    /// The task-based contender called `name`.
    pub(crate) fn driven(name: &str) -> Option<Contender> {
        Contender::DRIVEN.into_iter().find(|c| c.name() == name)
    }
}

/// One `#[rate_limit]` function per algorithm and scenario, with the scenario's limit written on it.
macro_rules! annotated {
    ($($algorithm:ident => $variant:ident),* $(,)?) => {
        $(mod $algorithm {
            use limiter_runtime::{rate_limit, RateLimited};

            #[rate_limit(prefix = "bench:attr:", key = id, max = 1000, window = 10, algorithm = $algorithm)]
            pub(super) async fn spread(id: u32) -> Result<(), RateLimited> {
                Ok(())
            }

            #[rate_limit(prefix = "bench:abuse:attr:", key = id, max = 5, window = "500ms", algorithm = $algorithm)]
            pub(super) async fn abuse(id: u32) -> Result<(), RateLimited> {
                Ok(())
            }

            #[rate_limit(prefix = "bench:hot:attr:", key = id, max = 100000000, window = 1, algorithm = $algorithm)]
            pub(super) async fn hot(id: u32) -> Result<(), RateLimited> {
                Ok(())
            }
        })*

        async fn annotated(algorithm: Algorithm, scenario: Scenario, id: u32) -> Result<(), RateLimited> {
            match (algorithm, scenario) {
                $(
                    (Algorithm::$variant, Scenario::Spread) => $algorithm::spread(id).await,
                    (Algorithm::$variant, Scenario::Abuse) => $algorithm::abuse(id).await,
                    (Algorithm::$variant, Scenario::Hot) => $algorithm::hot(id).await,
                )*
                (other, _) => panic!("no annotated function for {other:?}"),
            }
        }
    };
}

annotated! {
    sliding_log => SlidingLog,
    fixed_window => FixedWindow,
    sliding_window => SlidingWindow,
    token_bucket => TokenBucket,
    leaky_bucket => LeakyBucket,
}

/// What one task needs to make calls: cloned into every task.
#[derive(Clone)]
pub(crate) enum Caller {
    Baseline {
        script: Arc<Script>,
        connection: ConnectionManager,
        prefix: Arc<str>,
        args: [u64; 2],
        /// The sliding log's: each call names its member, a random number.
        member: bool,
        /// Ablations: bound each call by a timeout; clone the connection for each call.
        timeout: bool,
        clone: bool,
    },
    Plain {
        limiter: Limiter,
        rule: Arc<Rule>,
        /// The plan each call names, if it names one.
        plan: Option<&'static str>,
    },
    Annotated {
        limiter: Limiter,
        algorithm: Algorithm,
        scenario: Scenario,
    },
}

/// What became of one call.
pub(crate) enum Outcome {
    Allowed,
    Denied,
    Failed,
}

impl Caller {
    /// A fresh contender: its own connection, or its own limiter (so its own connection and deny cache).
    pub(crate) async fn new(
        contender: Contender,
        algorithm: Algorithm,
        scenario: Scenario,
        url: &str,
    ) -> Caller {
        let limit = scenario.limit();
        let limiter = || {
            let mut builder = Limiter::builder()
                .redis(url)
                // Patient, so that every decision is Redis's: a decision past the deadline would fail open
                // without Redis and flatter the throughput. Each run reports its degraded decisions (none
                // expected).
                .deadline(Duration::from_secs(1))
                .deny_cache(contender != Contender::PlainNoCache)
                .coalesce(contender != Contender::PlainNoCoalesce)
                .batch_across_keys(contender != Contender::PlainPerKey);
            // So that INFO (and callgrind) count only the contender's calls: the heartbeat is an EVALSHA too.
            builder = builder.heartbeat_every(Duration::from_secs(3600));
            // Connected, and every decision script loaded (as `connect` does), so that no run meets a
            // script the server has not seen yet (a batch's first call of `groups.lua`, say).
            async move {
                builder
                    .connect()
                    .await
                    .expect("the benchmark's redis-server is ready")
            }
        };
        match contender {
            Contender::Baseline | Contender::BaselineTimeout | Contender::BaselineClone => {
                let client = redis::Client::open(url).expect("a valid Redis URL");
                let connection = ConnectionManager::new(client)
                    .await
                    .expect("the benchmark's redis-server accepts a connection");
                Caller::Baseline {
                    script: Arc::new(Script::new(scripts::minimal_source(algorithm))),
                    connection,
                    prefix: scenario.prefix("base").into(),
                    args: scripts::minimal_args(algorithm, limit),
                    member: algorithm == Algorithm::SlidingLog,
                    timeout: contender == Contender::BaselineTimeout,
                    clone: contender == Contender::BaselineClone,
                }
            }
            Contender::Plain
            | Contender::PlainNoCache
            | Contender::PlainNoCoalesce
            | Contender::PlainPerKey
            | Contender::PlainLease
            | Contender::PlainPlan => {
                let mut rule = Rule::new()
                    .prefix(scenario.prefix(contender.name()))
                    .max(limit.max)
                    .window(limit.window)
                    .algorithm(algorithm);
                if contender == Contender::PlainLease {
                    rule = rule.lease(LEASE_UNITS).lease_ttl(LEASE_TTL);
                }
                let plan = (contender == Contender::PlainPlan).then_some("pro");
                if plan.is_some() {
                    // Three plans, the call's the second: its limit the scenario's, the rule's own a tenth.
                    rule = rule
                        .max(limit.max / 10)
                        .plan("free", Plan::new().max(limit.max / 10))
                        .plan("pro", Plan::new().max(limit.max))
                        .plan("enterprise", Plan::new().max(limit.max * 10));
                }
                Caller::Plain {
                    limiter: limiter().await,
                    rule: Arc::new(rule),
                    plan,
                }
            }
            Contender::Annotated => Caller::Annotated {
                limiter: limiter().await,
                algorithm,
                scenario,
            },
            Contender::Ceiling | Contender::CeilingMinimal => {
                unreachable!("redis-benchmark is not driven by tasks")
            }
        }
    }

    /// The limiter of a library contender: its stats count degraded decisions.
    pub(crate) fn limiter(&self) -> Option<&Limiter> {
        match self {
            Caller::Baseline { .. } => None,
            Caller::Plain { limiter, .. } | Caller::Annotated { limiter, .. } => Some(limiter),
        }
    }

    /// Degraded decisions of a library contender so far (none for the baseline).
    pub(crate) fn degraded(&self) -> u64 {
        self.limiter().map_or(0, |l| l.stats().degraded)
    }

    /// One call on key `id`, to connect and load the script before a run (its outcome does not matter).
    pub(crate) async fn warm(&self, id: u32) {
        let mut caller = self.clone();
        if let Caller::Annotated { limiter, .. } = self {
            limiter.scope(caller.call(id, 0)).await;
        } else {
            caller.call(id, 0).await;
        }
    }

    /// One call on key `id`; `nonce` names the baseline's sliding-log member.
    pub(crate) async fn call(&mut self, id: u32, nonce: u64) -> Outcome {
        match self {
            Caller::Baseline {
                script,
                connection,
                prefix,
                args,
                member,
                timeout,
                clone,
            } => {
                // What a user writes: format the key, call the script, read its integer.
                let mut cloned;
                let connection = if *clone {
                    cloned = connection.clone();
                    &mut cloned
                } else {
                    connection
                };
                let mut invocation = script.key(format!("{prefix}{id}"));
                invocation.arg(args[0]).arg(args[1]);
                if *member {
                    invocation.arg(nonce);
                }
                let call = invocation.invoke_async::<i64>(connection);
                let reply = if *timeout {
                    match tokio::time::timeout(Duration::from_secs(1), call).await {
                        Ok(reply) => reply,
                        Err(_) => return Outcome::Failed,
                    }
                } else {
                    call.await
                };
                match reply {
                    Ok(1) => Outcome::Allowed,
                    Ok(0) => Outcome::Denied,
                    _ => Outcome::Failed,
                }
            }
            Caller::Plain {
                limiter,
                rule,
                plan,
            } => {
                let decision = match plan {
                    Some(plan) => limiter.check(rule, id).plan(plan).await,
                    None => limiter.check(rule, id).await,
                };
                if decision.allowed {
                    Outcome::Allowed
                } else {
                    Outcome::Denied
                }
            }
            Caller::Annotated {
                algorithm,
                scenario,
                ..
            } => match annotated(*algorithm, *scenario, id).await {
                Ok(()) => Outcome::Allowed,
                Err(_) => Outcome::Denied,
            },
        }
    }
}
