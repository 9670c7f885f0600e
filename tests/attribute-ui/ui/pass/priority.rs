//! `priority = <expr>` (each call's, borrowed from the arguments) or `priority = "critical"` (every call's), and
//! `reserve = "..."`: one share or several, stacked, beside `in_flight`, in an `#[async_trait]` impl, and through a
//! runtime re-exported under another path.
use limiter_runtime::{rate_limit, Limiter, Priority, RateLimited, Verdict};

#[derive(Clone, Copy)]
enum Tier {
    Free,
    Paid,
}

impl Tier {
    fn priority(&self) -> Priority {
        match self {
            Tier::Free => Priority::Normal,
            Tier::Paid => Priority::Critical,
        }
    }
}

struct Tenant {
    id: u64,
    tier: Tier,
}

// A method call over an argument, with two shares: normal calls fill 7 of 10, high ones 8, critical ones all 10.
#[rate_limit(prefix = "search:", key = tenant.id, max = 10, window = 60, priority = tenant.tier.priority(),
             reserve = "critical 20%, high 30%")]
async fn search(tenant: &Tenant, query: String) -> Result<String, RateLimited> {
    Ok(query)
}

// A `Priority` argument, copied: the body still has it.
#[rate_limit(prefix = "owned:", key = user, max = 10, priority = level, reserve = "high 50%")]
async fn owned(user: &str, level: Priority) -> Result<Priority, RateLimited> {
    Ok(level)
}

// A reference to one, dereferenced; the shares in any order, a higher one larger than a lower one.
#[rate_limit(prefix = "borrowed:", max = 10, priority = *level, reserve = "high 10%, critical 30%")]
async fn borrowed(level: &Priority) -> Result<(), RateLimited> {
    Ok(())
}

// Every call's priority, named; `priority` alone (the limiter's defaults may keep shares).
#[rate_limit(prefix = "health:", max = 10, priority = "critical")]
async fn health() -> Result<(), RateLimited> {
    Ok(())
}

// Stacked, each attribute with its own priority and shares; beside `in_flight`, with `skip_if` and `count`.
#[rate_limit(prefix = "burst:", key = user, max = 10, window = 1, priority = level, reserve = "critical 10%")]
#[rate_limit(prefix = "quota:", key = user, max = 100, window = "1h", in_flight = 4, priority = "Normal",
             reserve = "normal 50%", skip_if = user.is_empty(), count = failures)]
async fn stacked(user: &str, level: Priority) -> Result<(), RateLimited> {
    Ok(())
}

// Arguments named like the expansion's locals are still the user's, in the key and in the priority.
#[rate_limit(prefix = "hygiene:", key = __limiter_priority_0, max = 2, priority = __limiter_priority_1,
             reserve = "critical 50%")]
async fn named_like_locals(
    __limiter_priority_0: u32,
    __limiter_priority_1: Priority,
) -> Result<Priority, RateLimited> {
    Ok(__limiter_priority_1)
}

#[async_trait::async_trait]
trait Api {
    async fn call(&self, n: u32) -> Result<u32, RateLimited>;
}

// In an `#[async_trait]` impl: `self` is the tenant, moved into the future as async-trait writes it.
#[async_trait::async_trait]
impl Api for Tenant {
    #[rate_limit(prefix = "api:", key = self.id, max = 10, priority = self.tier.priority(), reserve = "critical 50%")]
    async fn call(&self, n: u32) -> Result<u32, RateLimited> {
        Ok(n)
    }
}

mod rt {
    pub use limiter_runtime::*;
}

// A path to a priority is an expression like any other, checked against the re-exported runtime's `Priority`.
#[rt::rate_limit(crate = "crate::rt", prefix = "rt:", max = 2, priority = rt::Priority::High,
                 reserve = "critical 50%")]
async fn through_a_reexport() -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let limiter = Limiter::in_memory();
    limiter
        .scope(async {
            let free = Tenant {
                id: 1,
                tier: Tier::Free,
            };
            for _ in 0..7 {
                assert!(search(&free, "q".into()).await.is_ok());
            }
            let refused = search(&free, "q".into()).await.unwrap_err();
            assert_eq!(refused.decision().verdict, Verdict::Reserved);
            let paid = Tenant {
                id: 1,
                tier: Tier::Paid,
            };
            for _ in 0..3 {
                assert_eq!(search(&paid, "q".into()).await.unwrap(), "q");
            }
            let refused = search(&paid, "q".into()).await.unwrap_err();
            assert_eq!(refused.decision().verdict, Verdict::Limited);

            assert_eq!(owned("a", Priority::High).await.unwrap(), Priority::High);
            assert!(borrowed(&Priority::Low).await.is_ok());
            assert!(health().await.is_ok());
            assert!(stacked("a", Priority::Critical).await.is_ok());
            assert_eq!(free.call(3).await.unwrap(), 3);
            let high = Priority::High;
            assert_eq!(named_like_locals(7, high).await.unwrap(), high);
            let refused = named_like_locals(7, high).await.unwrap_err();
            assert_eq!(refused.key(), "hygiene:7");
            assert_eq!(refused.decision().verdict, Verdict::Reserved);
            assert!(through_a_reexport().await.is_ok());
            assert!(
                through_a_reexport().await.is_err(),
                "a high call leaves half for critical ones"
            );
        })
        .await;
}
