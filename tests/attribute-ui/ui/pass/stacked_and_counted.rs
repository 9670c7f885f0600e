use limiter_runtime::{rate_limit, RateLimited};

#[derive(Debug)]
enum Error {
    Denied,
    Limited(RateLimited),
}

impl From<RateLimited> for Error {
    fn from(e: RateLimited) -> Self {
        Error::Limited(e)
    }
}

struct Service;

impl Service {
    // A burst and a quota, per user, and failed attempts per IP: three limits, one decision.
    #[rate_limit(prefix = "burst:", key = user, max = 5, window = 1)]
    #[rate_limit(prefix = "quota:", key = (tenant, user), max = 1000, window = "1h")]
    #[rate_limit(prefix = "failures:", key = ip, max = 10, window = "1m", count = failures)]
    async fn login(&self, tenant: &str, user: &str, ip: std::net::IpAddr, ok: bool) -> Result<u32, Error> {
        if !ok {
            return Err(Error::Denied);
        }
        let value: u32 = "7".parse().map_err(|_| Error::Denied)?;
        Ok(value)
    }
}

#[rate_limit(prefix = "one:", count = successes, skip_if = free)]
async fn single(free: bool) -> Result<(), RateLimited> {
    Ok(())
}

fn main() {
    let _ = Service.login("t", "u", [127, 0, 0, 1].into(), true);
    let _ = single(true);
}
