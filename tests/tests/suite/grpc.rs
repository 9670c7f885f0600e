//! gRPC: behind a real tonic server, a rejection reaches a real tonic client as `RESOURCE_EXHAUSTED` (or
//! `UNAVAILABLE` when the limiter cannot decide and fails closed), with the limit's message and the retry
//! delay in the metadata, whether the method refuses the call itself or the tower layer in front of the
//! server does. The service is written by hand (a text codec, one unary method), so no code generation is
//! needed.
#![cfg(feature = "tonic")]

use crate::fields;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut};
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{Limiter, OnError, Rule};
use tests::RedisServer;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::server::UnaryService;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Channel, Server};
use tonic::{Code, Request, Response, Status};

const METHOD: &str = "/limiter.test.Greeter/Hello";

/// Messages as UTF-8 text.
#[derive(Debug, Clone, Copy, Default)]
struct Text;

impl Codec for Text {
    type Encode = String;
    type Decode = String;
    type Encoder = Text;
    type Decoder = Text;

    fn encoder(&mut self) -> Text {
        Text
    }

    fn decoder(&mut self) -> Text {
        Text
    }
}

impl Encoder for Text {
    type Item = String;
    type Error = Status;

    fn encode(&mut self, item: String, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(item.as_bytes());
        Ok(())
    }
}

impl Decoder for Text {
    type Item = String;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<String>, Status> {
        let bytes = src.copy_to_bytes(src.remaining());
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|_| Status::invalid_argument("not UTF-8"))
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The service: one method, `Hello`, limited per caller (the request's text) to 3 per minute.
#[derive(Clone)]
struct Greeter {
    limiter: Limiter,
}

impl UnaryService<String> for Greeter {
    type Response = String;
    type Future = BoxFuture<Result<Response<String>, Status>>;

    fn call(&mut self, request: Request<String>) -> Self::Future {
        let limiter = self.limiter.clone();
        Box::pin(async move {
            let caller = request.into_inner();
            // "held <key>": a call that needs the one permit in flight of `key`.
            if let Some(key) = caller.strip_prefix("held ") {
                let rule = Rule::new().prefix("hello:held:").in_flight(1);
                let _permit = limiter.acquire(&rule, key).await?;
                return Ok(Response::new(format!("hello, {key}")));
            }
            // "blocked <key>": once a minute, and a ten-minute block for a second try.
            if let Some(key) = caller.strip_prefix("blocked ") {
                let rule = Rule::new()
                    .prefix("hello:blocked:")
                    .max(1)
                    .window(Duration::from_secs(60))
                    .penalty(limiter_runtime::Penalty::fixed(Duration::from_secs(600)));
                limiter.enforce(&rule, key).await?;
                return Ok(Response::new(format!("hello, {key}")));
            }
            let rule = Rule::new()
                .prefix("hello:")
                .max(3)
                .window(Duration::from_secs(60))
                .message("three hellos a minute");
            limiter.enforce(&rule, &caller).await?;
            Ok(Response::new(format!("hello, {caller}")))
        })
    }
}

impl tower_service::Service<http::Request<tonic::body::Body>> for Greeter {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Self::Response, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let method = self.clone();
        Box::pin(async move {
            if request.uri().path() != METHOD {
                return Ok(Status::unimplemented(request.uri().path().to_owned()).into_http());
            }
            Ok(tonic::server::Grpc::new(Text).unary(method, request).await)
        })
    }
}

/// Serves the greeter with `limiter` on a free loopback port.
async fn serve(limiter: Limiter) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let incoming = TcpIncoming::from(listener);
    let greeter = Greeter { limiter };
    tokio::spawn(async move {
        Server::builder()
            .serve_with_incoming(greeter, incoming)
            .await
            .unwrap()
    });
    address
}

/// Serves the greeter with `limiter` on a free loopback port, behind a layer allowing each client (its peer
/// address, from tonic's connection info) 2 calls an hour.
async fn serve_behind_layer(limiter: Limiter) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let incoming = TcpIncoming::from(listener);
    let per_client = Rule::new()
        .prefix("grpc:client:")
        .policy("per-client")
        .max(2)
        .window(Duration::from_secs(3_600))
        .message("two calls an hour");
    let layer = RateLimitLayer::new(&limiter, [per_client], Key::peer_ip());
    let greeter = Greeter { limiter };
    tokio::spawn(async move {
        Server::builder()
            .layer(layer)
            .serve_with_incoming(greeter, incoming)
            .await
            .unwrap()
    });
    address
}

/// One `Hello` from `caller`, through a real tonic client.
async fn hello(address: SocketAddr, caller: &str) -> Result<String, Status> {
    hello_with_metadata(address, caller)
        .await
        .map(Response::into_inner)
}

/// [`hello`], with the response's metadata.
async fn hello_with_metadata(
    address: SocketAddr,
    caller: &str,
) -> Result<Response<String>, Status> {
    let channel = Channel::from_shared(format!("http://{address}"))
        .unwrap()
        .connect()
        .await
        .expect("the server accepts connections");
    let mut client = tonic::client::Grpc::new(channel);
    client.ready().await.expect("the client is ready");
    let path = http::uri::PathAndQuery::from_static(METHOD);
    client
        .unary(Request::new(caller.to_owned()), path, Text)
        .await
}

/// A metadata entry as a number.
fn number(status: &Status, name: &str) -> u64 {
    status
        .metadata()
        .get(name)
        .unwrap_or_else(|| panic!("no `{name}` in {:?}", status.metadata()))
        .to_str()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("`{name}` is not a number"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reached_limit_is_resource_exhausted_with_the_retry_delay() {
    let server = RedisServer::start();
    let address = serve(server.limiter()).await;
    for _ in 0..3 {
        assert_eq!(hello(address, "ada").await.unwrap(), "hello, ada");
    }
    let refused = hello(address, "ada").await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert_eq!(refused.message(), "three hellos a minute");
    let pushback = number(&refused, "grpc-retry-pushback-ms");
    assert!(
        (1..=60_000).contains(&pushback),
        "a retry within the window: {pushback} ms"
    );
    assert_eq!(number(&refused, "retry-after"), pushback.div_ceil(1_000));
    // Another caller has a count of its own.
    assert_eq!(hello(address, "grace").await.unwrap(), "hello, grace");
}

/// A key blocked by its penalty: `RESOURCE_EXHAUSTED`, the delay what is left of the block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_key_is_resource_exhausted_until_its_block_ends() {
    let server = RedisServer::start();
    let address = serve(server.limiter()).await;
    assert_eq!(hello(address, "blocked eve").await.unwrap(), "hello, eve");
    for _ in 0..2 {
        let refused = hello(address, "blocked eve").await.unwrap_err();
        assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
        let pushback = number(&refused, "grpc-retry-pushback-ms");
        assert!(
            (590_000..=600_000).contains(&pushback),
            "the block's remaining time: {pushback} ms"
        );
        assert_eq!(number(&refused, "retry-after"), pushback.div_ceil(1_000));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unavailable_limiter_is_unavailable_not_resource_exhausted() {
    let mut server = RedisServer::start();
    let limiter = Limiter::builder()
        .redis(server.url())
        .on_error(OnError::Closed)
        .deadline(Duration::from_millis(200))
        .build()
        .unwrap();
    let address = serve(limiter).await;
    assert!(hello(address, "ada").await.is_ok());
    server.kill();
    let refused = hello(address, "ada").await.unwrap_err();
    assert_eq!(refused.code(), Code::Unavailable, "{refused:?}");
    assert!(number(&refused, "grpc-retry-pushback-ms") > 0);
}

/// Behind the layer, keyed by the peer address tonic records: the third call from this client is refused by
/// the layer before the method runs, as a `Status` the client reads like the method's own, and the calls it
/// admits carry the quota fields in their metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_the_layer_a_refusal_is_resource_exhausted_with_the_retry_delay() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let address = serve_behind_layer(limiter.clone()).await;
    let admitted = hello_with_metadata(address, "ada").await.unwrap();
    assert_eq!(admitted.get_ref(), "hello, ada");
    // The layer's policy and the method's own (named by default: `limit-` and a digest of its prefix).
    let state = admitted
        .metadata()
        .get("ratelimit")
        .unwrap()
        .to_str()
        .unwrap();
    let state = fields::list("ratelimit", &[state]);
    assert_eq!(fields::policies(&state), ["per-client", "limit-ebcab67e"]);
    assert_eq!(fields::member(&state, "per-client").get("r"), 1);
    assert_eq!(fields::member(&state, "limit-ebcab67e").get("r"), 2);
    assert_eq!(hello(address, "grace").await.unwrap(), "hello, grace");

    let refused = hello(address, "hopper").await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert_eq!(refused.message(), "two calls an hour");
    let pushback = number(&refused, "grpc-retry-pushback-ms");
    assert!(
        (1..=3_600_000).contains(&pushback),
        "a retry within the hour: {pushback} ms"
    );
    assert_eq!(number(&refused, "retry-after"), pushback.div_ceil(1_000));
    // Counted under the peer's address, as tonic recorded it; the refused call charged nothing more.
    let probe = Rule::new()
        .prefix("grpc:client:")
        .max(2)
        .window(Duration::from_secs(3_600));
    assert_eq!(
        limiter.check(&probe, "127.0.0.1").cost(0).await.remaining,
        0
    );
}

/// A call refused by a limit in flight (its one permit held elsewhere) is `RESOURCE_EXHAUSTED`, with no
/// delay to wait (`grpc-retry-pushback-ms: 0`, as the guide says): when a permit comes back is its holder's to
/// say. Admitted once the permit is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_flight_refusal_is_resource_exhausted_with_no_delay() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let address = serve(limiter.clone()).await;
    let rule = Rule::new().prefix("hello:held:").in_flight(1);
    let permit = limiter.acquire(&rule, "ada").await.unwrap();
    let refused = hello(address, "held ada").await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert_eq!(number(&refused, "grpc-retry-pushback-ms"), 0, "{refused:?}");
    permit.settle(limiter_runtime::AsCharged).await;
    assert_eq!(hello(address, "held ada").await.unwrap(), "hello, ada");
}

/// A method with a limit in flight, written to return a `tonic::Response`.
#[limiter_runtime::rate_limit(prefix = "grpc:running:", in_flight = 1)]
async fn running(caller: &str) -> Result<Response<String>, Status> {
    Ok(Response::new(format!("hello, {caller}")))
}

/// A `tonic::Response` is whole when the method returns: its permit is given back then (the layer in front
/// holds its own until a streamed body ends).
#[tokio::test]
async fn a_tonic_responses_permit_ends_with_the_method() {
    Limiter::in_memory()
        .scope(async {
            let first = running("ada").await.unwrap();
            let second = running("ada").await.unwrap();
            assert_eq!(
                (first.into_inner(), second.into_inner()),
                ("hello, ada".to_owned(), "hello, ada".to_owned())
            );
        })
        .await;
}
