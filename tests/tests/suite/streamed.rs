//! An annotated handler that returns an HTTP response (feature `axum`): its permit in flight is held until the
//! response body ends, not when the handler returns, and its refusal is answered as the layer answers its own.
//!
//! - **Held until the body ends:** with `in_flight = 2`, while two streamed bodies are still open a third call
//!   is refused; a body read to its end, or dropped unread, gives its permit back. In memory and on a real
//!   Redis, called directly and over real HTTP (an axum server on loopback).
//! - **Bare `Response` too:** a handler returning `Response` (no `Result`) answers its refusal as a response.
//! - **One refusal format per service:** behind the layer, a handler's `RateLimited` answers a client that
//!   accepts `application/problem+json` with a `quota-exceeded` problem document (read with `serde_json`, its
//!   content type checked), as the layer's own refusal does, and plain text otherwise.

use crate::fields;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use fields::{member, quota, retry_after};
use futures::StreamExt as _;
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{rate_limit, Limiter, RateLimited, Reason, Rule};
use tests::http::{request, request_with};
use tests::RedisServer;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// A body that sends `first` at once, then `last` once `open` turns false, and ends.
fn streamed(mut open: watch::Receiver<bool>) -> Body {
    let first = futures::stream::once(async { Ok::<_, Infallible>(Bytes::from("first\n")) });
    let last = futures::stream::once(async move {
        let _ = open.wait_for(|open| !*open).await;
        Ok::<_, Infallible>(Bytes::from("last\n"))
    });
    Body::from_stream(first.chain(last))
}

/// At most two feeds of a tenant streaming at once.
#[rate_limit(prefix = "feed:", policy = "feeds", key = tenant, in_flight = 2)]
async fn feed(
    Path(tenant): Path<String>,
    State(open): State<watch::Receiver<bool>>,
) -> Result<Response, RateLimited> {
    Ok(Response::new(streamed(open)))
}

/// The same, returning the response alone: a refusal is a response too.
#[rate_limit(prefix = "bare:", policy = "bare-feeds", key = tenant, in_flight = 1)]
async fn bare_feed(
    Path(tenant): Path<String>,
    State(open): State<watch::Receiver<bool>>,
) -> Response {
    streamed(open).into_response()
}

/// Calls `feed(tenant)` in `limiter`.
async fn call(
    limiter: &Limiter,
    tenant: &str,
    open: &watch::Receiver<bool>,
) -> Result<Response, RateLimited> {
    limiter
        .scope(feed(Path(tenant.to_owned()), State(open.clone())))
        .await
}

/// Calls `feed(tenant)` until one is admitted, for at most a second (with Redis, a permit given back from a
/// destructor reaches Redis one round trip later).
async fn admitted_again(limiter: &Limiter, tenant: &str, open: &watch::Receiver<bool>) -> Response {
    let started = Instant::now();
    loop {
        if let Ok(response) = call(limiter, tenant, open).await {
            return response;
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "no permit came back"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The body of `response`, read to its end.
async fn read_to_end(response: Response) -> String {
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("the body streams");
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Two bodies streaming hold both permits; reading one to its end frees one, and dropping one unread frees
/// the other.
async fn the_permit_is_held_until_the_body_ends(limiter: &Limiter) {
    let (close, open) = watch::channel(true);
    let first = call(limiter, "acme", &open).await.expect("admitted");
    let second = call(limiter, "acme", &open).await.expect("admitted");
    let refused = call(limiter, "acme", &open)
        .await
        .expect_err("a third call while two bodies are still streaming");
    assert_eq!(refused.reason(), Reason::Limited);
    assert!(
        call(limiter, "other", &open).await.is_ok(),
        "another tenant streams beside them"
    );

    close.send(false).unwrap();
    assert_eq!(read_to_end(first).await, "first\nlast\n");
    let third = admitted_again(limiter, "acme", &open).await;
    assert!(
        call(limiter, "acme", &open).await.is_err(),
        "the second body, never read, still holds its permit"
    );
    drop(second);
    let fourth = admitted_again(limiter, "acme", &open).await;
    drop((third, fourth));
}

#[tokio::test]
async fn a_streamed_body_holds_its_permit_until_it_ends_in_memory() {
    the_permit_is_held_until_the_body_ends(&Limiter::in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_body_holds_its_permit_until_it_ends_on_redis() {
    let server = RedisServer::start();
    the_permit_is_held_until_the_body_ends(&server.limiter()).await;
}

/// Serves `app` on a free loopback port, each request deciding in `limiter`.
async fn serve(limiter: &Limiter, app: Router) -> SocketAddr {
    let limiter = limiter.clone();
    let app = app.layer(middleware::from_fn(move |request: Request, next: Next| {
        let limiter = limiter.clone();
        async move { limiter.scope(next.run(request)).await }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// A `GET path` whose response has begun: its head and its first chunk have arrived, the rest is still to
/// come. Returns the connection, and what was read.
async fn streaming(address: SocketAddr, path: &str) -> (TcpStream, String) {
    let mut stream = TcpStream::connect(address).await.unwrap();
    let head = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut read = Vec::new();
    while !String::from_utf8_lossy(&read).contains("first\n") {
        let mut buffer = [0; 1024];
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer))
            .await
            .expect("the first chunk arrives")
            .unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&read));
        read.extend_from_slice(&buffer[..n]);
    }
    (stream, String::from_utf8(read).unwrap())
}

/// `GET path`, answered in full within 5 seconds (a body that streams for ever is a failure, not a hang).
async fn get_whole(address: SocketAddr, path: &str) -> tests::http::Response {
    tokio::time::timeout(Duration::from_secs(5), request(address, "GET", path))
        .await
        .unwrap_or_else(|_| panic!("GET {path} still streams after 5 s"))
}

/// The rest of a response begun by [`streaming`].
async fn rest(mut stream: TcpStream) -> String {
    let mut rest = String::new();
    let reading = stream.read_to_string(&mut rest);
    tokio::time::timeout(Duration::from_secs(5), reading)
        .await
        .expect("the body ends")
        .unwrap();
    rest
}

/// The issue's case, over HTTP: a handler with `in_flight = 2` serving streamed bodies; while two are still
/// being sent, a third request is refused (429); once they end, one is served again.
#[tokio::test]
async fn over_http_a_third_stream_is_refused_while_two_are_sent() {
    let limiter = Limiter::in_memory();
    let (close, open) = watch::channel(true);
    let app = Router::new()
        .route("/feeds/{tenant}", get(feed))
        .route("/bare/{tenant}", get(bare_feed))
        .with_state(open);
    let address = serve(&limiter, app).await;

    let (one, head) = streaming(address, "/feeds/acme").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let (two, _) = streaming(address, "/feeds/acme").await;
    let refused = get_whole(address, "/feeds/acme").await;
    assert_eq!(refused.status, 429, "{refused:?}");
    let (bare, head) = streaming(address, "/bare/acme").await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let refused = get_whole(address, "/bare/acme").await;
    assert_eq!(
        refused.status, 429,
        "a bare `Response` refuses too: {refused:?}"
    );
    assert_eq!(
        refused.header("content-type"),
        Some("text/plain; charset=utf-8")
    );

    close.send(false).unwrap();
    for stream in [one, two, bare] {
        assert!(rest(stream).await.contains("last\n"));
    }
    let started = Instant::now();
    for path in ["/feeds/acme", "/feeds/acme", "/bare/acme"] {
        // A permit comes back once its body is done, as the server drops it: a moment after the client read
        // the last chunk.
        while get_whole(address, path).await.status != 200 {
            assert!(started.elapsed() < Duration::from_secs(1), "{path}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// The layer's own permit (`in_flight(1)` per client): held while a streamed body is still being sent, so a
/// second request is refused (429) until the last chunk has gone; then one is served again. In memory and on
/// Redis.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layer_holds_its_permit_until_the_last_chunk() {
    async fn plain_feed(State(open): State<watch::Receiver<bool>>) -> Body {
        streamed(open)
    }
    let server = RedisServer::start();
    for limiter in [Limiter::in_memory(), server.limiter()] {
        let (close, open) = watch::channel(true);
        let rule = Rule::new()
            .prefix("layer:feed:")
            .policy("streams")
            .in_flight(1);
        let app = Router::new()
            .route("/feed", get(plain_feed))
            .with_state(open)
            .layer(RateLimitLayer::new(&limiter, [rule], Key::peer_ip()));
        let address = serve(&limiter, app).await;

        let (one, head) = streaming(address, "/feed").await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        let refused = get_whole(address, "/feed").await;
        assert_eq!(
            refused.status, 429,
            "while the first body streams: {refused:?}"
        );
        let (policy, state) = quota(&refused);
        assert_eq!(member(&policy, "streams").get("q"), 1);
        assert_eq!(member(&state, "streams").get("r"), 0);
        assert_eq!(retry_after(&refused), 1);

        close.send(false).unwrap();
        assert!(rest(one).await.contains("last\n"));
        let started = Instant::now();
        loop {
            let again = get_whole(address, "/feed").await;
            if again.status == 200 {
                assert!(again.body.contains("last\n"), "{again:?}");
                break;
            }
            // The permit comes back as the server drops the body, a moment after the client read its end
            // (with Redis, one round trip later).
            assert!(started.elapsed() < Duration::from_secs(1), "{again:?}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// Once an hour for everybody.
#[rate_limit(
    prefix = "once:",
    policy = "once",
    max = 1,
    window = "1h",
    message = "once an hour"
)]
async fn once() -> Result<&'static str, RateLimited> {
    Ok("done")
}

/// An application's own error that answers a rejection as `RateLimited` does.
enum AppError {
    Limited(RateLimited),
}

impl From<RateLimited> for AppError {
    fn from(rejection: RateLimited) -> Self {
        AppError::Limited(rejection)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match self {
            AppError::Limited(rejection) => rejection.into_response(),
        }
    }
}

#[rate_limit(prefix = "wrapped:", policy = "wrapped", max = 1, window = "1h")]
async fn wrapped() -> Result<&'static str, AppError> {
    Ok("done")
}

/// Behind the layer, a handler's refusal speaks the request's format, as the layer's own does: a
/// `quota-exceeded` problem for a client that accepts `application/problem+json`, plain text otherwise.
#[tokio::test]
async fn behind_the_layer_a_handlers_refusal_is_a_problem_when_asked_for() {
    let limiter = Limiter::in_memory();
    let per_client = Rule::new()
        .prefix("format:client:")
        .policy("per-client")
        .max(100);
    let app = Router::new()
        .route("/once", get(once))
        .route("/wrapped", get(wrapped))
        .layer(RateLimitLayer::new(&limiter, [per_client], Key::peer_ip()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let accept = [("accept", "application/problem+json, text/plain;q=0.5")];
    for (path, policy, detail) in [
        ("/once", "once", "once an hour"),
        (
            "/wrapped",
            "wrapped",
            "too many requests, please try again later",
        ),
    ] {
        assert_eq!(
            request_with(address, "GET", path, &accept).await.status,
            200
        );
        let refused = request_with(address, "GET", path, &accept).await;
        assert_eq!(refused.status, 429, "{refused:?}");
        assert_eq!(
            refused.header("content-type"),
            Some("application/problem+json"),
            "{refused:?}"
        );
        let problem: serde_json::Value =
            serde_json::from_str(&refused.body).expect("a JSON problem document");
        assert_eq!(
            problem["type"],
            "https://iana.org/assignments/http-problem-types#quota-exceeded"
        );
        assert_eq!(problem["status"], 429);
        assert_eq!(problem["detail"], detail);
        assert_eq!(problem["violated-policies"], serde_json::json!([policy]));
        assert_eq!(
            refused.header("content-length"),
            Some(refused.body.len().to_string().as_str()),
            "the length is the document's"
        );
        // The fields are the layer's, the handler's policy among them.
        let (_, state) = quota(&refused);
        assert_eq!(member(&state, policy).get("r"), 0);
        assert!(retry_after(&refused) >= member(&state, policy).get("t"));

        let plain = request(address, "GET", path).await;
        assert_eq!(plain.status, 429);
        assert_eq!(
            plain.header("content-type"),
            Some("text/plain; charset=utf-8")
        );
        assert_eq!(
            plain.body,
            format!("{detail}. Refused by the policy \"{policy}\".")
        );
    }
}
