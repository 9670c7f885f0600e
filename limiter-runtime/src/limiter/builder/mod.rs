//! Building a [`Limiter`]: the store, the crate-wide defaults, the deadline and the failure policy.

mod env;
mod limits;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::redis::{
    connect_timeout, redacted, BreakerConfig, Fallback, Instances, Sparing, Tls, Topology,
};
use crate::backend::{Backend, MemoryStore, RedisBackend, DEFAULT_MAX_KEYS};
use crate::clock::{Clock, SystemClock};
use crate::rule::Defaults;
use crate::{Error, Limiter, OnError, Rule, DEFAULT_DEADLINE, REDIS_URL_ENV};

/// Builds a [`Limiter`]: the store, the crate-wide defaults, the Redis deadline and what happens when Redis
/// fails.
///
/// Every setting is optional: `Limiter::builder().build()` counts in memory with window 60 s, max 100,
/// prefix `"rate_limit:"`.
///
/// ```
/// use limiter_runtime::{Limiter, OnError};
/// use std::time::Duration;
///
/// let limiter = Limiter::builder()
///     .redis("redis://127.0.0.1:6379/")
///     .prefix("shop:")
///     .window(Duration::from_secs(10))
///     .max(50)
///     .message("easy there")
///     .deadline(Duration::from_millis(25))
///     .on_error(OnError::Local)
///     .build()
///     .unwrap();
/// ```
#[derive(Debug, Default)]
#[must_use]
pub struct LimiterBuilder {
    redis: Option<Redis>,
    tls: Tls,
    defaults: Defaults,
    deadline: Option<Duration>,
    connect_timeout: Option<Duration>,
    clock: Option<Arc<dyn Clock>>,
    local_clock: Option<Arc<dyn Clock>>,
    breaker: BreakerConfig,
    group: Option<String>,
    heartbeat_every: Option<Duration>,
    no_deny_cache: bool,
    no_tally: bool,
    no_coalescing: bool,
    apart_by_key: bool,
    max_keys: Option<usize>,
    /// Whether Redis's URL came from `LIMITER_REDIS_URL` (its errors then name it).
    redis_from_env: bool,
    /// Whether the environment was read: a limiter counting in memory then says so.
    env_read: bool,
    /// The limits file, and whether `LIMITER_LIMITS` named it.
    limits_file: Option<(PathBuf, bool)>,
}

/// Where the builder was told Redis is.
enum Redis {
    Server(String),
    Cluster(Vec<String>),
    Sentinel {
        master: String,
        sentinels: Vec<String>,
    },
    /// A Redis that cannot be used, and why: a setting from the environment that cannot work.
    Unusable(String),
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls = |urls: &[String]| urls.iter().map(|url| redacted(url)).collect::<Vec<_>>();
        match self {
            Redis::Server(url) => f.debug_tuple("Server").field(&redacted(url)).finish(),
            Redis::Cluster(seeds) => f.debug_tuple("Cluster").field(&urls(seeds)).finish(),
            Redis::Sentinel { master, sentinels } => f
                .debug_struct("Sentinel")
                .field("master", &redacted(master))
                .field("sentinels", &urls(sentinels))
                .finish(),
            Redis::Unusable(reason) => f.debug_tuple("Unusable").field(reason).finish(),
        }
    }
}

impl LimiterBuilder {
    /// Counts in Redis at `url` (`redis://host:port/db`): one global count shared by every node.
    ///
    /// An ACL user and password go in the URL (`redis://user:password@host:port/`); `rediss://` speaks TLS
    /// (feature `tls`, with `redis_ca` for a CA of your own). The connection is made on the first
    /// decision and remade in the background whenever it drops.
    pub fn redis(mut self, url: impl Into<String>) -> Self {
        self.redis = Some(Redis::Server(url.into()));
        self.redis_from_env = false;
        self
    }

    /// Counts in a Redis Cluster, found from any of its nodes (`redis://host:port/`; a few, in case one is
    /// down).
    ///
    /// Each limit is one key, so it lives on the master that owns the key's slot, limits spread over the
    /// masters, and no call is ever `CROSSSLOT`. Slot migrations (`MOVED`, `ASK`) cost no decision; a failover
    /// costs the decisions of the failed master's keys until a replica takes over, then heals by itself.
    ///
    /// ```
    /// use limiter_runtime::Limiter;
    ///
    /// let limiter = Limiter::builder()
    ///     .redis_cluster(["redis://10.0.0.1:6379/", "redis://10.0.0.2:6379/", "redis://10.0.0.3:6379/"])
    ///     .build()
    ///     .unwrap();
    /// ```
    pub fn redis_cluster<S: Into<String>>(mut self, seeds: impl IntoIterator<Item = S>) -> Self {
        self.redis = Some(Redis::Cluster(seeds.into_iter().map(Into::into).collect()));
        self
    }

    /// Counts in the Redis master that Redis Sentinel calls `master`, asking the Sentinels at `sentinels`
    /// (`redis://host:26379/`) where it is. After a failover the Sentinels are asked again, by themselves.
    ///
    /// The Sentinels' URLs say how to speak to them (`rediss://`, one ACL user for all). To speak to the
    /// master over TLS or as a user, write `master` as a URL whose host is its name:
    /// `rediss://user:password@mymaster/`.
    ///
    /// ```
    /// use limiter_runtime::Limiter;
    ///
    /// let limiter = Limiter::builder()
    ///     .redis_sentinel("mymaster", ["redis://10.0.0.1:26379/", "redis://10.0.0.2:26379/"])
    ///     .build()
    ///     .unwrap();
    /// ```
    pub fn redis_sentinel<S: Into<String>>(
        mut self,
        master: impl Into<String>,
        sentinels: impl IntoIterator<Item = S>,
    ) -> Self {
        self.redis = Some(Redis::Sentinel {
            master: master.into(),
            sentinels: sentinels.into_iter().map(Into::into).collect(),
        });
        self
    }

    /// Trusts the certificate authorities in `pem` (PEM text: one or more certificates) for `rediss://`
    /// connections, instead of the system's: a server, a cluster's nodes, the Sentinels and their master.
    ///
    /// ```no_run
    /// use limiter_runtime::Limiter;
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let limiter = Limiter::builder()
    ///     .redis("rediss://limiter:secret@redis.internal:6380/")
    ///     .redis_ca(std::fs::read("/etc/redis/ca.pem")?)
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "tls")]
    pub fn redis_ca(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.tls.ca = Some(pem.into());
        self
    }

    /// Presents this client certificate (PEM chain and PEM private key) to `rediss://` servers that ask for
    /// one (mutual TLS: `tls-auth-clients yes`).
    #[cfg(feature = "tls")]
    pub fn redis_client_certificate(
        mut self,
        certificate: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> Self {
        self.tls.client = Some((certificate.into(), key.into()));
        self
    }

    /// Counts in this process's memory (the default): each process enforces its own limits.
    pub fn in_memory(mut self) -> Self {
        self.redis = None;
        self
    }

    /// Sets the default key prefix (default `"rate_limit:"`).
    pub fn prefix(mut self, prefix: impl Into<Cow<'static, str>>) -> Self {
        self.defaults.crate_wide.prefix = Some(prefix.into());
        self
    }

    /// Sets the default window (default 60 s).
    pub fn window(mut self, window: Duration) -> Self {
        self.defaults.crate_wide.window = Some(window);
        self
    }

    /// Sets the default admissions per window (default 100).
    pub fn max(mut self, max: u64) -> Self {
        self.defaults.crate_wide.max = Some(max);
        self
    }

    /// Sets the default rejection message.
    pub fn message(mut self, message: impl Into<Cow<'static, str>>) -> Self {
        self.defaults.crate_wide.message = Some(message.into());
        self
    }

    /// Sets defaults for the annotated functions of one module and the modules inside it (`"my_crate::billing"`
    /// also covers `my_crate::billing::invoices`): what `defaults` sets wins over the crate-wide defaults; what
    /// an attribute (or a rule) writes wins over both. Each part comes from the innermost configured module that
    /// sets it, as for log targets.
    ///
    /// ```
    /// use limiter_runtime::{Limiter, Rule};
    ///
    /// let limiter = Limiter::builder()
    ///     .max(100)
    ///     .defaults_for("my_crate::billing", Rule::new().max(10).prefix("billing:"))
    ///     .build()
    ///     .unwrap();
    /// ```
    pub fn defaults_for(mut self, module: impl Into<String>, defaults: Rule) -> Self {
        self.defaults.set_module(module.into(), defaults);
        self
    }

    /// Sets what decides when Redis fails or is too slow (default [`OnError::Open`]); a rule or an attribute can
    /// say otherwise for itself.
    pub fn on_error(mut self, on_error: OnError) -> Self {
        self.defaults.crate_wide.on_error = Some(on_error);
        self
    }

    /// Sets the bound on one Redis decision (default 50 ms). A decision that takes longer is a failure, decided by
    /// the [`OnError`] policy, and is never retried: it may have been applied.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Sets how long making a connection to Redis may take: connecting, the TLS handshake, authenticating and
    /// selecting the database (default the deadline, and at least 250 ms). The first call of a process waits
    /// for it outside its own deadline: a deadline is for Redis to decide, not to be connected to.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = Some(timeout);
        self
    }

    /// Sets the breaker: after `failures` consecutive failures (default 3) the limiter stops calling Redis and
    /// decides in degraded mode at once; every `probe_every` (default 250 ms) one call probes Redis, and the
    /// first success closes the breaker again.
    pub fn breaker(mut self, failures: u32, probe_every: Duration) -> Self {
        self.breaker = BreakerConfig {
            failures: failures.max(1),
            probe_every,
        };
        self
    }

    /// Sets the group of runtimes that share this Redis's limits (default `"default"`): they count each other through
    /// heartbeats in Redis, and under [`OnError::Local`] each takes `ceil(max / live instances)` while Redis is
    /// down. Give each service its own group when several share one Redis.
    pub fn instance_group(mut self, group: impl Into<String>) -> Self {
        self.group = Some(group.into());
        self
    }

    /// Sets how often this runtime renews its heartbeat while Redis is healthy (default 1 s); an instance that misses
    /// three is no longer counted.
    pub fn heartbeat_every(mut self, every: Duration) -> Self {
        self.heartbeat_every = Some(every);
        self
    }

    /// Sets whether this node answers a key Redis said is limited by itself until its `retry_after` (default: yes).
    /// Under an abusive key that is one Redis call per retry period instead of one per request. Whether a call
    /// is denied and its `retry_after` stay exact; a cached answer's `remaining` and `reset_after` are as Redis
    /// last reported them.
    pub fn deny_cache(mut self, enabled: bool) -> Self {
        self.no_deny_cache = !enabled;
        self
    }

    /// Sets whether calls on the same key and limits that arrive while one of them is with Redis go to Redis
    /// together, in one script call, once its answer is in (default: on). Each is still decided exactly as if
    /// sent alone, in arrival order; one hot key then costs Redis one script call per round trip, not one per
    /// call. An uncontended call is sent at once: there is no timer.
    pub fn coalesce(mut self, enabled: bool) -> Self {
        self.no_coalescing = !enabled;
        self
    }

    /// Sets whether calls on different keys also go to Redis together (default: yes; a cluster's never do): a call
    /// that finds 4 script calls in flight on the connection waits for one of them to end and goes in the
    /// next, with every call that arrived meanwhile, whatever its key, and one script call decides them all,
    /// each exactly as if sent alone (a call that finds fewer in flight goes at once, alone). At 64 tasks on
    /// 10,000 keys on one Redis on loopback it makes an eleventh as many script calls, and decides 1-11% more
    /// a second than without it, for 0.92× the Redis CPU and 0.62× this process's CPU a decision, at a p99
    /// about a tenth higher (see `BENCHMARKS.md`). Off, each key's calls go in script calls of their own.
    pub fn batch_across_keys(mut self, enabled: bool) -> Self {
        self.apart_by_key = !enabled;
        self
    }

    /// Sets whether this node tallies its decisions for the operators' views (default: yes):
    /// [`Limiter::top_limited`](crate::Limiter::top_limited) and [`Limiter::overview`](crate::Limiter::overview)
    /// (and the `admin` feature's page) show only the nodes that do. The tally costs a decision on Redis about
    /// 1.5% more of the client's instructions, a refused call in memory about a quarter more (see
    /// `BENCHMARKS.md`): a service limiting in memory on a hot path may turn it off.
    pub fn tally(mut self, enabled: bool) -> Self {
        self.no_tally = !enabled;
        self
    }

    /// Sets the most keys this process keeps in memory (default 1,000,000: about 250 MB of short keys with small
    /// limits; a sliding log takes 16 bytes more for each microsecond of its window that admitted calls): the
    /// in-memory store's, or, on Redis, the `local` fallback's. Keys are chosen by callers, so without a
    /// bound a flood of distinct keys would take the process's memory. A store at its bound forgets its
    /// expired keys, then the keys closest to their expiry (they hold the least): such a key starts afresh
    /// when it comes back, so its limit may admit up to `max` more once. Counted in
    /// [`Stats::evicted`](crate::Stats::evicted) (and the `metrics` feature's `limiter_evicted_keys_total`).
    ///
    /// The blocks of keys under a [`Penalty`](crate::Penalty) are kept apart, under the same bound: a blocked
    /// key counts twice in [`Stats::keys`](crate::Stats::keys), and a store at its bound of blocks forgets
    /// those closest to being forgiven first (such a key may offend again as a first offender).
    pub fn max_keys(mut self, keys: usize) -> Self {
        self.max_keys = Some(keys);
        self
    }

    /// Sets the clock decisions read, in memory: it replaces the system clock (see
    /// [`FakeClock`](crate::FakeClock)).
    ///
    /// With Redis, decisions read Redis's `TIME`, and [`build`](LimiterBuilder::build) refuses a clock of
    /// your own: skewed nodes would disagree about time. (This crate's own tests pass "now" to the scripts
    /// through its `test-clock` feature, which no other build can turn on.)
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// Sets this process's own clock (a test hook): the one of decisions made without Redis (the switch off, degraded
    /// mode, in memory), while Redis decisions keep reading Redis `TIME`. Tests give processes clocks seconds
    /// apart with it, and show that they still share one exact window.
    #[doc(hidden)]
    #[cfg(feature = "test-clock")]
    pub fn local_clock(mut self, clock: impl Clock) -> Self {
        self.local_clock = Some(Arc::new(clock));
        self
    }

    /// Builds the limiter, then connects to Redis and checks it can be used: connected, authenticated, the
    /// database selected, every decision script loaded ([`Limiter::ready`]). A refused port, a wrong
    /// password, a database that does not exist or a TLS certificate refused is an error naming the cause,
    /// at start-up, not degraded decisions found by the first requests. In memory, the same as
    /// [`build`](LimiterBuilder::build).
    ///
    /// ```no_run
    /// use limiter_runtime::Limiter;
    ///
    /// # async fn start() -> Result<(), limiter_runtime::Error> {
    /// Limiter::builder()
    ///     .redis("redis://127.0.0.1:6379/")
    ///     .connect()
    ///     .await?
    ///     .install()?;
    /// # Ok(()) }
    /// ```
    pub async fn connect(self) -> Result<Limiter, Error> {
        let limiter = self.build()?;
        limiter.ready().await?;
        Ok(limiter)
    }

    /// Builds the limiter. Fails only on a Redis setup that cannot work: an unparsable URL, a Cluster or
    /// Sentinel setup with no node or no master name, TLS settings that cannot be used. Nothing is connected
    /// yet: the first decision connects (its deadline is for Redis to decide, not to be connected to), or
    /// [`connect`](LimiterBuilder::connect) does, and checks, at start-up.
    pub fn build(self) -> Result<Limiter, Error> {
        let own_clock = self.clock.is_some() || self.local_clock.is_some();
        let clock: Arc<dyn Clock> = match self.local_clock.as_ref().or(self.clock.as_ref()) {
            Some(clock) => clock.clone(),
            None => Arc::new(SystemClock::new()),
        };
        let max_keys = self.max_keys.unwrap_or(DEFAULT_MAX_KEYS);
        if self.redis.is_none() && self.env_read {
            tracing::warn!(
                "rate limiter: {REDIS_URL_ENV} is not set; counting in memory, so every process enforces its \
                 own limits (set {REDIS_URL_ENV} to count in Redis, once for every process)"
            );
        }
        let backend = match self.redis {
            None => Backend::Memory(MemoryStore::new(clock.clone(), max_keys)),
            Some(_) if self.clock.is_some() && !cfg!(feature = "test-clock") => {
                return Err(Error::InvalidRedisSetup(
                    "a clock of your own decides only in memory: with Redis, decisions read Redis's clock, \
                     the one every node shares (a clock passed to Redis is a hook of limiter's own tests)"
                        .to_owned(),
                ));
            }
            Some(redis) => {
                let deadline = self.deadline.unwrap_or(DEFAULT_DEADLINE);
                let timeout = self
                    .connect_timeout
                    .unwrap_or_else(|| connect_timeout(deadline));
                let topology = match redis {
                    Redis::Server(url) if self.redis_from_env => {
                        Topology::server(&url, &self.tls, timeout).map_err(|source| {
                            Error::InvalidEnvSetup {
                                name: REDIS_URL_ENV,
                                source: Box::new(source),
                            }
                        })?
                    }
                    Redis::Server(url) => Topology::server(&url, &self.tls, timeout)?,
                    Redis::Cluster(seeds) => Topology::cluster(&seeds, &self.tls, timeout)?,
                    Redis::Sentinel { master, sentinels } => {
                        Topology::sentinel(&master, &sentinels, &self.tls, timeout)?
                    }
                    Redis::Unusable(reason) => Topology::Unusable(reason),
                };
                let instances = Instances::new(
                    self.group.as_deref().unwrap_or("default"),
                    self.heartbeat_every.unwrap_or(Duration::from_secs(1)),
                );
                let local = MemoryStore::new(clock.clone(), max_keys);
                Backend::Redis(Arc::new(RedisBackend::new(
                    topology,
                    (deadline, timeout),
                    self.clock,
                    Fallback::new(local, instances),
                    self.breaker,
                    Sparing {
                        deny_cache: !self.no_deny_cache,
                        coalesce: !self.no_coalescing,
                        across_keys: !self.apart_by_key,
                    },
                )))
            }
        };
        let limits = match &self.limits_file {
            Some((path, from_env)) => Some(limits::read(path, *from_env, &self.defaults)?),
            None => None,
        };
        let limiter = Limiter::new(backend, self.defaults, clock);
        if let (Some((path, _)), Some((file, version))) = (self.limits_file, limits) {
            crate::limiter::limits::put_in_force(&limiter.pipeline, file, version);
            limiter.watch_limits(path);
        }
        if own_clock {
            limiter.pipeline.lines.lag.turn_off();
        }
        limiter
            .pipeline
            .observers
            .watch
            .set_tallying(!self.no_tally);
        if tokio::runtime::Handle::try_current().is_ok() {
            // The heartbeat from now, not from the first decision: an instance is counted in the others'
            // `local` shares by being there, idle or not.
            limiter.pipeline.start_background();
        }
        Ok(limiter)
    }
}

#[cfg(test)]
mod tests {
    use crate::{Error, FakeClock, Limiter};

    /// Checks that a clock of one's own reaches Redis's scripts only in a build with the `test-clock` feature: a
    /// production build refuses it, naming why. (The suite runs both ways: with every feature, then the
    /// runtime's unit tests with its default features.)
    #[test]
    fn a_clock_of_ones_own_is_refused_with_redis_unless_testing() {
        let built = Limiter::builder()
            .redis("redis://127.0.0.1:1/")
            .clock(FakeClock::new())
            .build();
        if cfg!(feature = "test-clock") {
            assert!(built.is_ok());
        } else {
            let error = built.expect_err("a clock of its own refused");
            assert!(matches!(error, Error::InvalidRedisSetup(_)), "{error}");
            assert!(error.to_string().contains("Redis's clock"), "{error}");
        }
        let in_memory = Limiter::builder().clock(FakeClock::new()).build();
        assert!(in_memory.is_ok());
    }
}
