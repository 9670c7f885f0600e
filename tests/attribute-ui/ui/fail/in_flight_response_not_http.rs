use limiter_runtime::{rate_limit, RateLimited};

// A type of the application's own named `Response`: not an HTTP response the permit's holder knows.
struct Response(u32);

#[rate_limit(prefix = "own:", in_flight = 2)]
async fn own() -> Result<Response, RateLimited> {
    Ok(Response(1))
}

fn main() {}
