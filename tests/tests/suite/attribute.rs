//! What `#[rate_limit]` does at run time, for every function shape it accepts (in memory: the attribute's
//! behaviour does not depend on the store).

use std::fmt::Display;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use limiter_runtime::{rate_limit, Limiter, Priority, RateLimited, Verdict};

fn limiter() -> Limiter {
    Limiter::in_memory()
}

#[rate_limit(max = 2)]
async fn counted(runs: &AtomicUsize) -> Result<(), RateLimited> {
    runs.fetch_add(1, Ordering::SeqCst);
    Ok(())
}

#[tokio::test]
async fn the_body_does_not_run_when_limited() {
    let runs = AtomicUsize::new(0);
    limiter()
        .scope(async {
            assert!(counted(&runs).await.is_ok());
            assert!(counted(&runs).await.is_ok());
            assert!(counted(&runs).await.is_err());
            assert!(counted(&runs).await.is_err());
        })
        .await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

fn traced<'a>(evaluations: &AtomicUsize, key: &'a str) -> &'a str {
    evaluations.fetch_add(1, Ordering::SeqCst);
    key
}

#[rate_limit(key = traced(evaluations, key), max = 10)]
async fn keyed_by_call(evaluations: &AtomicUsize, key: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::test]
async fn the_key_is_evaluated_once_per_call() {
    let evaluations = AtomicUsize::new(0);
    limiter()
        .scope(async {
            keyed_by_call(&evaluations, "a").await.unwrap();
            keyed_by_call(&evaluations, "a").await.unwrap();
        })
        .await;
    assert_eq!(evaluations.load(Ordering::SeqCst), 2);
}

/// A key that counts how often it is written out.
struct Formatted<'a>(&'a AtomicUsize);

impl Display for Formatted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fetch_add(1, Ordering::SeqCst);
        f.write_str("formatted")
    }
}

#[rate_limit(key = Formatted(formats), max = 1)]
async fn keyed_by_display(formats: &AtomicUsize) -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::test]
async fn switched_off_the_key_is_not_even_formatted() {
    let formats = AtomicUsize::new(0);
    let limiter = limiter();
    limiter
        .scope(async {
            limiter.set_enabled_here(false);
            for _ in 0..3 {
                keyed_by_display(&formats).await.unwrap();
            }
            assert_eq!(formats.load(Ordering::SeqCst), 0, "switched off");
            limiter.set_enabled_here(true);
            assert!(keyed_by_display(&formats).await.is_ok());
            assert!(keyed_by_display(&formats).await.is_err());
        })
        .await;
    assert_eq!(formats.load(Ordering::SeqCst), 2, "once per call when on");
}

struct User {
    id: u64,
    name: String,
}

/// The key borrows `user`; the body still owns and consumes it.
#[rate_limit(key = (tenant, user.id), max = 1)]
async fn upload(tenant: String, user: User) -> Result<String, RateLimited> {
    let User { name, .. } = user;
    Ok(format!("{tenant}/{name}"))
}

#[tokio::test]
async fn a_key_list_joins_its_parts_and_moves_nothing() {
    limiter()
        .scope(async {
            let user = || User {
                id: 42,
                name: "ada".into(),
            };
            assert_eq!(upload("acme".into(), user()).await.unwrap(), "acme/ada");
            let error = upload("acme".into(), user()).await.unwrap_err();
            assert_eq!(error.key(), "rate_limit:acme%3A42");
            assert!(upload("other".into(), user()).await.is_ok());
        })
        .await;
}

#[rate_limit(max = 1)]
async fn unkeyed(_caller: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[tokio::test]
async fn without_a_key_every_call_shares_the_function_bucket() {
    limiter()
        .scope(async {
            assert!(unkeyed("a").await.is_ok());
            let error = unkeyed("b").await.unwrap_err();
            assert_eq!(error.key(), "rate_limit:suite%3A%3Aattribute%3A%3Aunkeyed");
        })
        .await;
}

struct Account {
    id: u32,
    calls: usize,
}

impl Account {
    #[rate_limit(key = self.id, max = 1, prefix = "acct:")]
    async fn balance(&self) -> Result<u32, RateLimited> {
        Ok(self.id * 10)
    }

    #[rate_limit(key = self.id, max = 2, prefix = "touch:")]
    async fn touch(&mut self) -> Result<usize, RateLimited> {
        self.calls += 1;
        Ok(self.calls)
    }
}

#[tokio::test]
async fn methods_key_on_self() {
    limiter()
        .scope(async {
            let mut account = Account { id: 7, calls: 0 };
            assert_eq!(account.balance().await.unwrap(), 70);
            assert_eq!(account.balance().await.unwrap_err().key(), "acct:7");
            assert_eq!(account.touch().await.unwrap(), 1);
            assert_eq!(account.touch().await.unwrap(), 2);
            assert!(account.touch().await.is_err());
            assert_eq!(account.calls, 2);
            assert!(Account { id: 8, calls: 0 }.balance().await.is_ok());
        })
        .await;
}

trait Directory {
    async fn lookup(&self, name: &str) -> Result<String, RateLimited>;
}

impl Directory for Account {
    #[rate_limit(key = name, max = 1, prefix = "dir:")]
    async fn lookup(&self, name: &str) -> Result<String, RateLimited> {
        Ok(format!("{name}@{}", self.id))
    }
}

#[async_trait::async_trait]
trait Service {
    async fn serve(&self, request: (String, u32)) -> Result<u32, RateLimited>;
    async fn by_id(&self, id: Path<u32>) -> Result<u32, RateLimited>;
}

struct Path<T>(T);

#[async_trait::async_trait]
impl Service for Account {
    #[rate_limit(key = (self.id, route), max = 1, prefix = "svc:")]
    async fn serve(&self, (route, n): (String, u32)) -> Result<u32, RateLimited> {
        Ok(n + self.id)
    }

    #[rate_limit(key = id, max = 1, prefix = "by_id:")]
    async fn by_id(&self, Path(id): Path<u32>) -> Result<u32, RateLimited> {
        Ok(id)
    }
}

#[tokio::test]
async fn trait_methods_and_async_trait_methods_are_limited() {
    limiter()
        .scope(async {
            let account = Account { id: 3, calls: 0 };
            assert_eq!(account.lookup("ada").await.unwrap(), "ada@3");
            assert_eq!(account.lookup("ada").await.unwrap_err().key(), "dir:ada");

            assert_eq!(account.serve(("/a".into(), 1)).await.unwrap(), 4);
            assert_eq!(
                account.serve(("/a".into(), 1)).await.unwrap_err().key(),
                "svc:3%3A/a"
            );
            assert!(account.serve(("/b".into(), 1)).await.is_ok());

            let service: &dyn Service = &account;
            assert_eq!(service.by_id(Path(9)).await.unwrap(), 9);
            assert_eq!(service.by_id(Path(9)).await.unwrap_err().key(), "by_id:9");
        })
        .await;
}

#[rate_limit(key = item, max = 1, prefix = "generic:")]
async fn generic<T: Display + Send>(item: T) -> Result<String, RateLimited> {
    Ok(item.to_string())
}

#[tokio::test]
async fn generic_functions_are_limited() {
    limiter()
        .scope(async {
            assert_eq!(generic(5).await.unwrap(), "5");
            assert!(
                generic("5").await.is_err(),
                "5 and \"5\" display alike: one key"
            );
        })
        .await;
}

#[tokio::test]
async fn annotated_futures_are_send() {
    let limiter = limiter();
    let runs = Arc::new(AtomicUsize::new(0));
    let task = {
        let (limiter, runs) = (limiter.clone(), runs.clone());
        tokio::spawn(async move { limiter.scope(counted(&runs)).await })
    };
    task.await.unwrap().unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn limits_are_per_limiter() {
    let (a, b) = (limiter(), limiter());
    a.scope(async { unkeyed("x").await.unwrap() }).await;
    b.scope(async { unkeyed("x").await.unwrap() }).await;
    assert!(a.scope(unkeyed("x")).await.is_err());
}

#[rate_limit(prefix = "emp:", policy = "employees", max = 1)]
async fn named(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

#[rate_limit(prefix = "emp:unnamed:", max = 1)]
async fn unnamed(id: u32) -> Result<u32, RateLimited> {
    Ok(id)
}

/// A limit's policy is called by its `name`; without one, by `limit-` and the first 8 hex digits of the SHA-1 of
/// its prefix (the value below is the digest as Python's hashlib computes it), so clients never see the prefix.
/// The plain API's rule likewise.
#[tokio::test]
async fn a_rejection_names_its_policy() {
    let limiter = limiter();
    limiter
        .scope(async {
            named(1).await.unwrap();
            assert_eq!(named(1).await.unwrap_err().policy(), "employees");
            unnamed(1).await.unwrap();
            assert_eq!(unnamed(1).await.unwrap_err().policy(), "limit-c4628894");
        })
        .await;
    let rule = limiter_runtime::Rule::new()
        .prefix("plain:")
        .policy("logins")
        .max(1);
    limiter.enforce(&rule, "k").await.unwrap();
    assert_eq!(
        limiter.enforce(&rule, "k").await.unwrap_err().policy(),
        "logins"
    );
}

#[rate_limit(prefix = "reserved:", key = user, max = 10, window = 60, reserve = "critical 20%", priority = *level)]
async fn prioritized(user: &str, level: &Priority) -> Result<(), RateLimited> {
    Ok(())
}

/// A share kept for critical calls: normal calls fill 8 of 10, and the 9th is refused for the share, not for the
/// limit; critical calls fill the last 2, and then the limit refuses them too.
#[tokio::test]
async fn a_reserve_keeps_a_share_for_higher_priorities() {
    limiter()
        .scope(async {
            for _ in 0..8 {
                prioritized("ada", &Priority::Normal).await.unwrap();
            }
            let refused = prioritized("ada", &Priority::Normal).await.unwrap_err();
            assert_eq!(refused.decision().verdict, Verdict::Reserved);
            assert!(
                prioritized("bob", &Priority::Normal).await.is_ok(),
                "each key has its own share"
            );
            for _ in 0..2 {
                prioritized("ada", &Priority::Critical).await.unwrap();
            }
            let refused = prioritized("ada", &Priority::Critical).await.unwrap_err();
            assert_eq!(refused.decision().verdict, Verdict::Limited);
        })
        .await;
}

fn traced_priority(evaluations: &AtomicUsize, level: Priority) -> Priority {
    evaluations.fetch_add(1, Ordering::SeqCst);
    level
}

#[rate_limit(prefix = "once:", max = 10, in_flight = 2, priority = traced_priority(evaluations, level),
             reserve = "critical 50%")]
async fn prioritized_in_flight(
    evaluations: &AtomicUsize,
    level: Priority,
) -> Result<Priority, RateLimited> {
    Ok(level)
}

/// The priority is computed once per call, even for two limits (a rate and the calls in flight beside it), and
/// the body still has the argument it was computed from.
#[tokio::test]
async fn the_priority_is_evaluated_once_per_call() {
    let evaluations = AtomicUsize::new(0);
    limiter()
        .scope(async {
            for level in [Priority::Low, Priority::Critical, Priority::High] {
                assert_eq!(
                    prioritized_in_flight(&evaluations, level).await.unwrap(),
                    level
                );
            }
        })
        .await;
    assert_eq!(evaluations.load(Ordering::SeqCst), 3);
}
