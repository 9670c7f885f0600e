//! What the operators' watch holds of a policy, in bytes, under a flood of distinct keys: its summaries are
//! bounded (1,000 keys each), so a node's memory for a policy stays under 1 MB however many keys it sees.
//! Counted by a global allocator that tracks the bytes live (a test binary of its own: it replaces the
//! global allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::Duration;

use limiter_runtime::Rule;
use tests::RedisServer;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[tokio::test(flavor = "current_thread")]
async fn a_policys_tally_stays_under_a_megabyte_whatever_the_keys() {
    let server = RedisServer::start();
    // No deny cache (it keeps refused keys too, bounded on its own): what grows is the watch's.
    let limiter = server.builder().deny_cache(false).build().unwrap();
    let rule = Rule::new()
        .prefix("flood:")
        .max(1)
        .window(Duration::from_secs(600));
    // Warm: the connection, the scripts, the policy's tally.
    for _ in 0..2 {
        limiter.check(&rule, "warm").await;
    }
    let before = LIVE.load(Ordering::Relaxed);
    // 8,000 distinct keys (eight times what a summary holds), each admitted once and refused once; the keys
    // are long, as user ids go.
    for i in 0..8_000 {
        let key = format!("user-{i:08}-0123456789abcdef0123456789abcdef");
        limiter.check(&rule, &key).await;
        limiter.check(&rule, &key).await;
    }
    let grown = LIVE.load(Ordering::Relaxed) - before;
    println!("the watch grew by {grown} bytes for 8,000 keys");
    assert!(grown < 1 << 20, "{grown} bytes");
    // And it still knows who was refused.
    assert_eq!(limiter.top_limited("flood:", 5).await.unwrap().len(), 5);
}
