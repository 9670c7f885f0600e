//! What the integration tests share: the throw-away Redis harnesses (from `test-support`), a throw-away nginx
//! and an in-process strict upstream, captured logs, a seeded random generator and a minimal HTTP client.

use std::time::{Duration, Instant};

use limiter_runtime::{Algorithm, Limiter, Rule};

pub use test_support::{
    cluster, sentinel, Monitor, RedisCluster, RedisSentinel, RedisServer, PATIENT,
};

pub mod callers;
pub mod nginx;
pub mod strict;

pub use nginx::NginxServer;
pub use strict::StrictUpstream;

/// A limiter on `server` whose every command `monitor` shows next is a decision's: no deny cache, no
/// heartbeat for an hour, and its start-up traffic (the first heartbeat, the overrides' first load) seen
/// over, not slept on. It has decided one call of `rule` on key `warm`. Patient: on a loaded machine, a call
/// past the default 50 ms deadline would be decided without Redis while its script (`EVALSHA`, then `EVAL`
/// on `NOSCRIPT`) still reaches Redis later, among the commands a test counts.
pub async fn quiet_limiter(server: &RedisServer, monitor: &Monitor, rule: &Rule) -> Limiter {
    let limiter = server
        .builder()
        .deadline(PATIENT)
        .deny_cache(false)
        .heartbeat_every(Duration::from_secs(3_600))
        .build()
        .unwrap();
    limiter.check(rule, "warm").await;
    monitor.wait_for(&["limiter:instances:", "HGETALL"]);
    limiter
}

/// Every algorithm, for tests that hold for each of them.
pub const ALGORITHMS: [Algorithm; 5] = Algorithm::ALL;

/// Captures what the limiter logs, to assert on warn-level events.
pub mod logs {
    use std::io::Write;
    use std::sync::{Arc, Mutex, OnceLock};

    use tracing::subscriber::Interest;
    use tracing::{span, Dispatch, Event, Metadata};
    use tracing_subscriber::fmt::MakeWriter;

    /// A `tracing` subscriber's output, kept in memory.
    #[derive(Debug, Clone, Default)]
    pub struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Captured {
        /// A subscriber writing every event at `TRACE` and above into this buffer, without colours.
        ///
        /// It holds every event of the thread or task it is the subscriber of, even one whose callsite
        /// another thread, logging into no subscriber, met first: see `Undecided`.
        pub fn subscriber(&self) -> impl tracing::Subscriber + Send + Sync {
            static UNDECIDED: OnceLock<Dispatch> = OnceLock::new();
            UNDECIDED.get_or_init(|| Dispatch::new(Undecided));
            tracing_subscriber::fmt()
                .with_writer(self.clone())
                .with_ansi(false)
                .with_max_level(tracing::Level::TRACE)
                .finish()
        }

        /// Everything logged so far.
        pub fn text(&self) -> String {
            String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
        }
    }

    /// A subscriber that is no thread's, registered once and kept for good, so that `tracing` never caches
    /// a callsite as of no interest to every thread. While a single subscriber is registered, `tracing`
    /// decides the interest of a callsite met for the first time by the subscriber of the thread that meets
    /// it, and keeps that answer: met first by a test logging into no subscriber, beside a test that
    /// captures (a test binary runs its tests on parallel threads), the callsite would be dropped for the
    /// capturing test too. With this one registered beside, every callsite stays of interest "sometimes",
    /// and each event asks the subscriber of its own thread.
    struct Undecided;

    impl tracing::Subscriber for Undecided {
        fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
            Interest::sometimes()
        }

        fn enabled(&self, _: &Metadata<'_>) -> bool {
            false
        }

        fn new_span(&self, _: &span::Attributes<'_>) -> span::Id {
            span::Id::from_u64(1)
        }

        fn record(&self, _: &span::Id, _: &span::Record<'_>) {}

        fn record_follows_from(&self, _: &span::Id, _: &span::Id) {}

        fn event(&self, _: &Event<'_>) {}

        fn enter(&self, _: &span::Id) {}

        fn exit(&self, _: &span::Id) {}
    }

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;

        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }
}

/// What every deployment (one server, a cluster, Sentinel; plain or over TLS) must do as one server does.
pub mod deployment {
    use std::time::{Duration, Instant};

    use limiter_runtime::{Algorithm, Limiter, LimiterBuilder, Override, Rule};

    use crate::PATIENT;

    /// How many keys each algorithm is checked on.
    pub const KEYS: usize = 64;

    /// What every deployment must do as one server does. Two runtimes `a` and `b` share each limit: every
    /// algorithm admits exactly its limit on each of [`KEYS`] keys (so, on a cluster, over every master); both
    /// runtimes count each other through heartbeats; the switch turns all Redis traffic off and on again; an
    /// override set through one runtime reaches the other within a second.
    /// `evalsha` counts the script calls Redis has run so far.
    pub async fn behaves_like_one_server(a: &Limiter, b: &Limiter, evalsha: impl Fn() -> u64) {
        let algorithms = [
            (Algorithm::SlidingLog, 3),
            (Algorithm::FixedWindow, 3),
            (Algorithm::SlidingWindow, 3),
            (Algorithm::TokenBucket, 3),
            (Algorithm::LeakyBucket, 1),
        ];
        for (algorithm, expected) in algorithms {
            let rule = Rule::new()
                .algorithm(algorithm)
                .max(3)
                .window(Duration::from_secs(3_600))
                .prefix(format!("{algorithm:?}:"));
            let keys = (0..KEYS).map(|key| {
                let (a, b, rule) = (a.clone(), b.clone(), rule.clone());
                tokio::spawn(async move {
                    let mut admitted = 0;
                    for call in 0..5 {
                        let runtime = if call % 2 == 0 { &a } else { &b };
                        let decision = runtime.check(&rule, format!("user{key}")).await;
                        assert!(!decision.degraded, "{algorithm:?}: a decision failed");
                        admitted += usize::from(decision.allowed);
                    }
                    admitted
                })
            });
            let keys: Vec<_> = keys.collect();
            for admitted in keys {
                assert_eq!(admitted.await.unwrap(), expected, "{algorithm:?}");
            }
        }

        // Each runtime renews its heartbeat (every 100 ms here) and so counts the other.
        let started = Instant::now();
        while a.stats().instances != 2 || b.stats().instances != 2 {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "heartbeats: {:?} and {:?}",
                a.stats(),
                b.stats()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // Off here: every call goes ahead with no Redis traffic at all, heartbeats included.
        a.set_enabled_here(false);
        b.set_enabled_here(false);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = evalsha();
        let rule = Rule::new().max(1).prefix("switch:");
        for _ in 0..10 {
            for runtime in [a, b] {
                let decision = runtime.check(&rule, "k").await;
                assert!(decision.allowed && !decision.degraded);
            }
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(evalsha(), before, "no script ran while the switch was off");
        a.set_enabled_here(true);
        b.set_enabled_here(true);
        assert!(a.check(&rule, "k").await.allowed);
        let decision = b.check(&rule, "k").await;
        assert!(
            !decision.allowed && !decision.degraded,
            "Redis decides again"
        );

        // An override set through one runtime reaches the other within a second (pub/sub), and decides there.
        a.set_override(Override::policy("dynamic:").max(1))
            .await
            .unwrap();
        let started = Instant::now();
        while b.overrides().is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "b has not seen the override"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let rule = Rule::new().max(5).prefix("dynamic:");
        assert!(b.check(&rule, "k").await.allowed);
        assert!(
            !a.check(&rule, "k").await.allowed,
            "the override's limit of 1, shared"
        );
        a.clear_override(&Override::policy("dynamic:"))
            .await
            .unwrap();
        let started = Instant::now();
        while !b.overrides().is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "b has not seen the override cleared"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// A limiter from `builder`, patient, renewing its heartbeat every 100 ms.
    pub fn with_heartbeats(builder: LimiterBuilder) -> Limiter {
        builder
            .deadline(PATIENT)
            .heartbeat_every(Duration::from_millis(100))
            .build()
            .unwrap()
    }

    /// How many script calls (`EVALSHA`) the server behind `connection` has run.
    pub fn evalsha_calls(connection: &mut redis::Connection) -> u64 {
        let stats: String = redis::cmd("INFO")
            .arg("commandstats")
            .query(connection)
            .unwrap();
        stats
            .lines()
            .find_map(|line| line.strip_prefix("cmdstat_evalsha:calls="))
            .and_then(|rest| rest.split(',').next())
            .map_or(0, |n| n.parse().unwrap())
    }
}

/// Shares of a limit kept for the calls that matter most, on every node: what each deployment must keep.
pub mod priorities {
    use std::time::Duration;

    use limiter_runtime::{Algorithm, Limiter, Period, Priority, Rule, Verdict};

    /// What one caller's calls were told: admitted, refused for a share kept above them, refused for the limit.
    #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
    pub struct Told {
        pub admitted: u64,
        pub reserved: u64,
        pub limited: u64,
    }

    /// Makes `calls` calls of `priority` on `rule`'s `key` through `runtime`, `pause` apart.
    pub async fn calls(
        runtime: Limiter,
        rule: Rule,
        key: &'static str,
        priority: Priority,
        calls: u64,
        pause: Duration,
    ) -> Told {
        let mut told = Told::default();
        for _ in 0..calls {
            let decision = runtime.check(&rule, key).priority(priority).await;
            assert!(!decision.degraded, "a decision failed: {decision:?}");
            match decision.verdict {
                Verdict::Admitted => told.admitted += 1,
                Verdict::Reserved => told.reserved += 1,
                Verdict::Limited => told.limited += 1,
                other => panic!("{priority}: {other:?}"),
            }
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
        told
    }

    /// A flood of `Normal` calls at 10× a limit of 100 from two runtimes `a` and `b`, while a trickle of 20
    /// `Critical` calls arrives from both, under a rule that keeps 20% for `Critical` calls; for each count over a
    /// long window (nothing leaves it meanwhile): every `Critical` call within its share is admitted, the
    /// `Normal` calls never pass their ceiling of 80 (they fill it, less the `Critical` calls that came
    /// first), and the total never passes 100: more `Critical` calls fill it to exactly 100, then are refused.
    pub async fn a_flood_leaves_the_critical_share(a: &Limiter, b: &Limiter, prefix: &str) {
        let rules = [
            Algorithm::SlidingLog,
            Algorithm::FixedWindow,
            Algorithm::SlidingWindow,
            Algorithm::TokenBucket,
        ]
        .map(|algorithm| {
            Rule::new()
                .algorithm(algorithm)
                .window(Duration::from_secs(3_600))
        })
        .into_iter()
        .chain([Rule::new().period(Period::Day)]);
        for (i, rule) in rules.enumerate() {
            let rule = rule
                .max(100)
                .prefix(format!("{prefix}{i}:"))
                .reserve(Priority::Critical, 20);
            let mut tasks = Vec::new();
            for runtime in [a, b] {
                for _ in 0..4 {
                    let flood = calls(
                        runtime.clone(),
                        rule.clone(),
                        "shop",
                        Priority::Normal,
                        125,
                        Duration::ZERO,
                    );
                    tasks.push((Priority::Normal, tokio::spawn(flood)));
                }
                let pause = Duration::from_millis(3);
                let trickle = calls(
                    runtime.clone(),
                    rule.clone(),
                    "shop",
                    Priority::Critical,
                    10,
                    pause,
                );
                tasks.push((Priority::Critical, tokio::spawn(trickle)));
            }
            let (mut normal, mut critical) = (Told::default(), Told::default());
            for (priority, task) in tasks {
                let told = task.await.unwrap();
                let sum = match priority {
                    Priority::Critical => &mut critical,
                    _ => &mut normal,
                };
                sum.admitted += told.admitted;
                sum.reserved += told.reserved;
                sum.limited += told.limited;
            }
            let name = format!("{:?}", rule.clone());
            assert_eq!(
                critical.admitted, 20,
                "every critical call within its share: {name}"
            );
            assert!(
                (60..=80).contains(&normal.admitted),
                "normal calls fill their ceiling of 80, less the critical calls before them: {normal:?}, {name}"
            );
            assert_eq!(normal.admitted + normal.reserved + normal.limited, 1_000);
            // The total is below 100 by the critical calls that came before the flood filled its ceiling: more
            // critical calls fill it to exactly 100, never more.
            let used = normal.admitted + critical.admitted;
            let mut more = 0;
            loop {
                let decision = a.check(&rule, "shop").priority(Priority::Critical).await;
                if !decision.allowed {
                    assert_eq!(decision.verdict, Verdict::Limited, "{name}");
                    break;
                }
                more += 1;
                assert!(used + more <= 100, "{name}");
            }
            assert_eq!(used + more, 100, "{name}");
            let refused = b.check(&rule, "shop").await;
            assert!(!refused.allowed && refused.remaining == 0, "{refused:?}");
        }
    }
}

/// A small deterministic random generator (SplitMix64), so schedules replay from their seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator replaying the sequence of `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// A minimal HTTP/1.1 client for end-to-end tests: one request per connection, over loopback.
pub mod http {
    use std::net::SocketAddr;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A response: status, headers (names lower-cased) and body.
    #[derive(Debug, Clone)]
    pub struct Response {
        /// The status code.
        pub status: u16,
        /// The headers, in order, names lower-cased.
        pub headers: Vec<(String, String)>,
        /// The body, as text.
        pub body: String,
    }

    impl Response {
        /// The value of header `name` (lower case), if present.
        pub fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        }
    }

    /// Sends `method path` to `address` and reads the whole response.
    pub async fn request(address: SocketAddr, method: &str, path: &str) -> Response {
        request_with(address, method, path, &[]).await
    }

    /// [`request`] with `headers` added to the request.
    pub async fn request_with(
        address: SocketAddr,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Response {
        request_with_body(address, method, path, headers, None).await
    }

    /// [`request_with`], sending `body`.
    pub async fn request_with_body(
        address: SocketAddr,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        send(None, address, method, path, headers, body).await
    }

    /// [`request_with_body`] from the loopback address `from` (any of 127.0.0.0/8): a client of its own, as
    /// the server sees it.
    pub async fn request_from(
        from: std::net::Ipv4Addr,
        address: SocketAddr,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        assert!(from.is_loopback(), "tests use loopback addresses alone");
        send(Some(from), address, method, path, headers, body).await
    }

    /// Sends `method path` to `address` (from `from`, else from where the system picks), on a connection of
    /// its own, and reads the whole response.
    async fn send(
        from: Option<std::net::Ipv4Addr>,
        address: SocketAddr,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&str>,
    ) -> Response {
        let connected = match from {
            // Bound only when asked: a bound socket holds its port through TIME_WAIT.
            Some(from) => {
                let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
                let bound = socket.bind(SocketAddr::from((from, 0)));
                bound.expect("a loopback address to send from");
                socket.connect(address).await
            }
            None => tokio::net::TcpStream::connect(address).await,
        };
        let mut stream = connected.expect("the service accepts connections");
        let body = body.unwrap_or_default();
        let extra: String = headers
            .iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        let length = body.len();
        let request = format!("{method} {path} HTTP/1.1\r\nHost: {address}\r\n{extra}Content-Length: {length}\r\nConnection: close\r\n\r\n{body}");
        stream
            .write_all(request.as_bytes())
            .await
            .expect("request sent");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.expect("response read");
        let raw = String::from_utf8(raw).expect("a UTF-8 response");
        let (head, body) = raw.split_once("\r\n\r\n").expect("headers end");
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status");
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        Response {
            status,
            headers,
            body: body.to_owned(),
        }
    }
}

/// The units (calls of cost 1) a sliding log in Redis holds at `key`: the weight of each of its members scored
/// by their admission time, `<nonce>*<units>` or one unit (`#`, which keeps the count while some weigh more, is
/// scored below zero).
pub fn logged_calls(connection: &mut redis::Connection, key: &str) -> usize {
    logged_members(connection, key)
        .iter()
        .map(|member| match member.rsplit_once('*') {
            Some((_, units)) => units.parse().expect("a member's units"),
            None => 1,
        })
        .sum()
}

/// The members a sliding log in Redis holds at `key`, oldest first (not `#`).
pub fn logged_members(connection: &mut redis::Connection, key: &str) -> Vec<String> {
    redis::cmd("ZRANGEBYSCORE")
        .arg(key)
        .arg(0)
        .arg("+inf")
        .query(connection)
        .expect("ZRANGEBYSCORE answers")
}

/// Calls (key `probe`) until a decision comes from Redis again, and says how long that took; fails after 5 s.
pub async fn until_redis_decides(limiter: &Limiter, rule: &Rule) -> Duration {
    let started = Instant::now();
    while limiter.check(rule, "probe").await.degraded {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "still degraded after 5 s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    started.elapsed()
}

/// `calls` checks of `rule` for `key` at once, each on a task of its own: each call's decision and how long
/// it took, from its own start.
pub async fn at_once(
    limiter: &Limiter,
    rule: &Rule,
    key: &'static str,
    calls: usize,
) -> Vec<(limiter_runtime::Decision, Duration)> {
    let tasks: Vec<_> = (0..calls)
        .map(|_| {
            let (limiter, rule) = (limiter.clone(), rule.clone());
            tokio::spawn(async move {
                let asked = Instant::now();
                let decision = limiter.check(&rule, key).await;
                (decision, asked.elapsed())
            })
        })
        .collect();
    let mut answers = Vec::with_capacity(calls);
    for task in tasks {
        answers.push(task.await.expect("a call's task panicked"));
    }
    answers
}
