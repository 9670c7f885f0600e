use axum::body::Body;
use axum::response::{IntoResponse, Response};
use limiter_runtime::{rate_limit, Limiter, RateLimited};

// Written to return an HTTP response, with a limit in flight: the body holds the permit until it ends.
#[rate_limit(prefix = "bare:", in_flight = 1)]
async fn bare() -> Response {
    "bare".into_response()
}

#[rate_limit(prefix = "qualified:", in_flight = 1)]
async fn qualified() -> axum::response::Response {
    "qualified".into_response()
}

#[rate_limit(prefix = "http:", in_flight = 1)]
async fn http() -> http::Response<Body> {
    http::Response::new(Body::from("http"))
}

// Beside a rate that counts failures: what the outcome does not count is given back when the function returns.
#[rate_limit(prefix = "result:", max = 10, in_flight = 1, count = failures)]
async fn result() -> Result<Response, RateLimited> {
    Ok("result".into_response())
}

#[rate_limit(prefix = "axum_result:", in_flight = 1)]
async fn axum_result() -> axum::response::Result<Response> {
    Ok("axum_result".into_response())
}

// A bare response with a rate alone: the rejection is a response.
#[rate_limit(prefix = "rate:", max = 1, window = "1h")]
async fn rate() -> Response {
    "rate".into_response()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    Limiter::in_memory()
        .scope(async {
            let held = bare().await;
            assert_eq!(bare().await.status(), 429, "the first body still holds the permit");
            drop(held);
            assert_eq!(bare().await.status(), 200);
            let held = (qualified().await, http().await, axum_result().await);
            assert_eq!(qualified().await.status(), 429);
            assert_eq!(http().await.status(), 429, "`http::Response<Body>` is one");
            assert!(axum_result().await.is_err());
            drop(held);
            let held = result().await.unwrap();
            assert!(result().await.is_err());
            drop(held);
            assert!(result().await.is_ok());
            assert_eq!(rate().await.status(), 200);
            assert_eq!(rate().await.status(), 429);
        })
        .await;
}
