use limiter_runtime::{rate_limit, RateLimited, Zone};

const DAILY: u64 = 10_000;

// A day, reset at midnight in Berlin (checked when compiled), with a constant and a cost.
#[rate_limit(prefix = "daily:", key = tenant, max = DAILY, period = day, tz = "Europe/Berlin", cost = rows.len())]
async fn import(tenant: &str, rows: Vec<String>) -> Result<usize, RateLimited> {
    Ok(rows.len())
}

// A month from the billing day (31: every month's last day), in UTC, beside `algorithm = fixed_window`.
#[rate_limit(prefix = "monthly:", key = tenant, max = 1_000_000, period = month, anchor = 31,
             algorithm = fixed_window, policy = "monthly", on_error = closed)]
async fn complete(tenant: &str) -> Result<(), RateLimited> {
    Ok(())
}

// A week, from Monday's midnight, counting failures, skipped for some, in shadow.
#[rate_limit(prefix = "weekly:", key = user, max = 5, period = week, count = failures, skip_if = user.is_empty(),
             shadow = true, message = "try again next week")]
async fn reset_password(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

struct Tenant<'a> {
    id: u64,
    zone: &'a Zone,
}

// Each tenant's own zone, from a field that is a reference to one.
#[rate_limit(prefix = "tenant:", key = tenant.id, max = 100, period = day, tz = tenant.zone)]
async fn per_tenant(tenant: &Tenant<'_>) -> Result<u64, RateLimited> {
    Ok(tenant.id)
}

// Each tenant's own billing day too, an integer of any width (`anchor = <expr>`).
#[rate_limit(prefix = "billing:", key = tenant.id, max = 100, period = month, tz = tenant.zone,
             anchor = tenant.id % 28 + 1)]
async fn billed(tenant: &Tenant<'_>, day: u32) -> Result<u32, RateLimited> {
    Ok(day)
}

#[rate_limit(prefix = "billing_day:", max = 100, period = month, anchor = day)]
async fn billed_on(day: u8) -> Result<u8, RateLimited> {
    Ok(day)
}

// A `Zone` argument: borrowed, not moved, so the body still owns it.
#[rate_limit(prefix = "zone:", max = 100, period = month, anchor = 15, tz = zone)]
async fn per_call(zone: Zone) -> Result<Zone, RateLimited> {
    Ok(zone)
}

// Stacked beside a rate.
#[rate_limit(prefix = "burst:", key = user, max = 10, window = 1)]
#[rate_limit(prefix = "quota:", key = user, max = 1_000, period = day, tz = "America/New_York")]
async fn search(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

#[async_trait::async_trait]
trait Quota {
    async fn spend(&self, tokens: u32) -> Result<u32, RateLimited>;
}

struct Account {
    id: u64,
    zone: Zone,
}

// In an `#[async_trait]` impl: `self` is the account, moved into the future as async-trait writes it.
#[async_trait::async_trait]
impl Quota for Account {
    #[rate_limit(prefix = "account:", key = self.id, max = 1_000, period = month, tz = self.zone, cost = tokens)]
    async fn spend(&self, tokens: u32) -> Result<u32, RateLimited> {
        Ok(tokens)
    }
}

fn main() {
    let zone = Zone::get("Asia/Tokyo").unwrap();
    let tenant = Tenant { id: 7, zone: &zone };
    let _ = (
        import("acme", Vec::new()),
        complete("acme"),
        reset_password("ada"),
        per_tenant(&tenant),
        per_call(Zone::UTC),
        search("ada"),
    );
    let account = Account {
        id: 1,
        zone: Zone::UTC,
    };
    let _ = account.spend(5);
}
