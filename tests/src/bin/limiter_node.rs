//! One node of a multi-process test: a runtime on a shared Redis, driven over stdin and stdout.
//!
//! `limiter_node <redis-url> <instances>`: joins the default instance group (heartbeat every 100 ms) and
//! prints `ready` once it sees `<instances>` live runtimes. Then, for each line `check <key> <max> <calls>` it
//! reads, it makes `<calls>` decisions of `max` per minute with `on_error = local` and prints
//! `admitted <n> degraded <m>`.

use std::time::Duration;

use limiter_runtime::{Limiter, OnError, Rule};
use tokio::io::{AsyncBufReadExt, BufReader};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .expect("usage: limiter_node <redis-url> <instances>");
    let instances: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .expect("usage: limiter_node <redis-url> <instances>");
    let limiter = Limiter::builder()
        .redis(url)
        .on_error(OnError::Local)
        .heartbeat_every(Duration::from_millis(100))
        .deadline(Duration::from_millis(200))
        .build()
        .expect("a valid URL");

    // The first decision starts the heartbeat; wait until every node has been seen.
    limiter.check(&Rule::new().prefix("warm-up:"), "node").await;
    while limiter.stats().instances < instances {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("ready");

    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let words: Vec<&str> = line.split_whitespace().collect();
        let ["check", key, max, calls] = words[..] else {
            panic!("unknown command {line:?}");
        };
        let rule = Rule::new()
            .max(max.parse().unwrap())
            .window(Duration::from_secs(60));
        let (mut admitted, mut degraded) = (0, 0);
        for _ in 0..calls.parse::<u32>().unwrap() {
            let decision = limiter.check(&rule, key).await;
            admitted += u32::from(decision.allowed);
            degraded += u32::from(decision.degraded);
        }
        println!("admitted {admitted} degraded {degraded}");
    }
}
