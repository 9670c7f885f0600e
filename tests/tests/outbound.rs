//! Outbound quotas against a mock upstream on loopback: an axum server that allows N calls a second per
//! organisation (fixed windows of a second, from its start), answers 429 with `Retry-After` beyond, and can
//! change its limit mid-run. The fleet's nodes are limiters of their own on one real redis-server.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{Response, StatusCode};
use axum::routing::get;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use limiter_runtime::{Algorithm, Limiter, Priority, Rule, Turn};
use test_support::RedisServer;

/// What the mock upstream saw: each call's arrival and whether it was refused.
#[derive(Default)]
struct Seen {
    limit: u64,
    /// Seconds a 429 tells callers to wait (`None`: until the window ends, rounded up).
    retry_after: Option<u64>,
    window: u64,
    count: u64,
    arrivals: Vec<(Duration, bool)>,
}

#[derive(Clone)]
struct Upstream {
    started: Instant,
    seen: Arc<Mutex<Seen>>,
    url: String,
}

impl Upstream {
    async fn start(limit: u64) -> Upstream {
        let started = Instant::now();
        let seen = Arc::new(Mutex::new(Seen {
            limit,
            ..Seen::default()
        }));
        let app = axum::Router::new()
            .route("/{org}", get(answer))
            .with_state((started, Arc::clone(&seen)));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Upstream { started, seen, url }
    }

    /// Changes the limit from now on; a 429 then says to wait `retry_after` seconds.
    fn set_limit(&self, limit: u64, retry_after: u64) {
        let mut seen = self.seen.lock().unwrap();
        seen.limit = limit;
        seen.retry_after = Some(retry_after);
    }

    fn arrivals(&self) -> Vec<(Duration, bool)> {
        self.seen.lock().unwrap().arrivals.clone()
    }
}

async fn answer(
    State((started, seen)): State<(Instant, Arc<Mutex<Seen>>)>,
    Path(_org): Path<String>,
) -> Response<Body> {
    let at = started.elapsed();
    let mut seen = seen.lock().unwrap();
    let window = at.as_secs();
    if window != seen.window {
        (seen.window, seen.count) = (window, 0);
    }
    let admitted = seen.count < seen.limit;
    seen.arrivals.push((at, !admitted));
    let reset = 1_000_000 - u64::from(at.subsec_micros());
    if admitted {
        seen.count += 1;
        return Response::builder()
            .header("x-tokens-used", "10")
            .header(
                "x-ratelimit-remaining",
                (seen.limit - seen.count).to_string(),
            )
            .header("x-ratelimit-reset", format!("{:.3}", reset as f64 / 1e6))
            .body(Body::empty())
            .unwrap();
    }
    let retry = seen.retry_after.unwrap_or(reset.div_ceil(1_000_000));
    Response::builder()
        .status(StatusCode::TOO_MANY_REQUESTS)
        .header("retry-after", retry.to_string())
        .body(Body::empty())
        .unwrap()
}

type Http = Client<HttpConnector, Body>;

fn client() -> Http {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Sends the call whose turn it is, and tells the fleet what the upstream answered: its status.
async fn send(http: &Http, upstream: &Upstream, turn: &Turn) -> u16 {
    let uri = format!("{}/acme", upstream.url);
    let response = http.get(uri.parse().unwrap()).await.unwrap();
    let status = response.status().as_u16();
    turn.answered(status, response.headers()).await.unwrap();
    status
}

/// The partner's 10 calls a second, as a leaky bucket that spaces them, each waiting up to `max_wait`.
fn partner(prefix: &'static str, max_wait: Duration) -> Rule {
    Rule::new()
        .prefix(prefix)
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1))
        .max_wait(max_wait)
}

/// Three processes × 32 callers for 20 s against an upstream that allows 10 calls a second: after the first
/// second, at most 1% of the calls meet a 429; the fleet sends at least 90% of what the upstream allows, and
/// never more than 10 in any second; no caller waits past its deadline; each process's share of the calls
/// sent is within 20% of its share of demand. A deadline of 12 s holds the whole line (96 callers, 9.7 s of
/// slots): each caller's next call joins the end of the fleet's line, so the slots go round the callers of
/// every process in the order they asked (`src/bin/caller.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_share_an_upstreams_allowance_without_its_429s() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};

    let server = RedisServer::start();
    let upstream = Upstream::start(10).await;
    let (run, max_wait) = (Duration::from_secs(20), Duration::from_secs(12));
    let (redis, url, started) = (server.url(), upstream.url.clone(), upstream.started);
    let (go, outputs) = tokio::task::spawn_blocking(move || {
        let args = |url: &str| {
            let (run, wait) = (
                run.as_millis().to_string(),
                max_wait.as_millis().to_string(),
            );
            [redis.clone(), url.to_owned(), "32".to_owned(), run, wait]
        };
        let mut children: Vec<_> = (0..3)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_caller"))
                    .args(args(&url))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("the caller binary runs")
            })
            .collect();
        let mut outputs: Vec<_> = children
            .iter_mut()
            .map(|child| BufReader::new(child.stdout.take().unwrap()).lines())
            .collect();
        for output in &mut outputs {
            let line = output
                .next()
                .expect("a caller exited before it was ready")
                .unwrap();
            assert_eq!(line, "ready");
        }
        let go = started.elapsed();
        for child in &mut children {
            writeln!(child.stdin.as_mut().unwrap(), "go").unwrap();
        }
        let outputs: Vec<Vec<String>> = outputs
            .into_iter()
            .map(|output| output.map(Result::unwrap).collect())
            .collect();
        for mut child in children {
            assert!(child.wait().unwrap().success(), "a caller failed");
        }
        (go, outputs)
    })
    .await
    .unwrap();
    let mut shares = Vec::new();
    for lines in &outputs {
        assert_eq!(lines.last().map(String::as_str), Some("done"));
        let mut sent = 0;
        for line in &lines[..lines.len() - 1] {
            let words: Vec<&str> = line.split_whitespace().collect();
            let waited = match words[..] {
                ["sent", _, waited] => {
                    sent += 1;
                    waited
                }
                ["refused", waited, retry] => {
                    assert!(retry.parse::<u64>().unwrap() > 0, "{line}");
                    waited
                }
                _ => panic!("unexpected line {line:?}"),
            };
            let waited = Duration::from_micros(waited.parse().unwrap());
            assert!(waited <= max_wait + Duration::from_millis(300), "{line}");
        }
        shares.push(sent);
    }
    let arrivals = upstream.arrivals();
    let after_first: Vec<_> = arrivals
        .iter()
        .filter(|(at, _)| *at >= go + Duration::from_secs(1))
        .collect();
    let refused = after_first.iter().filter(|(_, refused)| *refused).count();
    let admitted = after_first.len() - refused;
    println!(
        "arrivals {} refused {refused} per process {shares:?}",
        after_first.len()
    );
    assert!(
        refused * 100 <= after_first.len(),
        "{refused} of {} calls met a 429",
        after_first.len()
    );
    let allowance = 10 * (run.as_secs() - 1) as usize;
    assert!(
        admitted * 10 >= allowance * 9,
        "{admitted} calls admitted of an allowance of {allowance}"
    );
    // Never more than the limit in any second, as the upstream saw them arrive.
    for (k, (at, _)) in arrivals.iter().enumerate() {
        let within = arrivals[k..]
            .iter()
            .take_while(|(later, _)| *later < *at + Duration::from_secs(1))
            .count();
        assert!(within <= 10, "{within} calls within a second from {at:?}");
    }
    let total: u64 = shares.iter().sum();
    for share in &shares {
        let third = total as f64 / 3.0;
        assert!(
            (*share as f64 - third).abs() <= 0.2 * third,
            "shares {shares:?}"
        );
    }
}

/// The upstream halves its limit mid-run and answers 429 with `Retry-After: 2`: no node sends during the
/// pause, and afterwards the fleet sends no more than the new limit allows, each 429 pausing it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_that_halves_its_limit_pauses_every_node() {
    let server = RedisServer::start();
    let upstream = Upstream::start(10).await;
    let rule = partner("out:halved:", Duration::from_secs(5));
    let run = Duration::from_secs(8);
    let mut callers = Vec::new();
    for node in 0..2 {
        let limiter = server.limiter();
        limiter.ready().await.unwrap();
        for _ in 0..8 {
            let (limiter, rule, upstream) = (limiter.clone(), rule.clone(), upstream.clone());
            callers.push(tokio::spawn(async move {
                let http = client();
                while upstream.started.elapsed() < run {
                    if let Ok(turn) = limiter.turn(&rule, "acme").await {
                        if upstream.started.elapsed() >= run {
                            turn.cancel().await;
                            break;
                        }
                        send(&http, &upstream, &turn).await;
                    }
                }
                node
            }));
        }
    }
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    upstream.set_limit(5, 2);
    for caller in callers {
        caller.await.unwrap();
    }
    let arrivals = upstream.arrivals();
    let first = arrivals
        .iter()
        .find(|(_, refused)| *refused)
        .expect("the halved limit refused a call")
        .0;
    // Calls already on their way when the 429 left may land; none is sent once the pause is heard.
    let during: Vec<_> = arrivals
        .iter()
        .filter(|(at, _)| {
            *at > first + Duration::from_millis(50) && *at < first + Duration::from_millis(1_950)
        })
        .collect();
    assert!(during.is_empty(), "sent during the pause: {during:?}");
    // From the first 429 on, the fleet keeps to the new limit: at most 5 admitted a window, and the 429s
    // it meets are few (each pauses it for 2 s).
    let after: Vec<_> = arrivals.iter().filter(|(at, _)| *at >= first).collect();
    let refused = after.iter().filter(|(_, refused)| *refused).count();
    let seconds = (run - first).as_secs_f64().ceil() as usize;
    assert!(
        refused <= seconds / 2 + 2,
        "{refused} 429s in {seconds} s: {after:?}"
    );
}

/// Requests and tokens in one call: the tokens are reserved with an estimate and settled with what the
/// answer used, the rest given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_tokens_settle_what_the_answer_did_not_use() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let requests = partner("out:llm:requests:", Duration::from_secs(2));
    let tokens = Rule::new()
        .prefix("out:llm:tokens:")
        .algorithm(Algorithm::TokenBucket)
        .max(10_000)
        .window(Duration::from_secs(60));
    let turn = limiter
        .turn_all([(&requests, "acme", 1), (&tokens, "acme", 4_000)])
        .await
        .unwrap();
    assert_eq!(turn.decisions()[1].remaining, 6_000);
    turn.settle(&[1, 1_500]).await;
    let left = limiter.inspect(&tokens, "acme").await.unwrap().remaining;
    assert!((8_500..=8_501).contains(&left), "{left}");
    // An estimate the tokens cannot hold waits for them, up to the deadline, then fails saying how long.
    let refused = limiter
        .turn_all([(&requests, "acme", 1), (&tokens, "acme", 9_000)])
        .await
        .unwrap_err();
    assert!(
        refused.retry_after() > Duration::from_secs(2),
        "{refused:?}"
    );
    // Nothing of the refused call was charged.
    let left = limiter.inspect(&tokens, "acme").await.unwrap().remaining;
    assert!(left >= 8_500, "{left}");
}

/// Under a full line on one node, `High` callers are served before the `Normal` ones that came first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn high_callers_go_before_normal_ones_on_the_same_node() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = partner("out:priority:", Duration::from_secs(5));
    let served = Arc::new(Mutex::new(Vec::new()));
    let mut callers = Vec::new();
    let mut join = |priority: Priority, name: String| {
        let (limiter, rule, served) = (limiter.clone(), rule.clone(), Arc::clone(&served));
        callers.push(tokio::spawn(async move {
            let turn = limiter.turn_with(&rule, "acme", priority).await.unwrap();
            served.lock().unwrap().push(name);
            turn.settle(&[]).await;
        }));
    };
    for i in 0..12 {
        join(Priority::Normal, format!("normal {i}"));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    tokio::time::sleep(Duration::from_millis(150)).await;
    for i in 0..4 {
        join(Priority::High, format!("high {i}"));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for caller in callers {
        caller.await.unwrap();
    }
    let served = served.lock().unwrap().clone();
    // Two or three normal callers had their slots before the high ones joined; the next four go to them.
    let first_high = served
        .iter()
        .position(|name| name.starts_with("high"))
        .unwrap();
    assert!(first_high <= 3, "{served:?}");
    assert!(
        served[first_high..first_high + 4]
            .iter()
            .all(|name| name.starts_with("high")),
        "{served:?}"
    );
    // The normal callers keep their order among themselves.
    let normal: Vec<_> = served
        .iter()
        .filter(|name| name.starts_with("normal"))
        .cloned()
        .collect();
    let expected: Vec<_> = (0..12).map(|i| format!("normal {i}")).collect();
    assert_eq!(normal, expected);
}

/// Callers that give up waiting give their slots back: after 25 leave, the next waits for no one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn callers_that_give_up_give_their_slots_back() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    let rule = partner("out:gave-up:", Duration::from_secs(5));
    let mut callers = Vec::new();
    for _ in 0..25 {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        callers.push(tokio::spawn(async move {
            tokio::time::timeout(Duration::from_millis(300), limiter.turn(&rule, "acme"))
                .await
                .map(|turn| turn.map(drop))
        }));
    }
    let mut left = 0;
    for caller in callers {
        if caller.await.unwrap().is_err() {
            left += 1;
        }
    }
    assert!(left >= 20, "{left} callers gave up");
    // The slots the ones that left held are free again (given back on tasks of their own).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let asked = Instant::now();
    let turn = limiter.turn(&rule, "acme").await.unwrap();
    assert!(
        asked.elapsed() < Duration::from_millis(500),
        "{:?}",
        asked.elapsed()
    );
    turn.settle(&[]).await;
}

/// Redis killed while callers wait: each is decided by its `on_error` within its deadline, and the default
/// (`open`) releases no more than this node's share at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_killed_waiting_callers_keep_the_nodes_share() {
    let mut server = RedisServer::start();
    let limiter = server
        .builder()
        .deadline(Duration::from_millis(100))
        .build()
        .unwrap();
    limiter.ready().await.unwrap();
    let rule = partner("out:killed:", Duration::from_secs(2));
    // Fill the line, then kill Redis: 30 more callers come.
    for _ in 0..15 {
        limiter.turn(&rule, "acme").await.unwrap().settle(&[]).await;
    }
    server.kill();
    let started = Instant::now();
    let mut callers = Vec::new();
    for _ in 0..30 {
        let (limiter, rule) = (limiter.clone(), rule.clone());
        callers.push(tokio::spawn(async move {
            let asked = Instant::now();
            let turn = limiter.turn(&rule, "acme").await;
            (
                asked.elapsed(),
                turn.map(|turn| (started.elapsed(), turn.decisions()[0].degraded)),
            )
        }));
    }
    let mut went = Vec::new();
    for caller in callers {
        let (waited, turn) = caller.await.unwrap();
        assert!(waited <= Duration::from_millis(2_400), "{waited:?}");
        if let Ok((at, degraded)) = turn {
            assert!(degraded);
            went.push(at);
        }
    }
    went.sort();
    // Alone, the node's share is the whole limit: its calls are still spaced, at most ~3 in any 250 ms.
    assert!(!went.is_empty());
    for pair in went.windows(4) {
        assert!(pair[3] - pair[0] >= Duration::from_millis(250), "{went:?}");
    }
}

/// What an upstream taught is visible: `inspect` shows the pause and its cause on every node, and a caller
/// on another node is not sent before it ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_is_seen_by_every_node_and_inspected_with_its_cause() {
    let server = RedisServer::start();
    let (one, two) = (server.limiter(), server.limiter());
    two.ready().await.unwrap();
    let rule = partner("out:seen:", Duration::from_secs(5));
    // One node goes now and holds the next slot; the other node's caller waits for the slot after it.
    one.turn(&rule, "acme").await.unwrap().settle(&[]).await;
    let turn = one.turn(&rule, "acme").await.unwrap();
    let waiting = {
        let (two, rule) = (two.clone(), rule.clone());
        tokio::spawn(async move {
            let turn = two.turn(&rule, "acme").await.unwrap();
            (Instant::now(), turn.waited())
        })
    };
    tokio::time::sleep(Duration::from_millis(30)).await;
    let paused_at = Instant::now();
    let pause = turn
        .answered(429, [("retry-after", "2"), ("content-type", "text/plain")])
        .await
        .unwrap();
    assert_eq!(pause, Some(Duration::from_secs(2)));
    // The other node hears of the pause in milliseconds (Redis's channel).
    let mut inspected = two.inspect(&rule, "acme").await.unwrap();
    for _ in 0..50 {
        if inspected.paused.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        inspected = two.inspect(&rule, "acme").await.unwrap();
    }
    assert_eq!(inspected.paused, Some(429));
    assert!(
        inspected.blocked_for > Duration::from_millis(1_800),
        "{inspected:?}"
    );
    assert!(!inspected.banned);
    let listed = two.bans("").await.unwrap();
    assert_eq!(
        listed
            .iter()
            .map(|b| (b.key.as_str(), b.paused))
            .collect::<Vec<_>>(),
        [("acme", Some(429))]
    );
    let (went, _) = waiting.await.unwrap();
    assert!(
        went >= paused_at + Duration::from_millis(1_900),
        "{:?}",
        went - paused_at
    );
    // Quota fields that leave nothing pause the key as well, with 0 for their cause.
    let turn = one.turn(&rule, "other").await.unwrap();
    let pause = turn
        .answered(200, [("RateLimit", "\"default\";r=0;t=1")])
        .await
        .unwrap();
    assert_eq!(pause, Some(Duration::from_secs(1)));
    assert_eq!(one.inspect(&rule, "other").await.unwrap().paused, Some(0));
    // An answer with calls left teaches nothing.
    let calm = one.turn(&rule, "calm").await.unwrap();
    assert_eq!(
        calm.answered(200, [("x-ratelimit-remaining", "7")])
            .await
            .unwrap(),
        None
    );
}

/// In memory, a turn waits, pauses and settles as with Redis.
#[tokio::test]
async fn in_memory_a_turn_waits_and_a_pause_holds() {
    let limiter = Limiter::in_memory();
    let rule = partner("out:memory:", Duration::from_secs(1));
    let first = limiter.turn(&rule, "acme").await.unwrap();
    let second = limiter.turn(&rule, "acme").await.unwrap();
    assert!(second.waited() >= Duration::from_millis(90), "{second:?}");
    second.answered(503, [("retry-after", "5")]).await.unwrap();
    // Paused 5 s: past the 1 s a call may wait, it is refused at once, saying how long.
    let refused = limiter.turn(&rule, "acme").await.unwrap_err();
    assert!(
        refused.retry_after() > Duration::from_secs(4),
        "{refused:?}"
    );
    assert_eq!(
        limiter.inspect(&rule, "acme").await.unwrap().paused,
        Some(503)
    );
    first.settle(&[]).await;
}

/// The attribute on the client function waits in the same line, and a call dropped while it waits gives its
/// slot back: after 25 callers give up, the next waits for no one.
// `mode = wait` needs no `algorithm`: it is the leaky bucket's.
#[limiter_runtime::rate_limit(prefix = "out:attribute:", key = org, window = 1, max = 10, mode = wait, max_wait = "5s")]
async fn call_partner(org: &str) -> Result<(), limiter_runtime::RateLimited> {
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_attributes_callers_that_give_up_give_their_slots_back() {
    let server = RedisServer::start();
    let limiter = server.limiter();
    limiter
        .scope(async {
            let mut callers = Vec::new();
            for _ in 0..25 {
                let limiter = limiter.clone();
                callers.push(tokio::spawn(async move {
                    let call = limiter.scope(call_partner("acme"));
                    tokio::time::timeout(Duration::from_millis(300), call).await
                }));
            }
            let mut left = 0;
            for caller in callers {
                if caller.await.unwrap().is_err() {
                    left += 1;
                }
            }
            assert!(left >= 20, "{left} callers gave up");
            tokio::time::sleep(Duration::from_millis(100)).await;
            let asked = Instant::now();
            call_partner("acme").await.unwrap();
            assert!(
                asked.elapsed() < Duration::from_millis(500),
                "{:?}",
                asked.elapsed()
            );
        })
        .await;
}

/// The client layer: requests through a hyper-util client wait their turn (spaced at the upstream's rate,
/// none refused), their tokens settle to what the answer says, and a 429 pauses the host.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_layer_waits_sends_learns_and_settles() {
    use limiter_runtime::tower::{OutboundError, OutboundLayer};
    use tower_service::Service;

    let server = RedisServer::start();
    let limiter = server.limiter();
    let upstream = Upstream::start(10).await;
    let tokens = Rule::new()
        .prefix("out:layer:tokens:")
        .algorithm(Algorithm::TokenBucket)
        .max(10_000)
        .window(Duration::from_secs(3600));
    let layer = OutboundLayer::by_host(&limiter, partner("out:layer:", Duration::from_secs(5)))
        .tokens(
            tokens.clone(),
            |_| 100,
            |answer| {
                answer
                    .headers
                    .get("x-tokens-used")?
                    .to_str()
                    .ok()?
                    .parse()
                    .ok()
            },
        );
    let client = tower_layer::Layer::layer(&layer, client());
    let mut callers = Vec::new();
    for _ in 0..15 {
        let (mut client, uri) = (client.clone(), format!("{}/acme", upstream.url));
        callers.push(tokio::spawn(async move {
            let request = http::Request::get(uri).body(Body::empty()).unwrap();
            std::future::poll_fn(|cx| client.poll_ready(cx))
                .await
                .unwrap();
            client.call(request).await.map(|response| response.status())
        }));
    }
    for caller in callers {
        assert_eq!(caller.await.unwrap().unwrap(), StatusCode::OK);
    }
    let arrivals = upstream.arrivals();
    assert_eq!(arrivals.len(), 15);
    for pair in arrivals.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 >= Duration::from_millis(80),
            "{arrivals:?}"
        );
    }
    // Each reserved 100 tokens and used 10: the rest came back.
    let left = limiter
        .inspect(&tokens, "127.0.0.1")
        .await
        .unwrap()
        .remaining;
    assert!((9_850..=9_860).contains(&left), "{left}"); // and a few refilled meanwhile
                                                        // The upstream refuses: the host pauses for its Retry-After, and a request that cannot wait that long
                                                        // is refused before it is sent.
    upstream.set_limit(0, 30);
    let mut client = client.clone();
    let uri = format!("{}/acme", upstream.url);
    let answer = client
        .call(http::Request::get(&uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::TOO_MANY_REQUESTS);
    let refused = client
        .call(http::Request::get(&uri).body(Body::empty()).unwrap())
        .await;
    match refused {
        Err(OutboundError::Limited(limited)) => {
            assert!(
                limited.retry_after() > Duration::from_secs(25),
                "{limited:?}"
            )
        }
        other => panic!("{:?}", other.map(|response| response.status())),
    }
    assert_eq!(
        upstream.arrivals().len(),
        16,
        "the refused request was not sent"
    );
}
