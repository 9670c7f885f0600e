//! No heap allocation on the in-memory hot path: the store key is built on the stack (up to 56 bytes), and
//! the Redis round trip's future is the only thing boxed. Counted by a global allocator that counts this
//! thread's allocations. (A test binary of its own: it replaces the global allocator.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::IntoFuture;

use futures::FutureExt;
use limiter_runtime::{rate_limit, Algorithm, Limiter, RateLimited, Rule};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Allocations made by `f` on this thread.
fn allocations(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

const CALLS: usize = 1_000;

#[test]
fn the_plain_api_allocates_nothing() {
    let limiter = Limiter::in_memory();
    for algorithm in tests::ALGORITHMS {
        // A limit of 100 in an hour: the warm-up stores the key and fills its state to its working size (a
        // sliding log holds up to `max` admissions); then admissions and rejections alike allocate nothing.
        let rule = Rule::new()
            .algorithm(algorithm)
            .max(100)
            .window(std::time::Duration::from_secs(3_600));
        for _ in 0..CALLS {
            limiter
                .check(&rule, "hot")
                .into_future()
                .now_or_never()
                .unwrap();
        }
        let made = allocations(|| {
            for _ in 0..CALLS {
                limiter
                    .check(&rule, "hot")
                    .into_future()
                    .now_or_never()
                    .unwrap();
            }
        });
        assert_eq!(made, 0, "{algorithm:?}: no allocation per decision");
        // A `Limit` of the same rule: the same count, and no allocation either.
        let limit = limiter.resolve(&rule);
        let made = allocations(|| {
            for _ in 0..CALLS {
                limit.check("hot").into_future().now_or_never().unwrap();
            }
        });
        assert_eq!(
            made, 0,
            "{algorithm:?}: no allocation per decision of a Limit"
        );
    }
}

/// Admissions, for every algorithm, in their steady state: a call every 11 ms against 100 a second, on a fake
/// clock, so every call is admitted and old admissions expire as new ones come (a sliding log's entries
/// recycled, not grown).
#[test]
fn admissions_allocate_nothing_for_every_algorithm() {
    let clock = limiter_runtime::FakeClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build().unwrap();
    for algorithm in tests::ALGORITHMS {
        let rule = Rule::new()
            .prefix(format!("admitted:{algorithm}:"))
            .algorithm(algorithm)
            .max(100)
            .window(std::time::Duration::from_secs(1));
        let call = || {
            clock.advance(std::time::Duration::from_millis(11));
            limiter
                .check(&rule, "hot")
                .into_future()
                .now_or_never()
                .unwrap()
                .allowed
        };
        // Two windows of warm-up: the state at its working size.
        for _ in 0..200 {
            assert!(call(), "{algorithm:?}: admitted");
        }
        let mut admitted = 0;
        let made = allocations(|| {
            for _ in 0..CALLS {
                admitted += usize::from(call());
            }
        });
        assert_eq!(admitted, CALLS, "{algorithm:?}: every call admitted");
        assert_eq!(made, 0, "{algorithm:?}: no allocation per admission");
    }
}

#[test]
fn a_key_too_long_for_the_stack_costs_one_allocation() {
    let limiter = Limiter::in_memory();
    let rule = Rule::new().algorithm(Algorithm::TokenBucket).max(1_000_000);
    // The default prefix and 120 bytes: past the 56 bytes kept on the stack, short enough to be verbatim.
    let key = "k".repeat(120);
    limiter
        .check(&rule, &key)
        .into_future()
        .now_or_never()
        .unwrap();
    let made = allocations(|| {
        for _ in 0..CALLS {
            limiter
                .check(&rule, &key)
                .into_future()
                .now_or_never()
                .unwrap();
        }
    });
    assert_eq!(made, CALLS, "one allocation per decision: the key's");
}

#[rate_limit(key = id, max = 1_000_000_000, algorithm = token_bucket)]
async fn annotated(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[test]
fn the_attribute_allocates_nothing() {
    let limiter = Limiter::in_memory();
    let run = |limiter: &Limiter| {
        limiter
            .scope(async {
                for _ in 0..CALLS {
                    annotated(7).await.unwrap();
                }
            })
            .into_future()
            .now_or_never()
            .unwrap()
    };
    run(&limiter);
    assert_eq!(allocations(|| run(&limiter)), 0, "no allocation per call");
    limiter.set_enabled_here(false);
    assert_eq!(
        allocations(|| run(&limiter)),
        0,
        "switched off, nothing at all"
    );
}

#[rate_limit(key = id, max = 1, window = 3600)]
async fn once_an_hour(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[test]
fn a_rejection_costs_one_allocation() {
    let limiter = Limiter::in_memory();
    let run = |limiter: &Limiter| {
        limiter
            .scope(async {
                for _ in 0..CALLS {
                    assert!(once_an_hour(7).await.is_err());
                }
            })
            .into_future()
            .now_or_never()
            .unwrap()
    };
    limiter
        .scope(once_an_hour(7))
        .into_future()
        .now_or_never()
        .unwrap()
        .unwrap();
    run(&limiter);
    // The error the caller gets, key included, in one piece.
    assert_eq!(
        allocations(|| run(&limiter)),
        CALLS,
        "one allocation per rejection"
    );
}
