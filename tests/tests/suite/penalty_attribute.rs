//! `penalty = "2s..8s"` on the attribute: the call its limit refuses blocks its key, each call of it refused
//! (the body not run) until the block ends; each repeat offence doubles the block up to the cap, and a key
//! clean for the cap after its block starts again at the first length. In memory, on a fake clock.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use limiter_runtime::{rate_limit, FakeClock, Limiter, RateLimited, Verdict};

#[derive(Debug)]
enum Error {
    Limited(RateLimited),
}

impl From<RateLimited> for Error {
    fn from(limited: RateLimited) -> Self {
        Error::Limited(limited)
    }
}

#[rate_limit(prefix = "pa:", key = user, max = 2, window = "1s", penalty = "2s..8s")]
async fn act(user: &str, runs: &AtomicUsize) -> Result<(), Error> {
    runs.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

const SECOND: Duration = Duration::from_secs(1);

/// The call's refusal: its `retry_after` and verdict.
async fn refused(user: &str, runs: &AtomicUsize) -> (Duration, Verdict) {
    match act(user, runs).await {
        Err(Error::Limited(limited)) => (limited.retry_after(), limited.decision().verdict),
        Ok(()) => panic!("{user} was admitted"),
    }
}

/// Uses up the key's two calls, then offends: the block it is told.
async fn offend(user: &str, runs: &AtomicUsize) -> (Duration, Verdict) {
    act(user, runs).await.unwrap();
    act(user, runs).await.unwrap();
    refused(user, runs).await
}

#[tokio::test]
async fn a_penalty_blocks_the_key_longer_at_each_offence_up_to_the_cap() {
    let clock = FakeClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build().unwrap();
    let runs = AtomicUsize::new(0);
    limiter
        .scope(async {
            // Over the limit: the first offence, a block of the first length.
            assert_eq!(offend("alice", &runs).await, (2 * SECOND, Verdict::Blocked));
            // Refused while the block lasts, which they do not extend; another key is not blocked.
            clock.advance(SECOND);
            assert_eq!(refused("alice", &runs).await, (SECOND, Verdict::Blocked));
            act("bob", &runs).await.unwrap();
            // Waiting as told is admitted; using the limit up again is a repeat offence, twice as long, then
            // the cap.
            clock.advance(SECOND);
            assert_eq!(offend("alice", &runs).await, (4 * SECOND, Verdict::Blocked));
            clock.advance(4 * SECOND);
            assert_eq!(offend("alice", &runs).await, (8 * SECOND, Verdict::Blocked));
            clock.advance(8 * SECOND);
            assert_eq!(offend("alice", &runs).await, (8 * SECOND, Verdict::Blocked));
            // Clean for the cap after the block: forgiven, the next offence is blocked for the first length.
            clock.advance(16 * SECOND);
            assert_eq!(offend("alice", &runs).await, (2 * SECOND, Verdict::Blocked));
            // Back within the cap of the block's end: 4 s.
            clock.advance(2 * SECOND);
            assert_eq!(offend("alice", &runs).await, (4 * SECOND, Verdict::Blocked));
        })
        .await;
    // The body ran only for the calls admitted: 6 offences after 2 calls each, and bob's.
    assert_eq!(runs.load(Ordering::SeqCst), 13);
}
