use limiter_runtime::{rate_limit, RateLimited};

const UPLOADS: u64 = 2;

// Calls running at once, alone.
#[rate_limit(prefix = "uploads:", key = tenant, in_flight = 4)]
async fn upload(tenant: &str) -> Result<(), RateLimited> {
    Ok(())
}

// Beside a rate, a constant, its own time to live, and skipped with the rate.
#[rate_limit(prefix = "streams:", key = user, max = 100, window = "1h", in_flight = UPLOADS * 2,
             in_flight_ttl = "10s", skip_if = user.is_empty(), count = failures)]
async fn stream(user: &str) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {
    let _ = (upload("acme"), stream("alice"));
}
