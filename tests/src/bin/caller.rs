//! One process of the outbound fleet test: callers that wait their turn to call an upstream.
//!
//! `caller <redis-url> <upstream-url> <callers> <millis> <max-wait-ms> [<node>]`: a leaky bucket of 10 calls a
//! second (the upstream's published limit) with a deadline of `<max-wait-ms>`; each of `<callers>` tasks (the
//! i-th starting 5 ms after the one before) waits its turn for key `acme`, sends `GET <upstream-url>/acme` over
//! plain HTTP/1.1 with its slot in an `x-slot` header (the decision's time plus its delay, µs since the Unix
//! epoch on Redis's clock), the process in `x-node` (`<node>`, else its process id) and the task in `x-caller`
//! (`i`), and tells the fleet what the upstream answered, until `<millis>` ms have passed.
//! It prints `ready`, waits for a `go` line on stdin, then prints `sent <caller> <status> <waited µs> <slot
//! less when it asked, µs>` for each call sent, `refused <caller> <waited µs> <retry after µs>` for each turn
//! refused, and `done` last.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use limiter_runtime::{Algorithm, Limiter, Rule};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

const USAGE: &str =
    "usage: caller <redis-url> <upstream-url> <callers> <millis> <max-wait-ms> [<node>]";

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (node, args) = match &args[..] {
        [args @ .., node] if args.len() == 5 => (node.clone(), args),
        args => (std::process::id().to_string(), args),
    };
    let [redis, upstream, callers, millis, max_wait] = args else {
        panic!("{USAGE}");
    };
    let callers: u64 = callers.parse().expect(USAGE);
    let run = Duration::from_millis(millis.parse().expect(USAGE));
    let max_wait = Duration::from_millis(max_wait.parse().expect(USAGE));
    let address = upstream
        .strip_prefix("http://")
        .expect("the upstream's URL is http://host:port")
        .to_owned();
    let limiter = Limiter::builder().redis(redis.as_str()).build().unwrap();
    // Ready once Redis answers within the limiter's deadline: on a loaded machine a first answer may not.
    let patience = Instant::now() + Duration::from_secs(10);
    while let Err(error) = limiter.ready().await {
        assert!(Instant::now() < patience, "{error}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let rule = Rule::new()
        .prefix("out:processes:")
        .algorithm(Algorithm::LeakyBucket)
        .max(10)
        .window(Duration::from_secs(1))
        .max_wait(max_wait);
    println!("ready");
    let mut line = String::new();
    BufReader::new(tokio::io::stdin())
        .read_line(&mut line)
        .await
        .unwrap();
    assert_eq!(line.trim(), "go");
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..callers {
        let (limiter, rule, address, node) =
            (limiter.clone(), rule.clone(), address.clone(), node.clone());
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5 * i)).await;
            let end = (started + run).into();
            loop {
                let (asked, asked_wall) = (Instant::now(), since_epoch(SystemTime::now()));
                let Ok(turn) = tokio::time::timeout_at(end, limiter.turn(&rule, "acme")).await
                else {
                    break;
                };
                let waited = asked.elapsed().as_micros();
                match turn {
                    Ok(turn) => {
                        let decision = turn.decisions()[0];
                        let slot = (decision.decided_at + decision.delay).as_micros() as i128;
                        let (status, headers) = get(&address, slot, &node, i).await;
                        turn.answered(status, headers).await.unwrap();
                        println!("sent {i} {status} {waited} {}", slot - asked_wall);
                    }
                    Err(refused) => {
                        println!("refused {i} {waited} {}", refused.retry_after().as_micros())
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    println!("done");
}

/// Returns `at` in µs since the Unix epoch.
fn since_epoch(at: SystemTime) -> i128 {
    at.duration_since(UNIX_EPOCH).unwrap().as_micros() as i128
}

/// Sends `GET /acme` to `address`, saying its `slot`, its `node` and its `caller`, and reads the answer's
/// status and headers.
async fn get(address: &str, slot: i128, node: &str, caller: u64) -> (u16, Vec<(String, String)>) {
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!(
        "GET /acme HTTP/1.1\r\nHost: {address}\r\nx-slot: {slot}\r\nx-node: {node}\r\n\
         x-caller: {caller}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let head = answer.split("\r\n\r\n").next().unwrap_or_default();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .expect("an HTTP status line");
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    (status, headers)
}
