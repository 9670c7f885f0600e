use axum::response::{IntoResponse, Response};
use limiter_runtime::rate_limit;

// A bare response has no outcome to count.
#[rate_limit(prefix = "bare:", max = 5, count = failures)]
async fn bare() -> Response {
    "bare".into_response()
}

fn main() {}
