//! Limits in flight: at most N calls of a key running at once, across every node.
//!
//! - **Never more, across processes:** four `holder` processes (`tests/src/bin/holder.rs`) of 32 tasks each
//!   take permits on a few keys, and every body counts itself in and out in Redis (`INCR`/`DECR`, an
//!   independent count): at no instant more than N bodies of a key ran, and N did.
//! - **Crash-safe:** the permits of a process killed with `kill -9` come back once their time to live has
//!   passed (not before its last renewal could have let them), while those of a live holder are renewed
//!   past it.
//! - **Given back however the body ends:** returned, cancelled (its future dropped), panicked; stacked with a
//!   rate, all or nothing (a refused call holds no permit and charges no rate).
//! - **Memory and Redis alike**, keys that look alike counted apart, and the HTTP answer of the tower layer
//!   (its permit held until the response body is done, the quota fields read with a Structured Fields
//!   parser).
//!
//! (A test binary of its own: a holder process starved of the CPU by other tests would miss its renewals.)

use std::future::IntoFuture;
mod fields;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{rate_limit, FakeClock, Limiter, Permit, RateLimited, Rule};
use tests::http::request;
use tests::RedisServer;

/// Runs `holder <args>`.
fn holder(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_holder"));
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    command
}

/// The tests that run `holder` processes run one at a time: a holder starved of the CPU by four others
/// would miss its renewals, which is not what its test is about.
static PROCESSES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[test]
fn at_most_n_bodies_of_a_key_run_at_once_across_four_processes() {
    const PERMITS: u64 = 3;
    let _alone = PROCESSES.blocking_lock();
    let server = RedisServer::start();
    let url = server.url();
    let children: Vec<_> = (0..4)
        .map(|_| {
            holder(&["run", &url, "4", "32", "3000", &PERMITS.to_string(), "100"])
                .spawn()
                .expect("the holder binary runs")
        })
        .collect();
    let (mut admitted, mut most) = (0, 0);
    for child in children {
        let output = child.wait_with_output().expect("a holder process");
        assert!(output.status.success(), "a holder failed: {output:?}");
        let text = String::from_utf8_lossy(&output.stdout);
        let line = text.lines().last().unwrap_or_default().to_owned();
        let words: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|word| word.parse().expect("a number"))
            .collect();
        let [a, refused, degraded, m] = words[..] else {
            panic!("unexpected line {line:?}");
        };
        assert_eq!(degraded, 0, "every decision Redis's: {line}");
        assert!(
            refused > 0,
            "128 tasks on 4 keys of {PERMITS}: some are refused: {line}"
        );
        (admitted, most) = (admitted + a, most.max(m));
    }
    assert!(
        most <= PERMITS,
        "{most} bodies of one key ran at once across the processes; the limit is {PERMITS}"
    );
    assert_eq!(most, PERMITS, "the limit was reached");
    // Each process runs 3 s, and on until it has admitted 100 calls (fewer fit in 3 s on a loaded machine).
    assert!(admitted >= 400, "{admitted} admissions");
}

/// A `holder hold` process, killed when dropped: a test that fails leaves none running.
struct Holding(std::process::Child);

impl Drop for Holding {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Takes `permits` permits of `key` in a `holder hold` process (permits living `ttl`), once it says so.
fn holding(url: &str, key: &str, permits: u64, ttl: Duration) -> Holding {
    let ttl = ttl.as_millis().to_string();
    let mut child = Holding(
        holder(&["hold", url, key, &permits.to_string(), &ttl])
            .spawn()
            .expect("the holder binary runs"),
    );
    let stdout = child.0.stdout.take().expect("its output");
    let line = BufReader::new(stdout).lines().next();
    assert_eq!(line.and_then(Result::ok).as_deref(), Some("held"));
    child
}

fn kill_9(child: &mut Holding) {
    let status = Command::new("kill")
        .args(["-9", &child.0.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    child.0.wait().expect("the killed holder is reaped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holders_permits_come_back_after_their_time_to_live_and_not_before() {
    let _alone = PROCESSES.lock().await;
    // A live holder renews its permits every third of their time to live: one starved of the CPU for two thirds
    // of it loses them, as a dead one would. 2 s: a loaded two-core machine stalls a process for far less.
    let ttl = Duration::from_secs(2);
    let server = RedisServer::start();
    let mut child = holding(&server.url(), "crash", 2, ttl);
    let limiter = server.limiter();
    let rule = Rule::new().prefix("held:").in_flight(2).in_flight_ttl(ttl);
    assert!(limiter.acquire(&rule, "crash").await.is_err());
    kill_9(&mut child);
    // Dead, it renews no more: its permits expire at the times Redis holds for them (µs, Redis's clock).
    let mut redis = server.connection();
    let expiries: Vec<(String, u64)> = redis::cmd("ZRANGE")
        .arg("held:crash")
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut redis)
        .unwrap();
    assert_eq!(expiries.len(), 2, "{expiries:?}");
    let first = expiries.iter().map(|(_, at)| *at).min().unwrap();
    let redis_now = |redis: &mut redis::Connection| -> u64 {
        let (s, us): (u64, u64) = redis::cmd("TIME").query(redis).unwrap();
        s * 1_000_000 + us
    };
    // Refused while Redis's clock is before the first expiry, admitted once it is past it: read Redis's
    // clock around each call, so that the order is Redis's, not this process's.
    let killed = Instant::now();
    loop {
        let before = redis_now(&mut redis);
        let acquired = limiter.acquire(&rule, "crash").await;
        let after = redis_now(&mut redis);
        match acquired {
            Ok(_) => {
                assert!(after >= first, "back before its time: {after} < {first}");
                break;
            }
            Err(_) => assert!(
                before < first,
                "still held past its time: {before} >= {first}"
            ),
        }
        assert!(
            killed.elapsed() < ttl * 3,
            "the killed holder's permits are still held"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_holders_permits_are_renewed_past_their_time_to_live() {
    let _alone = PROCESSES.lock().await;
    // Renewed every third of it, permits survive a stall of the holder shorter than two thirds of their time to
    // live: 2 s (a loaded two-core machine stalls a process for far less), watched for 4 of them.
    let ttl = Duration::from_secs(2);
    let server = RedisServer::start();
    let mut child = holding(&server.url(), "alive", 2, ttl);
    let limiter = server.limiter();
    let rule = Rule::new().prefix("held:").in_flight(2).in_flight_ttl(ttl);
    let start = Instant::now();
    while start.elapsed() < ttl * 4 {
        assert!(
            limiter.acquire(&rule, "alive").await.is_err(),
            "a live holder lost its permits after {:?}",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    kill_9(&mut child);
}

/// A body of `id` that runs for ever once it has raised `hang`'s flag (when there is one), or panics when
/// `boom`.
#[rate_limit(prefix = "body:", key = id, in_flight = 1)]
async fn body(id: &str, hang: Option<&AtomicBool>, boom: bool) -> Result<(), RateLimited> {
    if boom {
        panic!("the body panics");
    }
    if let Some(running) = hang {
        running.store(true, Ordering::SeqCst);
        std::future::pending::<()>().await;
    }
    Ok(())
}

/// Calls `body(id)` until one is admitted, for at most a second: how long it took.
async fn admitted_again(limiter: &Limiter, id: &str) -> Duration {
    let start = Instant::now();
    loop {
        if limiter.scope(body(id, None, false)).await.is_ok() {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "the permit never came back"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Holds `body(id)`'s one permit in a task of its own, until it is aborted: returned once the body runs, with
/// no other call of `id` under way (a call aborted on its way to Redis may take a permit no one holds, until
/// its time to live ends).
async fn hung(limiter: &Limiter, id: &'static str) -> tokio::task::JoinHandle<()> {
    let scoped = limiter.clone();
    let running = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&running);
    let task = tokio::spawn(async move {
        // Refused while another call holds the permit: again, until it runs (for ever).
        while scoped.scope(body(id, Some(&flag), false)).await.is_err() {
            tokio::task::yield_now().await;
        }
    });
    let start = Instant::now();
    while !running.load(Ordering::SeqCst) {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "the body never ran"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(
        limiter.scope(body(id, None, false)).await.is_err(),
        "a second call was admitted beside the running body"
    );
    task
}

async fn bodies_give_their_permits_back(limiter: &Limiter) {
    // Returned: the next is admitted at once.
    limiter.scope(body("returned", None, false)).await.unwrap();
    limiter.scope(body("returned", None, false)).await.unwrap();
    // Cancelled.
    let task = hung(limiter, "cancelled").await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    admitted_again(limiter, "cancelled").await;
    // Panicked.
    let scoped = limiter.clone();
    let panicked = tokio::spawn(async move { scoped.scope(body("panicked", None, true)).await });
    assert!(panicked.await.unwrap_err().is_panic());
    admitted_again(limiter, "panicked").await;
    assert_eq!(limiter.stats().permits, 0, "no permit left held");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_gives_its_permit_back_however_it_ends_in_memory() {
    bodies_give_their_permits_back(&Limiter::in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_gives_its_permit_back_however_it_ends_on_redis() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    bodies_give_their_permits_back(&limiter).await;
    // Nothing left in Redis either.
    let held: u64 = redis::cmd("ZCARD")
        .arg("body:in_flight:cancelled")
        .query(&mut server.connection())
        .unwrap();
    let also: u64 = redis::cmd("ZCARD")
        .arg("body:cancelled")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(held + also, 0);
}

/// At most one at once and two a minute, decided as one. A body given `hang` raises its flag and runs for ever.
#[rate_limit(prefix = "both:", key = id, max = 2, window = 60, in_flight = 1)]
async fn both(id: &str, hang: Option<&AtomicBool>) -> Result<(), RateLimited> {
    if let Some(running) = hang {
        running.store(true, Ordering::SeqCst);
        std::future::pending::<()>().await;
    }
    Ok(())
}

async fn stacked_all_or_nothing(limiter: &Limiter) {
    let rate = Rule::new()
        .prefix("both:")
        .max(2)
        .window(Duration::from_secs(60));
    // The limit in flight `in_flight = 1` adds beside the rate.
    let at_once = Rule::new().prefix("both:in_flight:").in_flight(1);
    let used = |d: limiter_runtime::Decision| d.limit - d.remaining;
    let (scoped, running) = (limiter.clone(), Arc::new(AtomicBool::new(false)));
    let flag = Arc::clone(&running);
    let first = tokio::spawn(async move {
        let _ = scoped.scope(both("k", Some(&flag))).await;
    });
    // Admitted, and running: its body has begun (the charge seen in the store would not say the call has its
    // answer: aborted before it does, a call gives back what it took). The rate charged once.
    let start = Instant::now();
    while !running.load(Ordering::SeqCst) {
        assert!(start.elapsed() < tests::PATIENT, "the first never ran");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(used(limiter.check(&rate, "k").cost(0).await), 1);
    // While it runs, the next is refused by the limit in flight, and charges no rate.
    let refused = limiter.scope(both("k", None)).await.unwrap_err();
    assert!(
        refused.policy().ends_with("in-flight") || refused.decision().in_flight,
        "{refused:?}"
    );
    assert_eq!(used(limiter.check(&rate, "k").cost(0).await), 1);
    first.abort();
    let _ = first.await;
    // Its permit back: admitted, the rate charged a second time.
    let start = Instant::now();
    while limiter.scope(both("k", None)).await.is_err() {
        // An event awaited (the permit given back on a task of its own), not a time: generous.
        assert!(
            start.elapsed() < tests::PATIENT,
            "the permit never came back"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(used(limiter.check(&rate, "k").cost(0).await), 2);
    // The rate spent: refused, holding no permit (one is free).
    let refused = limiter.scope(both("k", None)).await.unwrap_err();
    assert!(!refused.decision().in_flight, "{refused:?}");
    let permit = limiter
        .acquire(&at_once, "k")
        .await
        .expect("no permit held");
    drop(permit);
    // The plain API alike: a rate spent refuses the call, which holds no permit.
    let at_once = Rule::new().prefix("plain:running:").in_flight(1);
    let spent = Rule::new()
        .prefix("plain:")
        .max(1)
        .window(Duration::from_secs(60));
    limiter.check(&spent, "k").await;
    assert!(limiter
        .all([(&at_once, "k"), (&spent, "k")])
        .acquire()
        .await
        .is_err());
    let permit = limiter
        .acquire(&at_once, "k")
        .await
        .expect("no permit held");
    assert_eq!(permit.decision().remaining, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stacked_with_a_rate_a_call_is_admitted_by_both_or_holds_nothing() {
    stacked_all_or_nothing(&Limiter::in_memory()).await;
    let server = RedisServer::start();
    stacked_all_or_nothing(&server.limiter()).await;
}

/// One step of a schedule: take a permit of a key, give back the `n`th held, or let time pass.
#[derive(Debug, Clone, Copy)]
enum Step {
    Take(&'static str),
    Give(usize),
    Wait(u64),
}

/// Checks that memory and Redis decide a seeded schedule of takes, give-backs and waits alike, on fake clocks: the
/// whole decision of each take, admitted or refused (its verdict, `limit`, `remaining`, `retry_after`,
/// `reset_after`), and a refusal's `retry_after` is zero in both (when a permit comes back is its holder's to
/// say).
#[tokio::test]
async fn memory_and_redis_decide_alike() {
    let server = RedisServer::start();
    let (memory_clock, redis_clock) = (FakeClock::new(), FakeClock::new());
    let memory = Limiter::builder()
        .in_memory()
        .clock(memory_clock.clone())
        .build()
        .unwrap();
    let redis = server.limiter_with_clock(&redis_clock);
    let rule = Rule::new().prefix("same:").in_flight(3);
    const KEYS: [&str; 3] = ["a", "b", "c"];
    let mut rng = tests::Rng::new(7);
    let (mut held_memory, mut held_redis, mut keys) = (Vec::new(), Vec::new(), Vec::new());
    let mut connection = server.connection();
    let mut refused = 0;
    for step in 0..400 {
        let choice = match rng.below(10) {
            0..=5 => Step::Take(KEYS[rng.below(3) as usize]),
            6..=8 => Step::Give(rng.below(8) as usize),
            _ => Step::Wait(rng.below(1_000)),
        };
        match choice {
            Step::Take(key) => {
                let (m, r) = (
                    memory.acquire(&rule, key).await,
                    redis.acquire(&rule, key).await,
                );
                assert_eq!(m.is_ok(), r.is_ok(), "step {step}: {choice:?}");
                let decision = |taken: &Result<Permit, RateLimited>| match taken {
                    Ok(permit) => permit.decision(),
                    Err(refused) => *refused.decision(),
                };
                assert_eq!(decision(&m), decision(&r), "step {step}: {choice:?}");
                match (m, r) {
                    (Ok(m), Ok(r)) => {
                        held_memory.push(m);
                        held_redis.push(r);
                        keys.push(key);
                    }
                    (Err(m), _) => {
                        assert_eq!(m.decision().retry_after, Duration::ZERO, "step {step}");
                        refused += 1;
                    }
                    _ => unreachable!(),
                }
            }
            Step::Give(n) if n < held_memory.len() => {
                drop(held_memory.remove(n));
                drop(held_redis.remove(n));
                let key = keys.remove(n);
                // Redis hears of a release on a task of its own: wait until it has.
                let still = keys.iter().filter(|k| **k == key).count() as u64;
                let start = Instant::now();
                loop {
                    let held: u64 = redis::cmd("ZCARD")
                        .arg(format!("same:{key}"))
                        .query(&mut connection)
                        .unwrap();
                    if held == still {
                        break;
                    }
                    // An event awaited, not a time: generous, for a loaded machine.
                    assert!(start.elapsed() < tests::PATIENT, "step {step}");
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            }
            Step::Give(_) => {}
            Step::Wait(ms) => {
                memory_clock.advance(Duration::from_millis(ms));
                redis_clock.advance(Duration::from_millis(ms));
            }
        }
    }
    // The comparison means something only if the schedule refused calls too (it refuses 110 of its takes).
    assert!(refused > 50, "{refused} refused");
}

#[tokio::test]
async fn keys_that_look_alike_count_apart() {
    let server = RedisServer::start();
    for limiter in [Limiter::in_memory(), server.limiter()] {
        let rule = Rule::new().prefix("alike:").in_flight(1);
        let long = "ü".repeat(5_000);
        let keys = ["a", "a ", "a\n", "a:b", "a%3Ab", "", &long];
        let permits: Vec<_> = {
            let mut permits = Vec::new();
            for key in keys {
                permits.push(limiter.acquire(&rule, key).await.expect("a key of its own"));
            }
            permits
        };
        for key in keys {
            assert!(limiter.acquire(&rule, key).await.is_err(), "{key:?}");
        }
        drop(permits);
    }
}

/// Serves `/slow` behind a layer of at most one request in flight per client. Each request's handler says
/// when it has begun on `begun`, and answers once `finish` turns true.
async fn serve_slow(
    limiter: &Limiter,
    begun: tokio::sync::mpsc::UnboundedSender<()>,
    finish: tokio::sync::watch::Receiver<bool>,
) -> SocketAddr {
    let rule = Rule::new().prefix("http:").policy("running").in_flight(1);
    let slow = move || {
        let (begun, mut finish) = (begun.clone(), finish.clone());
        async move {
            let _ = begun.send(());
            let _ = finish.wait_for(|finish| *finish).await;
            "done"
        }
    };
    let app = axum::Router::new()
        .route("/slow", axum::routing::get(slow))
        .layer(RateLimitLayer::new(limiter, [rule], Key::peer_ip()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layer_holds_a_permit_until_the_response_is_done() {
    let server = RedisServer::start();
    for limiter in [Limiter::in_memory(), server.limiter()] {
        let (begun, mut begins) = tokio::sync::mpsc::unbounded_channel();
        let (finish, finishing) = tokio::sync::watch::channel(false);
        let address = serve_slow(&limiter, begun, finishing).await;
        let first = tokio::spawn(request(address, "GET", "/slow"));
        // The first request's handler runs: it holds the permit.
        begins.recv().await.unwrap();
        let refused = request(address, "GET", "/slow").await;
        assert_eq!(refused.status, 429, "{refused:?}");
        let (policy, state) = fields::quota(&refused);
        let (policy, state) = (
            fields::member(&policy, "running"),
            fields::member(&state, "running"),
        );
        assert_eq!(policy.get("q"), 1);
        assert_eq!(
            policy.texts.get("qu").map(String::as_str),
            Some("concurrent-requests")
        );
        assert_eq!(state.get("r"), 0);
        assert_eq!(fields::retry_after(&refused), 1, "as the guide says");
        finish.send(true).unwrap();
        let done = first.await.unwrap();
        assert_eq!(done.status, 200);
        let (_, state) = fields::quota(&done);
        assert_eq!(fields::member(&state, "running").get("r"), 0);
        // Done: the permit is back (with Redis, once its release has gone).
        let start = Instant::now();
        loop {
            let again = request(address, "GET", "/slow").await;
            if again.status == 200 {
                break;
            }
            assert!(start.elapsed() < Duration::from_secs(1), "{again:?}");
        }
    }
}

/// A limiter on `server` that waits 100 ms for Redis, deciding as `on_error` says when it cannot.
fn impatient(server: &RedisServer, on_error: limiter_runtime::OnError) -> Limiter {
    server
        .builder()
        .deadline(Duration::from_millis(100))
        .on_error(on_error)
        .heartbeat_every(Duration::from_secs(3_600))
        .build()
        .unwrap()
}

/// Permits held in Redis on `key`, once they are `expected` (within 2 s).
async fn until_held(server: &RedisServer, key: &str, expected: u64) {
    let start = Instant::now();
    loop {
        let held: u64 = redis::cmd("ZCARD")
            .arg(key)
            .query(&mut server.connection())
            .unwrap();
        if held == expected {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{key}: {held} permits held, expected {expected}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_redis_is_away_open_admits_closed_refuses_local_holds_its_share_and_nothing_is_charged_later(
) {
    use limiter_runtime::OnError;
    for on_error in [OnError::Open, OnError::Closed, OnError::Local] {
        // A server each: the runtimes of the other policies would share `local`'s permits.
        let server = RedisServer::start();
        let limiter = impatient(&server, on_error);
        let prefix = format!("away:{on_error}:");
        let rule = Rule::new().prefix(prefix.clone()).in_flight(2);
        // Connected, the script loaded: the paused call is one EVALSHA, answered late.
        drop(limiter.acquire(&rule, "warm").await.unwrap());
        server.pause();
        let first = limiter.acquire(&rule, "k").await;
        let second = limiter.acquire(&rule, "k").await;
        let third = limiter.acquire(&rule, "k").await;
        server.resume();
        match on_error {
            OnError::Open => assert!(first.is_ok() && second.is_ok() && third.is_ok()),
            OnError::Closed => assert!(first.is_err() && second.is_err() && third.is_err()),
            // This node's share of 2, the only runtime on this Redis: 2.
            OnError::Local => assert!(first.is_ok() && second.is_ok() && third.is_err()),
            _ => unreachable!(),
        }
        for permit in [&first, &second, &third].into_iter().flatten() {
            assert!(permit.decision().degraded, "{on_error}");
        }
        // What Redis answered late holds no permit of its own: given back, whatever was decided meanwhile.
        until_held(&server, &format!("{prefix}k"), 0).await;
        drop((first, second, third));
        // Redis decides again, with every permit free.
        let start = Instant::now();
        let again = loop {
            match limiter.acquire(&rule, "k").await {
                Ok(permit) if !permit.decision().degraded => break permit,
                _ => assert!(
                    start.elapsed() < Duration::from_secs(5),
                    "{on_error}: Redis never decided again"
                ),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(again.decision().remaining, 1, "{on_error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_cluster_permits_are_taken_and_given_back_per_slot() {
    let cluster = tests::RedisCluster::start();
    let limiter = cluster.limiter();
    // Keys of many slots; a limit in flight stacked with a rate of another prefix (another slot, mostly).
    let at_once = Rule::new().prefix("c:running:").in_flight(1);
    let rate = Rule::new()
        .prefix("c:rate:")
        .max(1)
        .window(Duration::from_secs(60));
    for key in ["a", "b", "c", "d", "e", "f"] {
        let permit = limiter
            .all([(&at_once, key), (&rate, key)])
            .acquire()
            .await
            .unwrap();
        assert!(limiter.acquire(&at_once, key).await.is_err(), "{key}");
        permit.settle(limiter_runtime::AsCharged).await;
        // The rate spent: refused, and the permit given back across slots.
        assert!(limiter
            .all([(&at_once, key), (&rate, key)])
            .acquire()
            .await
            .is_err());
        let alone = limiter
            .acquire(&at_once, key)
            .await
            .expect("no permit held");
        alone.settle(limiter_runtime::AsCharged).await;
    }
    assert_eq!(limiter.stats().permits, 0);
}

/// A permit costs two commands at most, counted by `MONITOR` (a script's own commands apart): the script call
/// that takes it (with the call's rates) and the release; releases of one key at once share one command.
#[tokio::test]
async fn a_permit_costs_two_commands_at_most_and_releases_at_once_share_them() {
    let server = RedisServer::start();
    let limiter = server
        .builder()
        .deadline(Duration::from_secs(5))
        .heartbeat_every(Duration::from_secs(3_600))
        .connect()
        .await
        .unwrap();
    let rule = Rule::new().prefix("trips:").in_flight(1_000);
    let rate = Rule::new().prefix("trips:rate:").max(1_000);
    let monitor = tests::Monitor::start(server.port());
    for i in 0..50 {
        let permit = limiter.acquire(&rule, i).await.unwrap();
        permit.settle(limiter_runtime::AsCharged).await;
        let stacked = limiter
            .all([(&rule, i), (&rate, i)])
            .acquire()
            .await
            .unwrap();
        stacked.settle(limiter_runtime::AsCharged).await;
    }
    let sent = monitor.take();
    let count = |name: &str| sent.iter().filter(|c| *c == name).count();
    assert_eq!(
        (count("EVALSHA"), count("ZREM"), sent.len()),
        (100, 100, 200),
        "one script call and one release per permit, alone or stacked, nothing else: {sent:?}"
    );

    // 64 permits of one key given back at once: the first release goes alone, the others wait for it and go
    // together.
    let taken =
        futures::future::join_all((0..64).map(|_| limiter.acquire(&rule, "hot").into_future()))
            .await;
    let permits: Vec<_> = taken.into_iter().map(Result::unwrap).collect();
    monitor.take();
    futures::future::join_all(
        permits
            .into_iter()
            .map(|permit| permit.settle(limiter_runtime::AsCharged)),
    )
    .await;
    let sent = monitor.take();
    assert!(
        (1..=2).contains(&sent.len()) && sent.iter().all(|c| c == "ZREM"),
        "64 permits given back at once: {sent:?}"
    );
    drop(monitor);
    let held: u64 = redis::cmd("ZCARD")
        .arg("trips:hot")
        .query(&mut server.connection())
        .unwrap();
    assert_eq!(held, 0);
}

/// A permit is held by `acquire`, the attribute and the layer. The plain API's other calls keep nothing of a
/// call but its decision: on an in-flight rule they ask whether a permit is free and hold none (an estimate
/// holds its permit until it is settled or dropped).
async fn checking_holds_no_permit(limiter: &Limiter) {
    let rule = Rule::new().prefix("checked:").in_flight(2);
    let limit = limiter.resolve(&rule);
    for _ in 0..3 {
        // Each gives its permit back before it returns: both are free at once.
        assert!(limiter.check(&rule, "k").await.allowed);
        assert_both_free(limiter, &rule).await;
        assert!(limiter.enforce(&rule, "k").await.is_ok());
        assert_both_free(limiter, &rule).await;
        assert!(limiter.all([(&rule, "k")]).check().await[0].allowed);
        assert_both_free(limiter, &rule).await;
        assert!(limiter.all([(&rule, "k")]).enforce().await.is_ok());
        assert_both_free(limiter, &rule).await;
        assert!(limit.check("k").await.allowed);
        assert_both_free(limiter, &rule).await;
        assert!(limit.enforce("k").await.is_ok());
        assert_both_free(limiter, &rule).await;
        let estimate = limiter.estimate(&rule, "k").cost(3).await.unwrap();
        estimate.settle(3).await;
        assert_both_free(limiter, &rule).await;
        // Dropped, an estimate gives back on a task of the limiter's (with Redis): soon, not at once.
        drop(limiter.estimate(&rule, "k").cost(1).await.unwrap());
        until_free(limiter, &rule).await;
    }
    // While two are held, a check says none is free.
    let held = [
        limiter.acquire(&rule, "k").await.unwrap(),
        limiter.acquire(&rule, "k").await.unwrap(),
    ];
    assert!(!limiter.check(&rule, "k").await.allowed);
    drop(held);
    until_free(limiter, &rule).await;
}

/// Both permits of `rule` are free now.
async fn assert_both_free(limiter: &Limiter, rule: &Rule) {
    assert!(both_free(limiter, rule).await, "a permit was kept");
}

/// Whether both permits of `rule` are free: takes them, and gives them back.
async fn both_free(limiter: &Limiter, rule: &Rule) -> bool {
    let first = limiter.acquire(rule, "k").await;
    let second = limiter.acquire(rule, "k").await;
    let free = first.is_ok() && second.is_ok();
    for permit in [first, second].into_iter().flatten() {
        permit.settle(limiter_runtime::AsCharged).await;
    }
    free
}

/// Waits (at most a second) until both permits of `rule` are free.
async fn until_free(limiter: &Limiter, rule: &Rule) {
    let started = Instant::now();
    while !both_free(limiter, rule).await {
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "a permit was kept"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn checking_an_in_flight_rule_holds_no_permit_in_memory() {
    checking_holds_no_permit(&Limiter::in_memory()).await;
}

#[tokio::test]
async fn checking_an_in_flight_rule_holds_no_permit_on_redis() {
    let server = RedisServer::start();
    checking_holds_no_permit(&server.limiter()).await;
}
