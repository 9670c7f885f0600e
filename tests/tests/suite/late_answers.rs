//! A call Redis answers after its deadline is decided by the failure policy meanwhile; Redis's late answer is
//! then reconciled with that decision: what Redis admitted of a call its caller was refused (`closed`, or a
//! `local` share spent) goes back, through the one give-back path; what a caller went ahead with (`open`, a
//! `local` admission), Redis's count keeps. For a call alone, for calls coalesced on a hot key, and for a
//! lease taken late, against a real Redis paused past the deadline.

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use futures::future::join_all;
use limiter_runtime::{Algorithm, Limiter, OnError, Reason, Rule};
use tests::RedisServer;

const DEADLINE: Duration = Duration::from_millis(50);

fn limiter(server: &RedisServer, on_error: OnError) -> Limiter {
    server
        .builder()
        .deadline(DEADLINE)
        .on_error(on_error)
        .heartbeat_every(Duration::from_secs(3_600))
        .build()
        .unwrap()
}

/// Waits until `count()` is `expected`, for at most 2 s.
async fn until(what: &str, expected: usize, count: impl Fn() -> usize) {
    let started = Instant::now();
    loop {
        let now = count();
        if now == expected {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{what}: {now}, expected {expected}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_answer_is_given_back_when_its_caller_was_refused_and_kept_when_it_went_ahead() {
    let server = RedisServer::start();
    for (on_error, kept) in [(OnError::Closed, 0), (OnError::Open, 1)] {
        let limiter = limiter(&server, on_error);
        let prefix = format!("late:{on_error}:");
        let rule = Rule::new().prefix(prefix.clone()).max(5);
        // Connected, the script loaded: the paused call is one EVALSHA.
        assert!(!limiter.check(&rule, "warm").await.degraded);
        let scripts = || (server.calls("evalsha") + server.calls("eval")) as usize;
        let before = scripts();
        server.pause();
        let decision = limiter.check(&rule, "k").await;
        server.resume();
        assert!(decision.degraded, "{on_error}");
        assert_eq!(decision.allowed, on_error == OnError::Open, "{on_error}");
        // Redis runs the paused call once it is resumed (commandstats counts it once it has run): from then
        // on the call is counted, until a refused caller's charge goes back.
        let key = format!("{prefix}k");
        let counted = || tests::logged_calls(&mut server.connection(), &key);
        until(&format!("{on_error}: the paused call run"), 1, || {
            usize::from(scripts() > before)
        })
        .await;
        until(&format!("{on_error}: calls counted"), kept, counted).await;
        if on_error == OnError::Open {
            // What a caller went ahead with stays: nothing is given back later.
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(counted(), 1, "{on_error}: the count stays");
            assert_eq!(scripts(), before + 1, "{on_error}: no give-back was sent");
        } else {
            assert!(
                scripts() >= before + 2,
                "{on_error}: the give-back was sent"
            );
        }
    }
}

/// Calls coalesced on one hot key, refused together (`closed`) while Redis was paused: every one Redis then
/// admitted goes back, and the key holds none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_batch_is_given_back_call_by_call() {
    let server = RedisServer::start();
    let limiter = limiter(&server, OnError::Closed);
    let rule = Rule::new().prefix("late:hot:").max(1_000);
    assert!(!limiter.check(&rule, "warm").await.degraded);
    server.pause();
    let calls = (0..32).map(|_| limiter.enforce(&rule, "k").into_future());
    let refused = join_all(calls).await;
    server.resume();
    for result in &refused {
        let rejection = result.as_ref().expect_err("refused while Redis is paused");
        assert_eq!(rejection.reason(), Reason::Unavailable);
    }
    until("calls counted", 0, || {
        tests::logged_calls(&mut server.connection(), "late:hot:k")
    })
    .await;
    // And Redis decides again (once the breaker's probe finds it back), with the whole limit.
    tests::until_redis_decides(&limiter, &rule).await;
    let decision = limiter.check(&rule, "k").await;
    assert!(!decision.degraded);
    assert_eq!(decision.remaining, 999);
}

/// A lease taken past its deadline goes back whole once Redis limits: the bucket is full again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_taken_late_goes_back_whole() {
    let server = RedisServer::start();
    let limiter = limiter(&server, OnError::Closed);
    let rule = Rule::new()
        .prefix("late:lease:")
        .algorithm(Algorithm::TokenBucket)
        .max(100)
        .window(Duration::from_secs(3_600))
        .lease(50)
        .lease_ttl(Duration::from_secs(60));
    let warm = Rule::new().prefix("late:warm:");
    assert!(!limiter.check(&warm, "warm").await.degraded);
    server.pause();
    assert!(limiter.check(&rule, "k").await.degraded);
    server.resume();
    // Read by another node, without a lease of its own.
    let (probe, unleased) = (server.limiter(), rule.clone().lease(0));
    let started = Instant::now();
    loop {
        let state = probe.check(&unleased, "k").cost(0).await;
        if state.remaining == 100 {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the lease's units stayed taken: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An answer slower than redis-rs's own response timeout (half a second) is still reconciled: the decision's
/// deadline is the only bound on the call, and its late answer is awaited for 30 s, as documented. Redis
/// paused for 1.5 s: the call its caller was refused is given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_seconds_late_is_reconciled_too() {
    let server = RedisServer::start();
    let limiter = limiter(&server, OnError::Closed);
    let rule = Rule::new().prefix("late:slow:").max(5);
    assert!(!limiter.check(&rule, "warm").await.degraded);
    let before = server.calls("evalsha");
    server.pause();
    let decision = limiter.check(&rule, "k").await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    server.resume();
    assert!(decision.degraded && !decision.allowed);
    // Redis admits the call once it runs again (it was in its socket all along)...
    until("the paused call run", 1, || {
        server.calls("evalsha").saturating_sub(before).min(1) as usize
    })
    .await;
    // ...and the limiter gives it back.
    until("calls counted", 0, || {
        tests::logged_calls(&mut server.connection(), "late:slow:k")
    })
    .await;
}
