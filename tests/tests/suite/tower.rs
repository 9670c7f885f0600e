//! The tower layer over real HTTP (an axum server on loopback): keys from the peer address, from
//! `X-Forwarded-For` and `Forwarded` behind 0, 1 and 2 trusted proxies (forged and malformed entries
//! included, IPv6 clients by their /64), from a header, the route and a closure; a request without a key
//! counted under its peer's address, the fallback, or let through as asked, and told of; several rules decided as one; the quota fields on 2xx and 429, read with a Structured Fields
//! parser, with the handlers' decisions merged in; in memory and on a real Redis.

use crate::fields;

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{Path, Request};
use axum::middleware::{self, Next};
use axum::routing::get;
use axum::Router;
use fields::{member, policies, quota, retry_after};
use limiter_runtime::tower::{Key, RateLimitLayer};
use limiter_runtime::{rate_limit, Algorithm, Limiter, RateLimited, Rule};
use tests::http::{request, request_with, Response};
use tests::logs::Captured;
use tests::RedisServer;

/// A limit of `max` an hour under `prefix`, named `name`.
fn rule(prefix: &str, name: &'static str, max: u64) -> Rule {
    Rule::new()
        .prefix(prefix.to_owned())
        .policy(name)
        .max(max)
        .window(Duration::from_secs(3_600))
}

async fn hello() -> &'static str {
    "hello"
}

/// Serves `app` on a free loopback port, with the peer's address in each request (axum's `ConnectInfo`).
async fn serve(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = app.into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// Serves `app` without telling it the peer's address.
async fn serve_without_peer(app: Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    address
}

/// `/hello` behind a layer of `rules` keyed by `key`.
fn app<const N: usize>(limiter: &Limiter, rules: [Rule; N], key: Key) -> Router {
    Router::new()
        .route("/hello", get(hello))
        .layer(RateLimitLayer::new(limiter, rules, key))
}

/// How many units `rule` has counted for `key` (a probe of cost 0 charges nothing).
async fn used(limiter: &Limiter, rule: &Rule, key: &str) -> u64 {
    let state = limiter.check(rule, key).cost(0).await;
    state.limit - state.remaining
}

/// The statuses of `GET path` sent `times` times with `headers`.
async fn statuses(
    address: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    times: usize,
) -> Vec<u16> {
    let mut statuses = Vec::new();
    for _ in 0..times {
        statuses.push(request_with(address, "GET", path, headers).await.status);
    }
    statuses
}

#[tokio::test]
async fn the_peer_address_from_axums_connection_info_is_the_key() {
    let limiter = Limiter::in_memory();
    let per_peer = rule("peer:", "per-peer", 2);
    let address = serve(app(&limiter, [per_peer.clone()], Key::peer_ip())).await;
    assert_eq!(statuses(address, "/hello", &[], 3).await, [200, 200, 429]);
    assert_eq!(used(&limiter, &per_peer, "127.0.0.1").await, 2);
}

/// A server that does not record the peer's address gives the key nothing, and no peer address to fall back
/// on: every such request counts under one shared key (as one client, with the quota fields), told of once a
/// minute at error level with how to serve the addresses; a fallback key, if set, is the one they share.
#[tokio::test]
async fn without_a_key_or_a_peer_a_request_counts_under_one_shared_key_or_the_fallback() {
    let logs = Captured::default();
    let _guard = tracing::subscriber::set_default(logs.subscriber());
    let limiter = Limiter::in_memory();
    let per_peer = rule("no-peer:", "per-peer", 1);
    let shared = serve_without_peer(app(&limiter, [per_peer.clone()], Key::peer_ip())).await;
    assert_eq!(
        statuses(shared, "/hello", &[], 4).await,
        [200, 429, 429, 429]
    );
    let response = request(shared, "GET", "/hello").await;
    assert!(
        response.header("ratelimit").is_some(),
        "decided, and advertised: {response:?}"
    );
    assert_eq!(used(&limiter, &per_peer, "no-peer-address").await, 1);
    let told = logs.text();
    let errors: Vec<&str> = told.lines().filter(|line| line.contains("ERROR")).collect();
    assert_eq!(errors.len(), 1, "told once a minute: {told}");
    assert!(
        errors[0].contains("into_make_service_with_connect_info"),
        "{told}"
    );
    assert!(!told.contains("unlimited"), "{told}");

    let layer =
        RateLimitLayer::new(&limiter, [per_peer.clone()], Key::peer_ip()).fallback("unknown");
    let fallback = serve_without_peer(Router::new().route("/hello", get(hello)).layer(layer)).await;
    assert_eq!(statuses(fallback, "/hello", &[], 3).await, [200, 429, 429]);
    assert_eq!(used(&limiter, &per_peer, "unknown").await, 1);
}

/// Behind n trusted proxies the key is the entry n places from the right: the peer for 0, never the
/// left-most entry, which the client wrote. Forging that entry changes nothing.
#[tokio::test]
async fn behind_trusted_proxies_the_client_is_counted_from_the_right() {
    let limiter = Limiter::in_memory();
    // The header, the key reading it, and two chains: honest, and with forged entries on the left.
    type Chain = (&'static str, fn(usize) -> Key, [&'static str; 2]);
    let chains: [Chain; 2] = [
        (
            "x-forwarded-for",
            Key::x_forwarded_for,
            [
                "6.6.6.6, 203.0.113.7, 10.0.0.1",
                "9.9.9.9, 7.7.7.7, 203.0.113.7, 10.0.0.1",
            ],
        ),
        (
            "forwarded",
            Key::forwarded,
            [
                "for=6.6.6.6, for=\"203.0.113.7:4711\";proto=https, for=10.0.0.1",
                "for=\"[2001:db8::1]\";by=x, for=9.9.9.9, For=203.0.113.7, for=10.0.0.1;proto=http",
            ],
        ),
    ];
    for (header, key, [honest, forged]) in chains {
        for (trusted, client) in [(0, "127.0.0.1"), (1, "10.0.0.1"), (2, "203.0.113.7")] {
            let per_client = rule(&format!("{header}:{trusted}:"), "per-client", 2);
            let address = serve(app(&limiter, [per_client.clone()], key(trusted))).await;
            let name = format!("{header}, {trusted} trusted");
            assert_eq!(
                statuses(address, "/hello", &[(header, honest)], 1).await,
                [200],
                "{name}"
            );
            // Another left-most entry: the same client, the same count.
            assert_eq!(
                statuses(address, "/hello", &[(header, forged)], 2).await,
                [200, 429],
                "{name}"
            );
            assert_eq!(used(&limiter, &per_client, client).await, 2, "{name}");
            for forgery in ["6.6.6.6", "9.9.9.9", "2001:db8::1"] {
                assert_eq!(used(&limiter, &per_client, forgery).await, 0, "{name}");
            }
        }
    }
}

/// A chain the key cannot read (none at all, garbage, non-ASCII bytes, `unknown`, an obfuscated node, a zone
/// id, a trailing comma, too few entries) never leaves the request unlimited by default: it counts under its
/// peer's address, told of once a minute. A fallback key counts all such requests together instead, and
/// `pass_unidentified` lets them through. The server never fails.
#[tokio::test]
async fn unreadable_forwarding_headers_count_under_the_peer_or_fall_back() {
    let logs = Captured::default();
    let _guard = tracing::subscriber::set_default(logs.subscriber());
    let limiter = Limiter::in_memory();
    let unreadable: [&[(&str, &str)]; 9] = [
        &[],
        &[("x-forwarded-for", "garbage, more garbage")],
        &[("x-forwarded-for", "é, ü")],
        &[("x-forwarded-for", "unknown, unknown")],
        &[("x-forwarded-for", "fe80::1%eth0, fe80::2%eth0")],
        &[("x-forwarded-for", "203.0.113.7, , ")],
        &[("x-forwarded-for", "10.0.0.1")],
        &[("x-forwarded-for", "")],
        &[("forwarded", "for=_hidden, for=\"[::1\"")],
    ];
    let per_client = rule("unreadable:", "per-client", 2);
    let by_peer = serve(app(&limiter, [per_client.clone()], Key::x_forwarded_for(2))).await;
    let mut all = Vec::new();
    for headers in unreadable {
        all.extend(statuses(by_peer, "/hello", headers, 1).await);
    }
    assert_eq!(all, [200, 200, 429, 429, 429, 429, 429, 429, 429]);
    assert_eq!(used(&limiter, &per_client, "127.0.0.1").await, 2);
    let told = logs.text();
    assert_eq!(
        told.matches("rate limiter: a request's key was not found (an X-Forwarded-For entry 2 from the right")
            .count(),
        1,
        "told once a minute: {told}"
    );
    assert!(
        told.contains("counted it under its peer's address"),
        "{told}"
    );

    let layer = RateLimitLayer::new(
        &limiter,
        [rule("fallback:", "per-client", 1)],
        Key::forwarded(2),
    )
    .fallback("unidentified");
    let fallback = serve(Router::new().route("/hello", get(hello)).layer(layer)).await;
    // Every unreadable request shares the fallback's one unit.
    let mut all = Vec::new();
    for headers in unreadable {
        all.extend(statuses(fallback, "/hello", headers, 1).await);
    }
    assert_eq!(all, [200, 429, 429, 429, 429, 429, 429, 429, 429]);

    let passing = rule("passing:", "per-client", 1);
    let layer = RateLimitLayer::new(&limiter, [passing.clone()], Key::x_forwarded_for(2))
        .pass_unidentified();
    let open = serve(Router::new().route("/hello", get(hello)).layer(layer)).await;
    for headers in unreadable {
        assert_eq!(
            statuses(open, "/hello", headers, 2).await,
            [200; 2],
            "{headers:?}"
        );
    }
    assert_eq!(used(&limiter, &passing, "127.0.0.1").await, 0);
}

/// IPv6 clients count by their /64: one client's addresses share its count, unless the key is told to count
/// each address alone.
#[tokio::test]
async fn ipv6_clients_count_by_their_slash_64() {
    let limiter = Limiter::in_memory();
    let per_network = rule("v6:", "per-client", 2);
    let network = serve(app(
        &limiter,
        [per_network.clone()],
        Key::x_forwarded_for(1),
    ))
    .await;
    let from = |address: &'static str| [("x-forwarded-for", address)];
    assert_eq!(
        statuses(network, "/hello", &from("2001:db8:1:2::a"), 1).await,
        [200]
    );
    assert_eq!(
        statuses(network, "/hello", &from("2001:db8:1:2:ffff::b"), 2).await,
        [200, 429]
    );
    assert_eq!(
        statuses(network, "/hello", &from("2001:db8:1:3::a"), 1).await,
        [200]
    );
    assert_eq!(used(&limiter, &per_network, "2001:db8:1:2::/64").await, 2);

    let per_address = rule("v6-each:", "per-client", 1);
    let each = serve(app(
        &limiter,
        [per_address],
        Key::x_forwarded_for(1).ipv6_prefix(128),
    ))
    .await;
    assert_eq!(
        statuses(each, "/hello", &from("2001:db8:1:2::a"), 1).await,
        [200]
    );
    assert_eq!(
        statuses(each, "/hello", &from("2001:db8:1:2::b"), 1).await,
        [200]
    );
}

#[tokio::test]
async fn a_header_the_route_and_a_closure_are_keys() {
    let limiter = Limiter::in_memory();
    let per_api_key = rule("api-key:", "per-api-key", 1);
    let by_header = serve(app(
        &limiter,
        [per_api_key.clone()],
        Key::header("X-Api-Key"),
    ))
    .await;
    assert_eq!(
        statuses(by_header, "/hello", &[("x-api-key", "alpha")], 2).await,
        [200, 429]
    );
    assert_eq!(
        statuses(by_header, "/hello", &[("x-api-key", "beta")], 1).await,
        [200]
    );
    // No such header: counted under the peer's address.
    assert_eq!(statuses(by_header, "/hello", &[], 3).await, [200, 429, 429]);
    assert_eq!(used(&limiter, &per_api_key, "127.0.0.1").await, 1);
    assert_eq!(used(&limiter, &per_api_key, "alpha").await, 1);

    // The route matched, not the path: every item shares one count.
    let per_route = rule("route:", "per-route", 2);
    let items = Router::new()
        .route(
            "/items/{id}",
            get(|Path(id): Path<String>| async move { id }),
        )
        .layer(RateLimitLayer::new(
            &limiter,
            [per_route.clone()],
            Key::route(),
        ));
    let by_route = serve(items).await;
    for (item, status) in [(1, 200), (2, 200), (3, 429)] {
        let response = request(by_route, "GET", &format!("/items/{item}")).await;
        assert_eq!(response.status, status, "{response:?}");
    }
    assert_eq!(used(&limiter, &per_route, "/items/{id}").await, 2);

    // Any closure over the request's head: here, the tenant in the query.
    let per_tenant = rule("tenant:", "per-tenant", 1);
    let tenant = Key::from_fn(|request| {
        let query = request.uri.query()?;
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("tenant="))
            .map(str::to_owned)
    });
    let by_tenant = serve(app(&limiter, [per_tenant.clone()], tenant)).await;
    assert_eq!(
        statuses(by_tenant, "/hello?tenant=acme", &[], 2).await,
        [200, 429]
    );
    assert_eq!(
        statuses(by_tenant, "/hello?tenant=globex", &[], 1).await,
        [200]
    );
    // The closure finds nothing: counted under the peer's address.
    assert_eq!(statuses(by_tenant, "/hello", &[], 2).await, [200, 429]);
    assert_eq!(used(&limiter, &per_tenant, "acme").await, 1);
}

/// Two rules in one layer are one decision: a request the burst refuses is charged to the hourly quota not
/// at all. Every response, 2xx and 429, advertises both, and `Retry-After` is never earlier than the `t` of
/// the policy that refused.
async fn several_rules_are_one_decision(limiter: Limiter) {
    let burst = rule("burst:", "burst", 2);
    let hourly = rule("hourly:", "hourly", 3);
    let address = serve(app(
        &limiter,
        [burst.clone(), hourly.clone()],
        Key::peer_ip(),
    ))
    .await;
    let ok = request(address, "GET", "/hello").await;
    assert_eq!(ok.status, 200, "{ok:?}");
    let (policy, state) = quota(&ok);
    assert_eq!(policies(&policy), ["burst", "hourly"]);
    assert_eq!(
        (
            member(&policy, "burst").get("q"),
            member(&policy, "burst").get("w")
        ),
        (2, 3_600)
    );
    assert_eq!(
        (
            member(&policy, "hourly").get("q"),
            member(&policy, "hourly").get("w")
        ),
        (3, 3_600)
    );
    assert_eq!(
        (
            member(&state, "burst").get("r"),
            member(&state, "hourly").get("r")
        ),
        (1, 2)
    );
    assert!(
        (3_599..=3_600).contains(&member(&state, "burst").get("t")),
        "{state:?}"
    );

    assert_eq!(request(address, "GET", "/hello").await.status, 200);
    let refused = request(address, "GET", "/hello").await;
    assert_eq!(refused.status, 429, "{refused:?}");
    // The message first, then the policy that refused the request.
    assert_eq!(
        refused.body,
        "too many requests, please try again later. Refused by the policy \"burst\"."
    );
    let (_, state) = quota(&refused);
    assert_eq!(
        (
            member(&state, "burst").get("r"),
            member(&state, "hourly").get("r")
        ),
        (0, 1)
    );
    let t = member(&state, "burst").get("t");
    assert!(
        t >= 1 && retry_after(&refused) >= t,
        "Retry-After {} and t={t}",
        retry_after(&refused)
    );
    // The refused request charged the hourly quota nothing.
    assert_eq!(used(&limiter, &hourly, "127.0.0.1").await, 2);
    assert_eq!(used(&limiter, &burst, "127.0.0.1").await, 2);
}

#[tokio::test]
async fn several_rules_are_one_decision_in_memory() {
    several_rules_are_one_decision(Limiter::in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_rules_are_one_decision_on_redis() {
    let server = RedisServer::start();
    several_rules_are_one_decision(server.limiter()).await;
}

/// A bucket whose `t` (when it would admit again) and whose reset (when it is whole again) differ: after three
/// quick requests to buckets of 3 per 30 s and 3 per 300 s, both refuse, one for 10 s, the other for 100 s.
/// `Retry-After` waits for both, and each refusing policy's `t` is no later.
#[tokio::test]
async fn retry_after_is_never_earlier_than_a_refusing_policys_t() {
    let limiter = Limiter::in_memory();
    let bucket = |prefix: &str, name: &'static str, secs: u64| {
        Rule::new()
            .prefix(prefix.to_owned())
            .policy(name)
            .algorithm(Algorithm::TokenBucket)
            .max(3)
            .window(Duration::from_secs(secs))
    };
    let rules = [bucket("short:", "short", 30), bucket("long:", "long", 300)];
    let address = serve(app(&limiter, rules, Key::peer_ip())).await;
    assert_eq!(statuses(address, "/hello", &[], 3).await, [200; 3]);
    let refused = request(address, "GET", "/hello").await;
    assert_eq!(refused.status, 429, "{refused:?}");
    let (_, state) = quota(&refused);
    let (short, long) = (member(&state, "short"), member(&state, "long"));
    assert_eq!((short.get("r"), long.get("r")), (0, 0));
    assert!((9..=10).contains(&short.get("t")), "{short:?}");
    assert!((99..=100).contains(&long.get("t")), "{long:?}");
    assert!(retry_after(&refused) >= long.get("t"), "{refused:?}");
    assert!(retry_after(&refused) <= 100, "{refused:?}");
}

#[rate_limit(prefix = "handler:", policy = "per-thing", key = id, max = 5, window = 10)]
async fn thing(Path(id): Path<String>) -> Result<String, RateLimited> {
    Ok(id)
}

/// A handler that also asks the plain API: its decision is advertised as well.
async fn plain(Path(id): Path<String>) -> Result<String, RateLimited> {
    let rule = rule("plain:", "plain", 10);
    Limiter::current().enforce(&rule, &id).await?;
    Ok(id)
}

/// The service: `/things/{id}` (annotated) and `/plain/{id}` (the plain API) behind a layer limiting each
/// client to 100 an hour, the handlers deciding with `limiter` too.
fn service(limiter: &Limiter) -> Router {
    Router::new()
        .route("/things/{id}", get(thing))
        .route("/plain/{id}", get(plain))
        .layer(RateLimitLayer::new(
            limiter,
            [rule("client:", "per-client", 100)],
            Key::peer_ip(),
        ))
}

/// The handlers behind a layer decide in the layer's limiter, none installed: one limiter for the service
/// (its counts, its deadline, its `on_error`). Told otherwise, they decide in the installed one.
#[tokio::test]
async fn the_handlers_decide_in_the_layers_limiter() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let address = serve(service(&limiter)).await;
    for _ in 0..3 {
        assert_eq!(request(address, "GET", "/things/7").await.status, 200);
    }
    let per_thing = rule("handler:", "per-thing", 5).window(Duration::from_secs(10));
    assert_eq!(used(&limiter, &per_thing, "7").await, 3, "counted in Redis");

    let unscoped = Router::new().route("/things/{id}", get(thing)).layer(
        RateLimitLayer::new(
            &limiter,
            [rule("client:", "per-client", 100)],
            Key::peer_ip(),
        )
        .scope_handlers(false),
    );
    let elsewhere = Limiter::in_memory();
    let address = serve(unscoped.layer(middleware::from_fn(
        move |request: Request, next: Next| {
            let limiter = elsewhere.clone();
            async move { limiter.scope(next.run(request)).await }
        },
    )))
    .await;
    assert_eq!(request(address, "GET", "/things/8").await.status, 200);
    assert_eq!(used(&limiter, &per_thing, "8").await, 0, "not the layer's");
}

/// The handlers' decisions join the layer's in one set of fields: a 2xx advertises both, and so does the
/// handler's own 429, whose `Retry-After` is never earlier than the handler policy's `t`.
async fn the_handlers_decisions_join_the_layers(limiter: Limiter) {
    // Decisions made outside any request are nobody's: they are not advertised.
    for _ in 0..3 {
        limiter
            .check(&rule("elsewhere:", "elsewhere", 10), "k")
            .await;
    }
    let address = serve(service(&limiter)).await;
    let ok = request(address, "GET", "/things/1001").await;
    assert_eq!(ok.status, 200, "{ok:?}");
    let (policy, state) = quota(&ok);
    assert_eq!(policies(&policy), ["per-client", "per-thing"]);
    assert_eq!(
        (
            member(&policy, "per-thing").get("q"),
            member(&policy, "per-thing").get("w")
        ),
        (5, 10)
    );
    assert_eq!(member(&state, "per-thing").get("r"), 4);
    assert_eq!(member(&state, "per-client").get("r"), 99);

    for _ in 0..4 {
        assert_eq!(request(address, "GET", "/things/1001").await.status, 200);
    }
    let refused = request(address, "GET", "/things/1001").await;
    assert_eq!(refused.status, 429, "{refused:?}");
    let (_, state) = quota(&refused);
    assert_eq!(policies(&state), ["per-client", "per-thing"]);
    // The layer admitted the sixth request (and counted it); the handler refused it.
    assert_eq!(member(&state, "per-client").get("r"), 94);
    let handler = member(&state, "per-thing");
    assert_eq!(handler.get("r"), 0);
    assert!((1..=10).contains(&handler.get("t")), "{handler:?}");
    assert!(retry_after(&refused) >= handler.get("t"));

    let plain = request(address, "GET", "/plain/7").await;
    assert_eq!(plain.status, 200, "{plain:?}");
    let (_, state) = quota(&plain);
    assert_eq!(policies(&state), ["per-client", "plain"]);
    assert_eq!(member(&state, "plain").get("r"), 9);
}

#[tokio::test]
async fn the_handlers_decisions_join_the_layers_in_memory() {
    the_handlers_decisions_join_the_layers(Limiter::in_memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handlers_decisions_join_the_layers_on_redis() {
    let server = RedisServer::start();
    the_handlers_decisions_join_the_layers(server.limiter()).await;
}

#[rate_limit(prefix = "skippable:", policy = "skippable", max = 5, skip_if = admin == "yes")]
async fn skippable(Path(admin): Path<String>) -> Result<String, RateLimited> {
    Ok(admin)
}

/// What does not apply is not advertised: a shadow limit, a limit the call skips, and every limit while the
/// limiter is switched off.
#[tokio::test]
async fn shadow_skipped_and_switched_off_limits_are_not_advertised() {
    let limiter = Limiter::in_memory();
    let scoped = limiter.clone();
    let shadow = rule("shadow:", "shadow", 1).shadow(true);
    let app = Router::new()
        .route("/skippable/{admin}", get(skippable))
        .layer(RateLimitLayer::new(
            &limiter,
            [shadow, rule("real:", "real", 100)],
            Key::peer_ip(),
        ))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let limiter = scoped.clone();
            async move { limiter.scope(next.run(request)).await }
        }));
    let address = serve(app).await;
    for (path, advertised) in [
        ("/skippable/no", vec!["real", "skippable"]),
        // The shadow limit would have refused by now: still admitted, still not advertised.
        ("/skippable/no", vec!["real", "skippable"]),
        ("/skippable/yes", vec!["real"]),
    ] {
        let response = request(address, "GET", path).await;
        assert_eq!(response.status, 200, "{response:?}");
        let (policy, _) = quota(&response);
        assert_eq!(policies(&policy), advertised, "{path}");
    }
    assert_eq!(limiter.stats().shadowed, 2);
    limiter.set_enabled_here(false);
    let off = request(address, "GET", "/skippable/no").await;
    assert_eq!(off.status, 200, "{off:?}");
    assert!(quota(&off).0.is_empty(), "switched off: {off:?}");
}

/// Layers nest: the outermost writes one set of fields for every limit decided inside it.
#[tokio::test]
async fn nested_layers_write_one_set_of_fields() {
    let limiter = Limiter::in_memory();
    let app = Router::new()
        .route("/hello", get(hello))
        .layer(RateLimitLayer::new(
            &limiter,
            [rule("inner:", "inner", 5)],
            Key::route(),
        ))
        .layer(RateLimitLayer::new(
            &limiter,
            [rule("outer:", "outer", 9)],
            Key::peer_ip(),
        ));
    let address = serve(app).await;
    let response = request(address, "GET", "/hello").await;
    let lines = response
        .headers
        .iter()
        .filter(|(name, _)| name == "ratelimit")
        .count();
    assert_eq!(lines, 1, "{response:?}");
    let (_, state) = quota(&response);
    assert_eq!(policies(&state), ["outer", "inner"]);
    assert_eq!(
        (
            member(&state, "outer").get("r"),
            member(&state, "inner").get("r")
        ),
        (8, 4)
    );
}

/// A client that accepts `application/problem+json` is refused with a `quota-exceeded` problem naming the
/// policies that refused it; the fields and `Retry-After` are the same.
#[tokio::test]
async fn a_client_accepting_problem_json_gets_a_quota_exceeded_problem() {
    let limiter = Limiter::in_memory();
    let address = serve(app(
        &limiter,
        [rule("problem:", "per-client", 1)],
        Key::peer_ip(),
    ))
    .await;
    let accept = [("accept", "application/problem+json, text/plain;q=0.5")];
    assert_eq!(statuses(address, "/hello", &accept, 1).await, [200]);
    let refused: Response = request_with(address, "GET", "/hello", &accept).await;
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.header("content-type"),
        Some("application/problem+json")
    );
    let problem: serde_json::Value = serde_json::from_str(&refused.body).unwrap();
    assert_eq!(
        problem["type"],
        "https://iana.org/assignments/http-problem-types#quota-exceeded"
    );
    assert_eq!(
        problem["violated-policies"],
        serde_json::json!(["per-client"])
    );
    assert_eq!(
        problem["detail"],
        "too many requests, please try again later"
    );
    assert!(retry_after(&refused) >= member(&quota(&refused).1, "per-client").get("t"));
}

#[rate_limit(prefix = "big:", policy = "big", max = 10, cost = units)]
async fn weighed(Path(units): Path<u64>) -> Result<String, RateLimited> {
    Ok(units.to_string())
}

/// A call that weighs more than its limit can ever admit is refused for that (413 Content Too Large), with
/// no Retry-After: no wait admits it. One that fits is a 200.
#[tokio::test]
async fn a_call_no_wait_admits_is_a_413_without_retry_after() {
    let limiter = Limiter::in_memory();
    let address = serve(Router::new().route("/weigh/{units}", get(weighed)).layer(
        RateLimitLayer::new(
            &limiter,
            [rule("weigh:", "per-client", 100)],
            Key::peer_ip(),
        ),
    ))
    .await;
    let too_large = request(address, "GET", "/weigh/11").await;
    assert_eq!(too_large.status, 413, "{too_large:?}");
    assert!(too_large.header("retry-after").is_none(), "{too_large:?}");
    assert_eq!(
        too_large.body,
        "too many requests, please try again later. Refused by the policy \"big\": no wait admits a call \
         this large."
    );
    assert_eq!(request(address, "GET", "/weigh/10").await.status, 200);
    // The layer's own fields stand beside it.
    let (policy, _) = quota(&too_large);
    assert_eq!(policies(&policy), ["per-client", "big"]);
}

#[rate_limit(prefix = "login:", policy = "login", max = 5, count = failures)]
async fn login() -> Result<&'static str, RateLimited> {
    Ok("welcome")
}

/// A successful login under `count = failures` gives its unit back: the response says so (`r` is whole).
#[tokio::test]
async fn units_given_back_are_advertised_as_given_back() {
    let limiter = Limiter::in_memory();
    let address = serve(
        Router::new()
            .route("/login", get(login))
            .layer(RateLimitLayer::new(
                &limiter,
                [rule("login-client:", "per-client", 100)],
                Key::peer_ip(),
            )),
    )
    .await;
    for _ in 0..3 {
        let ok = request(address, "GET", "/login").await;
        assert_eq!(ok.status, 200, "{ok:?}");
        let (_, state) = quota(&ok);
        assert_eq!(member(&state, "login").get("r"), 5, "{ok:?}");
    }
}

/// A layer takes its rules from a list read at start-up: a `Vec`, or a slice of one.
#[tokio::test]
async fn a_layers_rules_may_be_a_vec_or_a_slice() {
    let limiter = Limiter::in_memory();
    let rules = vec![rule("vec-a:", "a", 2), rule("vec-b:", "b", 3)];
    let from_vec = serve(app_with(RateLimitLayer::new(
        &limiter,
        rules.clone(),
        Key::peer_ip(),
    )))
    .await;
    assert_eq!(statuses(from_vec, "/hello", &[], 3).await, [200, 200, 429]);
    let from_slice = serve(app_with(RateLimitLayer::new(
        &limiter,
        &rules[1..],
        Key::header("x-client"),
    )))
    .await;
    let header = [("x-client", "c")];
    assert_eq!(
        statuses(from_slice, "/hello", &header, 4).await,
        [200, 200, 200, 429]
    );
}

/// `/hello` behind `layer`.
fn app_with(layer: RateLimitLayer) -> Router {
    Router::new().route("/hello", get(hello)).layer(layer)
}

/// Over HTTP, a penalty's `Retry-After` is a promise: one request a minute under a `5s..1h` penalty is told
/// the minute (`Retry-After` and the refusing policy's `t`), not the penalty's 5 s; a client that waits as
/// long is served, and one that comes back sooner is refused for what is left, its block not extended.
#[tokio::test]
async fn a_penalty_retry_after_is_when_the_limit_admits_again() {
    let clock = limiter_runtime::FakeClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build().unwrap();
    let login = Rule::new()
        .prefix("login:")
        .policy("login")
        .max(1)
        .window(Duration::from_secs(60))
        .penalty(limiter_runtime::Penalty::escalating(
            Duration::from_secs(5),
            Duration::from_secs(3_600),
        ));
    let address = serve(app(&limiter, [login], Key::peer_ip())).await;
    assert_eq!(statuses(address, "/hello", &[], 1).await, [200]);
    let refused = request(address, "GET", "/hello").await;
    assert_eq!(refused.status, 429, "{refused:?}");
    let (_, state) = quota(&refused);
    assert_eq!(member(&state, "login").get("t"), 60, "{refused:?}");
    assert_eq!(retry_after(&refused), 60, "{refused:?}");
    // The refusal that started the block says so.
    assert!(
        refused
            .body
            .ends_with(". Banned by the policy \"login\" for 60 seconds."),
        "{refused:?}"
    );
    clock.advance(Duration::from_secs(5));
    let early = request(address, "GET", "/hello").await;
    assert_eq!((early.status, retry_after(&early)), (429, 55), "{early:?}");
    // Its key is blocked: the body says so, and for how long.
    assert_eq!(
        early.body,
        "too many requests, please try again later. Banned by the policy \"login\" for 55 seconds."
    );
    clock.advance(Duration::from_secs(55));
    assert_eq!(statuses(address, "/hello", &[], 1).await, [200]);
}
