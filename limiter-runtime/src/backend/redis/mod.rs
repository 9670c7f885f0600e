//! The Redis backend: one script call per decision (all of a call's limits at once) on one shared,
//! reconnecting connection, and what keeps each decision within its deadline when Redis fails.
//!
//! - Every Redis decision has a deadline; missing it is a failure, decided by the failure policy, and never
//!   retried (it may have been applied). The script call runs on to its answer all the same, and a call Redis
//!   admitted whose caller was refused meanwhile is given back (reconciled): a refused call is never charged.
//! - The breaker stops calling Redis after repeated failures, so a dead Redis costs no latency, and probes for
//!   recovery one call at a time.
//! - A limit's [`OnError`](crate::OnError) says what decides meanwhile ([`Fallback`]).
//! - The deny cache answers, until their `retry_after`, calls Redis said are limited.
//! - Calls on one hot key go to Redis together ([`Coalescer`]), or spend a lease ([`Leases`]).
//!
//! On one server (and Sentinel's master) a call's limits are one atomic script call. On a cluster, the keys of
//! one slot go together, slot after slot; when one slot's limits deny the call, what the others charged is
//! given back before the call returns (meanwhile those charges count: the cluster may briefly admit less,
//! never more).

mod background;
mod breaker;
mod cluster;
mod coalesce;
mod connection;
mod degraded;
mod deny_cache;
mod instances;
mod lease;
mod lua_script;
mod overrides;
mod permits;
mod script;
mod server;
mod tls;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{ready, Context, Poll};
use std::time::Duration;

use redis::Value;
use tokio::sync::watch;

use self::breaker::{Breaker, Pass, Transition};
use self::coalesce::{Batch, Coalescer, Member, Place, Shape, Waiting, MAX_LIMITS};
use self::deny_cache::{DenyCache, Lookup};
use self::lease::{HeldLease, Leases, Take};
use self::permits::Permits;
use self::script::{nonce, BatchCall, CallOutcome, GiveBack, Sent};
use crate::algorithm::{Algorithm, Outcome, Peek};
use crate::call::{Answer, Call, CallLimit, Charged, Decided, LeaseTerms, OneOrMany};
use crate::clock::{as_micros, Clock};
use crate::error::{BackendError, Error};
use crate::key::{KeyRef, StoreKey};
use crate::sharded::KeyHash;
use crate::watch::NodeReport;
use crate::OnError;

pub(crate) use self::background::start as start_background;
pub(crate) use self::breaker::BreakerConfig;
pub(crate) use self::connection::{Connection, Topology};
pub(crate) use self::degraded::Fallback;
pub(crate) use self::instances::Instances;
pub(crate) use self::lua_script::LuaScript;
pub(crate) use self::overrides::publish;
pub(crate) use self::tls::{redacted, Tls};

/// The least time work off the decisions' path is given (see [`RedisBackend::patience`]).
const PATIENT: Duration = Duration::from_millis(500);

/// How long one connection attempt may take: the deadline, but at least 250 ms, so that a tight deadline still
/// lets a connection be made.
pub(crate) fn connect_timeout(deadline: Duration) -> Duration {
    deadline.max(Duration::from_millis(250))
}

/// How long a script call's late answer is awaited, to reconcile it: past this, Redis is taken to have lost it.
const LATE: Duration = Duration::from_secs(30);

/// What spares Redis calls: the deny cache, and coalescing (both on by default).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sparing {
    pub(crate) deny_cache: bool,
    pub(crate) coalesce: bool,
}

/// Redis, and what decides when it cannot.
pub(crate) struct RedisBackend {
    topology: Box<Topology>,
    /// Created on the first decision, inside the caller's Tokio runtime; it reconnects in the background after
    /// a failure.
    connection: OnceLock<Connection>,
    deadline: Duration,
    /// Test-only: pass "now" from this clock instead of reading Redis `TIME`.
    test_clock: Option<Arc<dyn Clock>>,
    /// This process's clock: the time of the decisions made without Redis.
    clock: Arc<dyn Clock>,
    breaker: Breaker,
    /// What decides while Redis cannot.
    pub(crate) fallback: Fallback,
    /// Calls Redis said are limited, answered here until their `retry_after` (unless switched off).
    denied: Option<DenyCache>,
    /// The lines of calls waiting to go to Redis together (unless switched off).
    coalescer: Option<Coalescer>,
    /// The leases this node holds.
    leases: Leases,
    /// The permits in flight this node holds (shared with the task that renews them).
    permits: Arc<Permits>,
}

/// What Redis is to decide of a call this process could not decide at once.
pub(crate) struct Later {
    redis: Arc<RedisBackend>,
    permit: Pass,
    /// When the call was asked (this node's clock).
    sent: Duration,
    /// Whether the deny cache is to hear what Redis answers (it may hold this call's denial).
    cached: bool,
    /// This call re-asks Redis for a call whose cached denial ran out.
    probe: bool,
    /// This call (of one leased limit) takes a lease on it, or waits for the one another call is taking.
    lease: Option<LeaseStep>,
    /// The hash of the call's key in the coalescer, when it was taken.
    hash: Option<KeyHash>,
    /// The batch the call waits in, joined at once (see [`RedisBackend::wait`]).
    waiting: Option<Waiting>,
}

impl Later {
    /// The call's place in the batch it waits in, if it waits in one; else this, for a round trip.
    #[inline]
    pub(crate) fn batched(self) -> Result<Batched, Later> {
        match self.waiting {
            Some(waiting) => Ok(Batched {
                waiting,
                redis: self.redis,
                sent: self.sent,
                cached: self.cached,
                probe: self.probe,
            }),
            None => Err(self),
        }
    }
}

/// A call of one limit waiting in a batch ([`Later::batched`]): its place, and what follows its decision (see
/// [`after`](RedisBackend::after)). Polled in place by its caller: nothing boxed, no timer, no channel.
pub(crate) struct Batched {
    waiting: Waiting,
    redis: Arc<RedisBackend>,
    sent: Duration,
    cached: bool,
    probe: bool,
}

impl Batched {
    /// What the batch says of `call` (degraded by the batch's sender when Redis did not answer in time), once
    /// it is decided.
    #[inline]
    pub(crate) fn poll_decided(&mut self, call: &Call<'_>, cx: &mut Context<'_>) -> Poll<Decided> {
        let mut decided = ready!(Pin::new(&mut self.waiting).poll(cx));
        let key = call.limits()[0].key.parts();
        let (sent, cached, probe) = (self.sent, self.cached, self.probe);
        self.redis
            .after(call, key, &mut decided, sent, cached, probe);
        Poll::Ready(decided)
    }
}

/// What a call of one leased limit does about its lease before asking Redis.
enum LeaseStep {
    /// Take one, with its terms, giving back what is left of the lease this node held before.
    Take {
        terms: LeaseTerms,
        back: Option<Box<HeldLease>>,
    },
    /// Wait until the call taking one is done (the receiver says when), then spend it.
    Wait(watch::Receiver<()>),
}

/// Why a script call gave no answer in time: the cause, and the call still running, whose answer is to be
/// reconciled with the decision made meanwhile.
struct Failed {
    cause: BackendError,
    late: Option<Late>,
}

/// A call to Redis still running past its deadline.
enum Late {
    /// One script call, of the call named by this nonce.
    Script(Sent, u64),
    /// A call's exchange across a cluster's slots: what it decided, once done.
    Exchange(Exchange),
}

/// A call's exchange across a cluster's slots, owned: what Redis decided of it.
type Exchange =
    std::pin::Pin<Box<dyn Future<Output = Result<(Decided, Call<'static>), BackendError>> + Send>>;

impl Failed {
    /// The failure of the script call that named its call `nonce`.
    fn named(mut self, nonce: u64) -> Failed {
        if let Some(Late::Script(_, named)) = &mut self.late {
            *named = nonce;
        }
        self
    }
}

impl From<BackendError> for Failed {
    fn from(cause: BackendError) -> Failed {
        Failed { cause, late: None }
    }
}

/// The limits of `call` Redis is asked about (not those decided before it was).
fn asked<'a, 'r>(call: &'a Call<'r>) -> OneOrMany<&'a CallLimit<'r>> {
    match call.limits() {
        [one] => OneOrMany::One(one),
        many => OneOrMany::Many(many.iter().filter(|l| l.preset.is_none()).collect()),
    }
}

/// What names `call` in the deny cache and the coalescer's lines: its one limit's store key, or its limits'
/// keys joined, each length first, so that no two calls share one (`-` for a limit decided before any store
/// was asked).
fn call_key(call: &Call<'_>) -> Option<StoreKey> {
    use std::fmt::Write as _;
    if let [_] = call.limits() {
        return None;
    }
    let mut key = StoreKey::joined("", "");
    for limit in call.limits() {
        // Writing into a key cannot fail.
        let _ = match limit.preset {
            Some(_) => key.write_str("-|"),
            None => write!(key, "{}:{}|", limit.key.len(), &*limit.key),
        };
    }
    Some(key)
}

/// The key that names `call`, as [`call_key`] made it (`joined`), or its one limit's.
fn named<'a>(call: &'a Call<'_>, joined: &'a Option<StoreKey>) -> KeyRef<'a> {
    match joined {
        Some(joined) => joined.parts(),
        None => call.limits()[0].key.parts(),
    }
}

/// Each call of a batch as the script is told it: `members` (their costs on `limits`' places).
fn batch_calls(members: &[Member], limits: usize) -> Vec<BatchCall<'_>> {
    members
        .iter()
        .map(|member| BatchCall {
            nonce: member.nonce,
            costs: &member.costs[..limits],
        })
        .collect()
}

/// `call`'s costs on the limits Redis is asked about, in their places.
fn costs_of(asked: &[&CallLimit<'_>]) -> [u64; MAX_LIMITS] {
    let mut costs = [0; MAX_LIMITS];
    for (cost, limit) in costs.iter_mut().zip(asked) {
        *cost = limit.charge.cost;
    }
    costs
}

/// What `outcome` (of the limits Redis was asked about, in their order) says of `call`, decided at `now`,
/// the call weighing `costs` on those limits: the limits decided before Redis was asked keep their own
/// outcome.
fn decided_of(call: &Call<'_>, costs: &[u64], outcome: &CallOutcome, now: u64) -> Decided {
    if let ([limit], [outcome], [cost]) = (call.limits(), &*outcome.outcomes, costs) {
        // The common call: one limit, asked.
        let admitted = outcome.allowed || !limit.vetoes;
        return Decided {
            answers: OneOrMany::One(Answer::weighing(limit, *cost, *outcome, now, admitted)),
            admitted,
        };
    }
    let (mut from_redis, mut costs) = (outcome.outcomes.iter(), costs.iter());
    let each: Vec<(Outcome, u64)> = call
        .limits()
        .iter()
        .map(|limit| match limit.preset {
            Some(preset) => (preset.outcome(&limit.charge), limit.charge.cost),
            None => (
                from_redis.next().copied().unwrap_or(Outcome::admit(0)),
                costs.next().copied().unwrap_or(0),
            ),
        })
        .collect();
    let admitted = call.admits(|i| each[i].0.allowed);
    let answers = call
        .limits()
        .iter()
        .zip(&each)
        .map(|(limit, (outcome, cost))| Answer::weighing(limit, *cost, *outcome, now, admitted))
        .collect();
    Decided { answers, admitted }
}

/// `call`, weighing `costs` on the limits Redis is asked about.
fn weighing<'r>(call: &Call<'r>, costs: &[u64]) -> Call<'r> {
    let mut call = call.clone();
    let mut costs = costs.iter();
    call.each_limit(|limit| {
        if limit.preset.is_none() {
            limit.charge.cost = costs.next().copied().unwrap_or(0);
        }
    });
    call
}

/// Awaits `sent` for at most `budget`: its reply, or, past it, the call still running.
async fn within(mut sent: Sent, budget: Duration) -> Result<Value, Failed> {
    let timer = tokio::time::sleep(budget);
    tokio::pin!(timer);
    let answered = std::future::poll_fn(|cx| {
        if let Poll::Ready(reply) = sent.as_mut().poll(cx) {
            return Poll::Ready(Some(reply));
        }
        timer.as_mut().poll(cx).map(|()| None)
    })
    .await;
    match answered {
        Some(reply) => Ok(reply.map_err(BackendError::from)?),
        None => Err(Failed {
            cause: BackendError::Timeout(budget),
            late: Some(Late::Script(sent, 0)),
        }),
    }
}

/// A round trip of a line in flight: handed on, to the first batch gathering behind it, when it ends,
/// however it ends (answered, past its deadline, or dropped with its caller).
struct Turn<'a> {
    redis: &'a Arc<RedisBackend>,
    coalescer: &'a Coalescer,
    key: KeyRef<'a>,
    hash: crate::sharded::KeyHash,
    /// The call went without a line ([`Coalescer::go_sole`]).
    sole: bool,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if self.sole {
            self.coalescer.leave(self.hash);
        } else if let Some(next) = self.coalescer.pass_on(self.key, self.hash) {
            tokio::spawn(Arc::clone(self.redis).drive(next, self.key.to_store_key()));
        }
    }
}

impl RedisBackend {
    pub(crate) fn new(
        topology: Topology,
        deadline: Duration,
        test_clock: Option<Arc<dyn Clock>>,
        fallback: Fallback,
        breaker: BreakerConfig,
        sparing: Sparing,
    ) -> RedisBackend {
        RedisBackend {
            topology: Box::new(topology),
            connection: OnceLock::new(),
            deadline,
            test_clock,
            clock: Arc::clone(fallback.local.clock()),
            fallback,
            breaker: Breaker::new(breaker),
            denied: sparing.deny_cache.then(DenyCache::default),
            coalescer: sparing.coalesce.then(Coalescer::default),
            leases: Leases::default(),
            permits: Arc::default(),
        }
    }

    /// The bound on one decision.
    pub(crate) fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Where Redis is, without a password.
    #[cfg_attr(not(feature = "tower"), allow(dead_code))]
    pub(crate) fn describe(&self) -> String {
        self.topology.describe()
    }

    /// The shared connection (created on first use, inside the caller's Tokio runtime).
    pub(crate) fn connection(&self) -> Result<Connection, BackendError> {
        if let Some(connection) = self.connection.get() {
            return Ok(connection.clone());
        }
        let connection = self.topology.connect()?;
        Ok(self.connection.get_or_init(|| connection).clone())
    }

    /// Makes the shared connection if none is (connects, authenticates, selects the database), within the
    /// connection's own bound: a decision's deadline is for Redis to decide, not to be connected to.
    pub(crate) async fn establish(&self) -> Result<Connection, BackendError> {
        let connection = self.connection()?;
        if connection.is_made() {
            return Ok(connection);
        }
        let bound = connect_timeout(self.deadline);
        match tokio::time::timeout(bound, connection.establish()).await {
            Ok(made) => made.map(|()| connection).map_err(BackendError::from),
            Err(_) => Err(BackendError::Connect(bound)),
        }
    }

    /// The shared connection, when it is made: a call on it spends no time connecting.
    #[inline]
    fn made(&self) -> Option<Connection> {
        self.connection.get().filter(|c| c.is_made()).cloned()
    }

    /// Whether Redis can be used as set up: connected, authenticated, the database selected, every decision
    /// script loaded; else what failed.
    pub(crate) async fn ready(&self) -> Result<(), Error> {
        let bound = connect_timeout(self.deadline).max(Duration::from_secs(5));
        let work = async { script::load(&mut self.establish().await?).await };
        let failed = match tokio::time::timeout(bound, work).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(cause)) => cause.to_string(),
            Err(_) => format!("no answer within {bound:?}"),
        };
        Err(Error::NotReady {
            redis: self.topology.describe(),
            cause: failed,
        })
    }

    /// A connection of its own for pub/sub (see [`Topology::pubsub`]).
    pub(crate) async fn pubsub(&self, attempt: usize) -> redis::RedisResult<redis::aio::PubSub> {
        self.topology.pubsub(attempt).await
    }

    /// Whether the breaker is open: Redis is not being called, only probed.
    pub(crate) fn breaker_open(&self) -> bool {
        self.breaker.is_open()
    }

    /// How many permits in flight this node holds.
    pub(crate) fn permits_held(&self) -> u64 {
        self.permits.held() as u64
    }

    /// Decisions made in degraded mode so far (calls).
    pub(crate) fn degraded_count(&self) -> u64 {
        self.fallback.count()
    }

    /// Gives back the memory of the `local` fallback (see [`Fallback::tidy`]).
    pub(crate) fn tidy_local(&self) {
        self.fallback.tidy(self.breaker.is_failing());
    }

    /// Limits changed: what Redis said of them no longer holds.
    pub(crate) fn forget_denials(&self) {
        if let Some(cache) = &self.denied {
            cache.clear();
        }
    }

    /// A limit under `prefix` (of `key` alone, when given) changed: what Redis said of it no longer holds.
    pub(crate) fn forget_denials_of(&self, prefix: &str, key: Option<&str>) {
        let Some(cache) = &self.denied else { return };
        match key {
            Some(key) => cache.remove(KeyRef { prefix, rest: key }),
            None => cache.clear(),
        }
    }

    /// How long work off the decisions' path may take (a heartbeat, an operator's read): the decisions'
    /// deadline, but at least [`PATIENT`].
    pub(crate) fn patience(&self) -> Duration {
        self.deadline.max(PATIENT)
    }

    /// Reads `limit`'s key without charging it (one read-only script call, within [`patience`]), and whether
    /// this node holds a denial of it: what an operator inspects.
    ///
    /// [`patience`]: RedisBackend::patience
    pub(crate) async fn inspect(&self, limit: &CallLimit<'_>) -> Result<(Peek, u64, bool), Error> {
        let read = |cause: BackendError| Error::Read(cause.to_string());
        let connection = self.establish().await.map_err(read)?;
        let (script, command) = script::inspect_command(limit, self.test_now());
        let reply = within(script::send(script, connection, command), self.patience())
            .await
            .map_err(|failed| read(failed.cause))?;
        let (peek, now) = script::read_inspected(&reply, limit).map_err(read)?;
        let denied = self
            .denied
            .as_ref()
            .is_some_and(|cache| cache.holds(limit.key.parts(), self.clock.now()));
        Ok((peek, now, denied))
    }

    /// Every live node's report (this one's too), and how long ago each was written: one script call, within
    /// [`patience`](RedisBackend::patience).
    pub(crate) async fn reports(&self) -> Result<Vec<(NodeReport, Duration)>, Error> {
        let read = |cause: String| Error::Read(cause);
        let mut connection = self.establish().await.map_err(|e| read(e.to_string()))?;
        let reports = self.fallback.instances.reports(&mut connection);
        let reports = tokio::time::timeout(self.patience(), reports)
            .await
            .map_err(|_| read(format!("no answer within {:?}", self.patience())))?
            .map_err(|e| read(e.to_string()))?;
        Ok(reports
            .into_iter()
            .filter_map(|(text, age)| Some((NodeReport::decode(&text)?, age)))
            .collect())
    }

    /// "Now" passed to the script, in a test that drives Redis's time.
    fn test_now(&self) -> Option<u64> {
        self.test_clock.as_ref().map(|clock| as_micros(clock.now()))
    }

    /// Decides `call` from what this process knows (a lease it holds, a denial Redis already gave, the breaker
    /// open); else what Redis is to decide.
    #[inline]
    pub(crate) fn decide_now(self: &Arc<Self>, call: &Call<'_>) -> Result<Decided, Later> {
        let sent = self.clock.now();
        // A call that can never fit has only a nominal `retry_after`: nothing to keep.
        let fits = call.limits().iter().all(CallLimit::can_fit);
        // A call of one leased limit spends this node's lease, if it holds enough of one.
        let leased = match call.limits() {
            [limit] if fits && limit.preset.is_none() => limit.lease.map(|terms| (limit, terms)),
            _ => None,
        };
        if let Some(answer) = leased.and_then(|(limit, _)| self.leases.spend(limit, sent)) {
            return Ok(Decided {
                admitted: answer.decision.allowed,
                answers: OneOrMany::One(answer),
            });
        }
        let cache = self.denied.as_ref().filter(|_| fits);
        let mut lookup = Lookup::Miss;
        if let Some(cache) = cache.filter(|cache| !cache.is_empty()) {
            let fails = self.breaker.is_failing();
            let joined = call_key(call);
            let costs = call.limits().iter().map(|limit| limit.charge.cost);
            lookup = cache.get(named(call, &joined), costs, sent, self.deadline, fails);
        }
        if let Lookup::Denied(decisions) = lookup {
            return Ok(Decided {
                answers: decisions.map(|decision| Answer::uncharged(*decision)),
                admitted: false,
            });
        }
        // A request that already met a failing Redis waits for it no more: one deadline per request.
        if self.breaker.is_failing() && crate::observe::degraded_in_request() {
            return Ok(self.fallback.decide(call, self.breaker.probe_every()));
        }
        let permit = self.breaker.permit();
        if permit == Pass::Skip {
            return Ok(self.fallback.decide(call, self.breaker.probe_every()));
        }
        let lease =
            leased.map(
                |(limit, terms)| match self.leases.take(limit, sent, self.taking_stale()) {
                    Take::Lease(back) => LeaseStep::Take { terms, back },
                    Take::Wait(taken) => LeaseStep::Wait(taken),
                },
            );
        // A probe must reach Redis, to close the breaker or keep it open: it waits for no lease.
        let lease =
            lease.filter(|step| permit == Pass::Call || !matches!(step, LeaseStep::Wait(_)));
        let (mut hash, mut waiting) = (None, None);
        if let (Some(coalescer), None, Pass::Call) = (&self.coalescer, &lease, permit) {
            (hash, waiting) = self.wait_in_line(coalescer, call, sent);
        }
        Err(Later {
            redis: Arc::clone(self),
            permit,
            sent,
            cached: cache.is_some(),
            probe: matches!(lookup, Lookup::Probe),
            lease,
            hash,
            waiting,
        })
    }

    /// A call of one limit, on a key whose line is full, waits in the line's batch: joined now, with no
    /// round trip of its own to prepare. Its key's hash, taken once (for [`ask`](RedisBackend::ask)).
    #[inline]
    fn wait_in_line(
        &self,
        coalescer: &Coalescer,
        call: &Call<'_>,
        sent: Duration,
    ) -> (Option<KeyHash>, Option<Waiting>) {
        let [limit] = call.limits() else {
            return (None, None);
        };
        let key = limit.key.parts();
        let hash = coalescer.hash_whole(&limit.key);
        let made = self.connection.get().is_some_and(Connection::is_made);
        if !made || !coalescer.busy(hash) {
            return (Some(hash), None);
        }
        let Some(shape) = Shape::of(call) else {
            return (Some(hash), None);
        };
        let member = Member {
            nonce: nonce(),
            costs: costs_of(&[limit]),
        };
        let until = sent + self.deadline;
        let waiting = coalescer.join_waiting((key, hash), shape, call, member, until);
        (Some(hash), waiting)
    }

    /// Asks Redis what [`decide_now`](RedisBackend::decide_now) could not answer, within the deadline;
    /// decides in degraded mode when Redis cannot answer in time, and reconciles its late answer.
    pub(crate) async fn decide_later(call: &Call<'_>, later: Later) -> Decided {
        let redis = &*later.redis;
        let mut lease = later.lease;
        // A call's deadline is for Redis to answer it, all of it: what it waited for a lease comes off it.
        let mut budget = redis.deadline;
        if let (Some(LeaseStep::Wait(taken)), [limit]) = (&mut lease, call.limits()) {
            // The call taking the lease is done within its deadline, and this call waits no longer than its
            // own; then it spends the lease, or, when it brings nothing, asks Redis with what is left of it.
            let _ = Box::pin(tokio::time::timeout(redis.deadline, taken.changed())).await;
            let now = redis.clock.now();
            if let Some(answer) = redis.leases.spend(limit, now) {
                return Decided {
                    admitted: answer.decision.allowed,
                    answers: OneOrMany::One(answer),
                };
            }
            budget = budget.saturating_sub(now.saturating_sub(later.sent));
        }
        let joined = call_key(call);
        let key = named(call, &joined);
        let takes_lease = matches!(lease, Some(LeaseStep::Take { .. }));
        // Making the connection spends no decision's deadline: it has a bound of its own. What is rare (making
        // it, taking a lease) is boxed, so that the common call's future stays small.
        let connection = match redis.made() {
            Some(connection) => Ok(connection),
            None => Box::pin(redis.establish()).await,
        };
        let asked = match connection {
            Ok(connection) => match lease {
                Some(LeaseStep::Take { terms, back }) => {
                    Box::pin(later.redis.take_lease(call, later.sent, terms, back)).await
                }
                _ => {
                    let redis = &later.redis;
                    let hash = later.hash;
                    redis
                        .ask(call, (key, hash), later.permit, budget, connection)
                        .await
                }
            },
            Err(cause) => Err(Failed::from(cause)),
        };
        let mut decided = match asked {
            // A batch it waited in, that Redis did not answer in time: decided (and counted) degraded by the
            // batch's sender.
            Ok(decided) if decided.answers.iter().any(|a| a.decision.degraded) => decided,
            Ok(decided) => {
                redis.answered(later.permit, key);
                decided
            }
            Err(failed) => {
                if takes_lease {
                    redis.leases.abandon(call.limits()[0].key.parts());
                }
                let on_error = call.limits().iter().map(|limit| limit.on_error);
                let retry = redis.failed(later.permit, key, on_error, &failed.cause);
                let decided = redis.fallback.decide(call, retry);
                if let Some(late) = failed.late {
                    let call = call.detached();
                    let refused = !decided.admitted;
                    let redis = Arc::clone(&later.redis);
                    tokio::spawn(async move { redis.reconcile(late, &call, refused).await });
                }
                decided
            }
        };
        redis.after(
            call,
            key,
            &mut decided,
            later.sent,
            later.cached,
            later.probe,
        );
        decided
    }

    /// Redis answered a round trip: the breaker hears it (and, if Redis was failing, the log).
    fn answered(&self, permit: Pass, key: KeyRef<'_>) {
        if self.breaker.succeeded(permit) == Transition::Recovered {
            self.fallback.recovered();
            tracing::warn!(key = %key, "rate limiter: Redis answers again; deciding in Redis");
        }
    }

    /// A round trip failed with `cause`. A fault of the call's own keys ([`BackendError::is_the_keys`]) is an
    /// answer from Redis, which the breaker hears as one: one key's fault never turns Redis off for every
    /// other key. Any other failure counts toward the breaker. Either way the call is then decided by its
    /// limits' `on_error`: returns how long a `closed` refusal tells it to wait.
    fn failed(
        &self,
        permit: Pass,
        key: KeyRef<'_>,
        on_error: impl Iterator<Item = OnError>,
        cause: &BackendError,
    ) -> Duration {
        if cause.is_the_keys() {
            self.answered(permit, key);
            self.fallback.log_key_fault(&key.to_string(), cause);
        } else {
            let transition = self.breaker.failed(permit);
            degraded::log_failure(&key.to_string(), on_error, cause, transition);
        }
        self.breaker.probe_every()
    }

    /// What follows a decision Redis made (or the failure policy made for it): a leased limit's refusal holds
    /// no longer than a lease's life, and the deny cache hears the answer.
    fn after(
        &self,
        call: &Call<'_>,
        key: KeyRef<'_>,
        decided: &mut Decided,
        sent: Duration,
        cached: bool,
        probe: bool,
    ) {
        if let ([limit], [answer]) = (call.limits(), &mut *decided.answers) {
            if let Some(terms) = limit.lease {
                // Units other nodes hold in leases come back within a lease's time to live (and a sweep): a
                // refusal of a leased limit holds no longer.
                let back = lease::back_within(terms);
                answer.decision.retry_after = answer.decision.retry_after.min(back);
            }
        }
        if decided.admitted {
            // The permits in flight it took are this node's to renew while they are held.
            for (limit, answer) in call.limits().iter().zip(decided.answers.iter()) {
                if limit.algorithm == Algorithm::InFlight && answer.charged == Charged::Store {
                    let (ttl, mark) = (limit.charge.window, answer.receipt.mark);
                    self.permits.hold(&limit.key, ttl, mark);
                }
            }
        }
        if let Some(cache) = self.denied.as_ref().filter(|_| cached) {
            if decided.admitted && !probe {
                // The common answer: the call's counts changed, and any denial of it is stale.
                cache.remove(key);
                return;
            }
            // What Redis said (a degraded decision: nothing, and the cache forgets the call).
            let decisions: Vec<_> = decided.decisions().collect();
            let costs = call.limits().iter().map(|limit| limit.charge.cost);
            cache.answered(key, costs, &decisions, decided.admitted, sent, probe);
        }
    }

    /// Decides `call` in Redis: one script call (with the calls on the same key and limits waiting for the
    /// same round trip, when coalescing is on), or, on a cluster whose slots split the call's keys, one per
    /// slot.
    async fn ask(
        self: &Arc<Self>,
        call: &Call<'_>,
        (key, hash): (KeyRef<'_>, Option<KeyHash>),
        permit: Pass,
        budget: Duration,
        connection: Connection,
    ) -> Result<Decided, Failed> {
        let asked = asked(call);
        if asked.len() > 1 {
            let keys: Vec<&str> = asked.iter().map(|limit| &*limit.key).collect();
            if let Some(groups) = connection.slots_apart(&keys) {
                return Box::pin(self.ask_across_slots(call, groups)).await;
            }
        }
        let nonce = nonce();
        let costs = costs_of(&asked);
        // A probe must reach Redis, to close the breaker or keep it open: it goes alone.
        let coalescer = self.coalescer.as_ref().filter(|_| permit == Pass::Call);
        // The turn is this call's to hand on however its round trip ends: answered, past its deadline, or
        // dropped with its caller.
        let mut turn = None;
        if let Some(coalescer) = coalescer {
            let hash = hash.unwrap_or_else(|| coalescer.hash(key));
            let taken = |sole| {
                Some(Turn {
                    redis: self,
                    coalescer,
                    key,
                    hash,
                    sole,
                })
            };
            if coalescer.go_sole(hash) {
                turn = taken(true);
            } else if let Some(shape) = Shape::of(call) {
                let member = Member { nonce, costs };
                let until = self.clock.now() + budget;
                match coalescer.join((key, hash), shape, call, member, until) {
                    Place::Wait(batch, index) => return Ok(batch.wait(index).await),
                    Place::Lead => turn = taken(false),
                    Place::Alone => {}
                }
            }
        }
        // Past the coalescer's bound on limits: costs of every limit.
        let all: Vec<u64>;
        let costs = match asked.len() > MAX_LIMITS {
            true => {
                all = asked.iter().map(|limit| limit.charge.cost).collect();
                &all[..]
            }
            false => &costs[..asked.len()],
        };
        let calls = [BatchCall { nonce, costs }];
        let (each, now) = self
            .round_trip(&asked, &calls, budget, connection)
            .await
            .map_err(|failed| failed.named(nonce))?;
        drop(turn);
        Ok(decided_of(call, costs, &each[0], now))
    }

    /// One script call deciding `calls` on `limits`, answered within `budget`: each call's outcome, and when.
    async fn round_trip(
        &self,
        limits: &[&CallLimit<'_>],
        calls: &[BatchCall<'_>],
        budget: Duration,
        connection: Connection,
    ) -> Result<(OneOrMany<CallOutcome>, u64), Failed> {
        crate::observe::batch(calls.len());
        let (script, command) = script::decide_command(limits, calls, self.test_now());
        let sent = script::send(script, connection, command);
        let reply = within(sent, budget).await?;
        Ok(script::read_decided(&reply, limits, calls)?)
    }

    /// Sends `batch` (on the line of `key`), once a round trip of its line has ended: decides each of its
    /// calls within the batch's deadline (degraded when Redis cannot, reconciled with Redis's late answer),
    /// then hands the line on.
    fn drive(
        self: Arc<Self>,
        batch: Arc<Batch>,
        key: StoreKey,
    ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(async move { self.send_batch(batch, key).await })
    }

    /// What [`drive`](RedisBackend::drive) does.
    async fn send_batch(self: Arc<Self>, batch: Arc<Batch>, key: StoreKey) {
        let members = batch.members();
        let asked = asked(&batch.call);
        let calls = batch_calls(&members, asked.len());
        let budget = batch.until.saturating_sub(self.clock.now());
        let permit = Pass::Call;
        let decided = match (budget.is_zero(), self.connection()) {
            (true, _) => Err(Failed::from(BackendError::Timeout(self.deadline))),
            (false, Err(cause)) => Err(Failed::from(cause)),
            (false, Ok(connection)) => self.round_trip(&asked, &calls, budget, connection).await,
        };
        let coalescer = self.coalescer.as_ref();
        let next = coalescer.and_then(|c| c.pass_on(key.parts(), c.hash_whole(&key)));
        if let Some(next) = next {
            tokio::spawn(Arc::clone(&self).drive(next, key.clone()));
        }
        match decided {
            Ok((each, now)) => {
                self.answered(permit, key.parts());
                let decided = each.iter().zip(&members).map(|(outcome, member)| {
                    decided_of(&batch.call, &member.costs[..asked.len()], outcome, now)
                });
                batch.decide(decided.collect());
            }
            Err(failed) => {
                let on_error = batch.call.limits().iter().map(|limit| limit.on_error);
                let retry = self.failed(permit, key.parts(), on_error, &failed.cause);
                let degraded: Vec<Decided> = members
                    .iter()
                    .map(|member| {
                        let call = weighing(&batch.call, &member.costs[..asked.len()]);
                        self.fallback.decide(&call, retry)
                    })
                    .collect();
                let refused: Vec<bool> = degraded.iter().map(|d| !d.admitted).collect();
                batch.decide(degraded);
                if let Some(Late::Script(late, _)) = failed.late {
                    self.reconcile_calls(late, &batch.call, &members, &refused)
                        .await;
                }
            }
        }
    }

    /// A call to Redis past its deadline, answered late: what Redis admitted of `call` though its caller was
    /// refused meanwhile (`refused`) goes back, through the one give-back path. (What a caller let through,
    /// Redis's count keeps.) Counted in the metric `limiter_reconciled_total`.
    async fn reconcile(self: &Arc<Self>, late: Late, call: &Call<'_>, refused: bool) {
        match late {
            Late::Script(sent, nonce) => {
                let member = Member {
                    nonce,
                    costs: costs_of(&asked(call)),
                };
                self.reconcile_calls(sent, call, &[member], &[refused])
                    .await;
            }
            Late::Exchange(exchange) => {
                let Ok(Ok((decided, owned))) = tokio::time::timeout(LATE, exchange).await else {
                    return;
                };
                if decided.admitted && refused {
                    crate::observe::reconciled();
                    let units: Vec<u64> = owned.limits().iter().map(|l| l.charge.cost).collect();
                    self.give_back(&owned, &decided, &units).await;
                }
            }
        }
    }

    /// [`reconcile`](RedisBackend::reconcile) of a script call that carried `members` (of `call`'s limits),
    /// each refused meanwhile or not (`refused`).
    async fn reconcile_calls(
        self: &Arc<Self>,
        late: Sent,
        call: &Call<'_>,
        members: &[Member],
        refused: &[bool],
    ) {
        let Ok(Ok(reply)) = tokio::time::timeout(LATE, late).await else {
            return;
        };
        let asked = asked(call);
        let calls = batch_calls(members, asked.len());
        let Ok((each, now)) = script::read_decided(&reply, &asked, &calls) else {
            return;
        };
        let in_flight = call
            .limits()
            .iter()
            .any(|l| l.algorithm == Algorithm::InFlight);
        for ((outcome, member), refused) in each.iter().zip(members).zip(refused) {
            // Redis admitted a call refused meanwhile: all it charged goes back. One admitted meanwhile (open,
            // local) keeps what Redis charged of its rates, but not the permits Redis holds for it, which no
            // one would give back.
            if !outcome.admitted || (!*refused && !in_flight) {
                continue;
            }
            let call = weighing(call, &member.costs[..asked.len()]);
            let decided = decided_of(&call, &member.costs[..asked.len()], outcome, now);
            let units: Vec<u64> = call
                .limits()
                .iter()
                .map(|l| match *refused {
                    true => l.charge.cost,
                    false => u64::from(l.algorithm == Algorithm::InFlight),
                })
                .collect();
            crate::observe::reconciled();
            self.give_back(&call, &decided, &units).await;
        }
    }

    /// Decides `call`'s limits one slot's `groups` at a time, giving back what the admitting slots charged
    /// when another's limits deny the call. The whole exchange runs on past the deadline, and is reconciled
    /// as a late answer is.
    async fn ask_across_slots(
        self: &Arc<Self>,
        call: &Call<'_>,
        groups: Vec<Vec<usize>>,
    ) -> Result<Decided, Failed> {
        let (redis, owned) = (Arc::clone(self), call.detached());
        let exchange = async move {
            let asked = asked(&owned);
            let mut outcomes: Vec<Outcome> = Vec::with_capacity(asked.len());
            outcomes.resize(asked.len(), Outcome::admit(0));
            let (mut now, mut admitted, mut charged) = (0, true, Vec::new());
            let nonce = nonce();
            for group in &groups {
                let limits: Vec<&CallLimit<'_>> = group.iter().map(|&j| asked[j]).collect();
                let costs: Vec<u64> = limits.iter().map(|l| l.charge.cost).collect();
                let calls = [BatchCall {
                    nonce,
                    costs: &costs,
                }];
                let (script, command) = script::decide_command(&limits, &calls, redis.test_now());
                let reply = script::send(script, redis.connection()?, command).await?;
                let (each, at) = script::read_decided(&reply, &limits, &calls)?;
                now = now.max(at);
                for (&j, outcome) in group.iter().zip(each[0].outcomes.iter()) {
                    outcomes[j] = *outcome;
                }
                admitted &= each[0].admitted;
                if each[0].admitted {
                    charged.push(group.clone());
                }
            }
            if !admitted {
                // The slots that admitted the call give back what it charged them, before it returns.
                let mut connection = redis.connection()?;
                for group in charged {
                    let given: Vec<GiveBack<'_>> = group
                        .iter()
                        .filter(|&&j| outcomes[j].allowed)
                        .map(|&j| {
                            GiveBack::of(asked[j], &outcomes[j].receipt, asked[j].charge.cost)
                        })
                        .collect();
                    script::give_back(&mut connection, &given, redis.test_now()).await?;
                    for &j in &group {
                        if outcomes[j].allowed {
                            outcomes[j].remaining += asked[j].charge.cost;
                        }
                    }
                }
            }
            let outcome = CallOutcome {
                admitted,
                outcomes: OneOrMany::Many(outcomes),
            };
            let costs: Vec<u64> = asked.iter().map(|limit| limit.charge.cost).collect();
            Ok::<_, BackendError>((decided_of(&owned, &costs, &outcome, now), owned))
        };
        let mut exchange: Exchange = Box::pin(exchange);
        let timer = tokio::time::sleep(self.deadline);
        tokio::pin!(timer);
        let answered = std::future::poll_fn(|cx| {
            if let Poll::Ready(done) = exchange.as_mut().poll(cx) {
                return Poll::Ready(Some(done));
            }
            timer.as_mut().poll(cx).map(|()| None)
        })
        .await;
        match answered {
            Some(done) => Ok(done?.0),
            // Past the deadline: the exchange runs on, to be reconciled with the decision made meanwhile.
            None => Err(Failed {
                cause: BackendError::Timeout(self.deadline),
                late: Some(Late::Exchange(exchange)),
            }),
        }
    }

    /// How long a call may be taking a lease before it is taken to have been dropped: past its deadline.
    fn taking_stale(&self) -> Duration {
        self.deadline * 2
    }

    /// Takes a lease for the one limit of `call`, sent at `sent` (giving back `back`, what is left of the last
    /// one), within the deadline, and answers the call with the first of its units; refused, with the limit's
    /// answer to the call alone. A lease taken past the deadline goes back whole.
    async fn take_lease(
        self: &Arc<Self>,
        call: &Call<'_>,
        sent: Duration,
        terms: LeaseTerms,
        back: Option<Box<HeldLease>>,
    ) -> Result<Decided, Failed> {
        let limit = &call.limits()[0];
        let back_given = back.as_deref().map(HeldLease::remainder);
        let (script, command) =
            script::lease_command(limit, terms.units, back_given.as_ref(), self.test_now());
        let sending = script::send(script, self.connection()?, command);
        let reply = match within(sending, self.deadline).await {
            Ok(reply) => reply,
            Err(mut failed) => {
                if let Some(Late::Script(late, _)) = failed.late.take() {
                    let (redis, call) = (Arc::clone(self), call.detached());
                    tokio::spawn(async move { redis.return_late_lease(late, &call).await });
                }
                return Err(failed);
            }
        };
        let taken = script::read_lease(&reply, limit.algorithm)?;
        let received = self.clock.now();
        let answer = self.leases.taken(limit, sent, terms, taken, received)?;
        Ok(Decided {
            admitted: answer.decision.allowed,
            answers: OneOrMany::One(answer),
        })
    }

    /// A lease taken past its deadline: its units go back whole, once Redis's answer comes.
    async fn return_late_lease(&self, late: Sent, call: &Call<'_>) {
        let limit = &call.limits()[0];
        let Ok(Ok(reply)) = tokio::time::timeout(LATE, late).await else {
            return;
        };
        let Ok((now, taken, reported)) = script::read_lease(&reply, limit.algorithm) else {
            return;
        };
        if taken == 0 {
            return;
        }
        let Some(mut state) =
            crate::algorithm::State::reported(limit.algorithm, now, &limit.charge, reported)
        else {
            return;
        };
        let charge = crate::algorithm::Charge {
            cost: taken,
            ..limit.charge
        };
        let outcome = state.decide(now, &charge);
        let given = GiveBack {
            key: &limit.key,
            algorithm: limit.algorithm,
            charge: &charge,
            receipt: &outcome.receipt,
            units: taken,
        };
        crate::observe::reconciled();
        self.send_give_backs(&[given], limit.key.parts()).await;
    }

    /// Gives back `units[i]` of what each limit `i` of an admitted `call` charged (as `decided` says): to a
    /// lease it spent, to this process's `local` fallback, and in Redis, in one script call (per slot on a
    /// cluster) within the deadline. Exactly, unless a charge has left its limit already (then nothing), never
    /// more.
    pub(crate) async fn give_back(
        self: &Arc<Self>,
        call: &Call<'_>,
        decided: &Decided,
        units: &[u64],
    ) {
        let (mut in_redis, mut released) = (Vec::new(), None);
        for ((limit, answer), &units) in call.limits().iter().zip(decided.answers.iter()).zip(units)
        {
            let units = units.min(limit.charge.cost);
            match answer.charged {
                // Nothing to give back (a permit in flight given back is one of any units).
                _ if units == 0 => {}
                Charged::Nothing => {}
                Charged::Local => self.fallback.give_back(limit, units, answer),
                Charged::Lease => self
                    .leases
                    .give_back(limit.key.parts(), units, &answer.receipt),
                // A permit goes back whole, with the releases of other calls.
                Charged::Store if limit.algorithm == Algorithm::InFlight => {
                    released = Some(Permits::send_release(self, &limit.key, answer.receipt.mark));
                }
                Charged::Store => in_redis.push(GiveBack::of(limit, &answer.receipt, units)),
            }
        }
        if !in_redis.is_empty() {
            let joined = call_key(call);
            self.send_give_backs(&in_redis, named(call, &joined)).await;
        }
        if let Some(batch) = released {
            // Given back before this returns: the caller's next call finds its permit free.
            self.permits.given(batch, self.deadline).await;
        }
    }

    /// Gives back `given`, the charges of the call `call` names: one script call (per slot on a cluster),
    /// within the deadline. A give-back that fails is dropped (the limit then keeps the charge: it admits less,
    /// never more), and logged.
    async fn send_give_backs(&self, given: &[GiveBack<'_>], call: KeyRef<'_>) {
        let test_now = self.test_now();
        let giving = async {
            let mut connection = self.connection()?;
            let keys: Vec<&str> = given.iter().map(|given| given.key).collect();
            match connection.slots_apart(&keys) {
                None => script::give_back(&mut connection, given, test_now).await,
                Some(groups) => {
                    for group in groups {
                        let part: Vec<_> = group.iter().map(|&i| given[i]).collect();
                        script::give_back(&mut connection, &part, test_now).await?;
                    }
                    Ok(())
                }
            }
        };
        match tokio::time::timeout(self.deadline, giving).await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                tracing::debug!(%error, key = %call, "rate limiter: a charge could not be given back")
            }
            Err(_) => tracing::debug!(key = %call, "rate limiter: giving a charge back timed out"),
        }
        if let Some(cache) = &self.denied {
            // The call's limits have room again: what Redis said of it before no longer holds.
            cache.remove(call);
        }
    }

    /// Gives back what is left of the leases that ran out of time while no call came for them, as any charge
    /// is given back (each within the deadline; one that fails is dropped, and its units are lost until their
    /// window passes: the limit admits less, never more), and reports the units this node's leases still
    /// hold.
    pub(crate) async fn return_expired_leases(&self) {
        let (expired, outstanding) = self.leases.expired(self.clock.now(), self.taking_stale());
        crate::observe::lease_units(outstanding);
        for held in expired {
            self.send_give_backs(&[held.remainder()], held.remainder().key.into())
                .await;
        }
    }
}

impl fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBackend")
            .field("redis", &self.topology)
            .field("deadline", &self.deadline)
            .field("test_clock", &self.test_clock)
            .finish_non_exhaustive()
    }
}
