//! `plan = <expr>`: each call's plan, borrowed from the arguments like the key: a `String`, a `&str`, an
//! `Option` of one (none: the policy's own values), a method's result; beside `in_flight` (on the rate's plan),
//! and in an `#[async_trait]` impl, where `self` is moved before the body.
use limiter_runtime::{rate_limit, RateLimited};

struct Tenant {
    id: u64,
    plan: String,
    trial: Option<String>,
}

impl Tenant {
    fn plan(&self) -> &str {
        &self.plan
    }
}

#[rate_limit(policy = "search", prefix = "search:", key = tenant.id, max = 10, plan = tenant.plan)]
async fn search(tenant: &Tenant, query: String) -> Result<String, RateLimited> {
    Ok(query)
}

#[rate_limit(prefix = "trial:", key = tenant.id, max = 10, plan = tenant.trial, in_flight = 2)]
async fn trial(tenant: Tenant) -> Result<u64, RateLimited> {
    Ok(tenant.id)
}

#[rate_limit(prefix = "named:", key = tenant.id, plan = tenant.plan(), max = 5)]
async fn named(tenant: &Tenant) -> Result<(), RateLimited> {
    Ok(())
}

#[rate_limit(prefix = "literal:", plan = "pro", max = 5)]
async fn literal() -> Result<(), RateLimited> {
    Ok(())
}

#[async_trait::async_trait]
trait Plans {
    async fn plan_of(&self) -> Result<(), RateLimited>;
}

#[async_trait::async_trait]
impl Plans for Tenant {
    #[rate_limit(prefix = "trait:", key = self.id, plan = self.plan, max = 5)]
    async fn plan_of(&self) -> Result<(), RateLimited> {
        Ok(())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let tenant = Tenant { id: 7, plan: "pro".into(), trial: None };
    assert_eq!(search(&tenant, "q".into()).await.unwrap(), "q");
    assert!(named(&tenant).await.is_ok());
    assert!(literal().await.is_ok());
    assert!(tenant.plan_of().await.is_ok());
    assert_eq!(trial(tenant).await.unwrap(), 7);
}
