//! # Outbound: a fleet that calls a rate-limited API waits its turn together
//!
//! The other side of rate limiting: a service that *calls* an API with limits of its own. An LLM provider
//! allows an organisation 500 requests and 200,000 tokens a minute; a partner, 10 calls a second. Every
//! instance of the service shares that one allowance. [`Limiter::turn`](crate::Limiter::turn) keeps the
//! whole fleet to it: each call waits for its slot in one line kept in Redis, and the upstream's answers
//! teach every node when to hold back.
//!
//! ## A partner API with a fixed quota, by hand (reqwest)
//!
//! A [`LeakyBucket`](crate::Algorithm::LeakyBucket) spaces the calls: `max` a `window`, one slot every
//! `window / max`, the fleet's slots handed out in the order calls reach Redis. Configure it at the
//! upstream's published limit; [`max_wait`](crate::Rule::max_wait) is each call's deadline.
//!
//! ```no_run
//! use limiter_runtime::{Algorithm, Limiter, RateLimited, Rule};
//! use std::time::Duration;
//!
//! # struct Client; struct Response;
//! # impl Client { async fn send(&self) -> Response { Response } }
//! # impl Response {
//! #     fn status(&self) -> u16 { 200 }
//! #     fn headers(&self) -> Vec<(&'static str, &'static str)> { Vec::new() }
//! # }
//! async fn call_partner(limiter: &Limiter, client: &Client, org: &str) -> Result<Response, RateLimited> {
//!     let partner = Rule::new()
//!         .prefix("partner:")
//!         .algorithm(Algorithm::LeakyBucket)
//!         .max(10)
//!         .window(Duration::from_secs(1))
//!         .max_wait(Duration::from_secs(30));
//!     // Wait: fleet-wide, in order; past 30 s, `RateLimited` says how long it would have waited.
//!     let turn = limiter.turn(&partner, org).await?;
//!     // Send.
//!     let response = client.send().await;
//!     // Tell the fleet what the partner answered: a 429 pauses the key on every node.
//!     if let Err(error) = turn.answered(response.status(), response.headers()).await {
//!         tracing::warn!(%error, "the pause could not reach Redis");
//!     }
//!     Ok(response)
//! }
//! ```
//!
//! With reqwest, `answered(response.status().as_u16(), response.headers())`: any `(name, value)` pairs
//! will do, an `http::HeaderMap` among them.
//!
//! What the wait promises:
//! - **In order, across the fleet.** Redis gives each call the next free slot as it reaches it; no node's
//!   burst passes the limit and none starves another (three processes × 32 callers sharing 10 calls a second
//!   each sent a third, `tests/tests/suite/outbound.rs`).
//! - **Within a node, by priority.** A turn takes a [`priority`](crate::Request::priority): the slots a node holds go to its most important waiting call first, then
//!   in the order calls came. A lower call moves one slot later for each one that passes it, and fails if
//!   that passes its deadline.
//! - **A caller that gives up gives its slot back.** Drop the future (a timeout, a cancelled request) and
//!   the slot returns to the line from its end; one from the middle of the fleet's line is a hole that no
//!   other call takes (the one after it keeps its slot), given back once every slot after it went back too.
//! - **No call is sent while its key is paused**, once its node has heard of the pause (milliseconds:
//!   the announcement on Redis's channel): one whose slot the pause covers asks again. Redis hands the
//!   line's slots out after the pause (and refuses the calls of any other algorithm until it ends).
//! - **Told at once when its slot cannot come in time** (below); refused by a limit beside the line
//!   (tokens short), it waits and asks again while its deadline allows.
//!
//! ## Learning from the upstream
//!
//! [`Turn::answered`](crate::Turn::answered) reads the answer, and moves two things the whole fleet shares,
//! kept in Redis at the key's block:
//! - **the rate learned**, as TCP moves its window (AIMD): a 429 or a 503 cuts it to 9/10 of what it was;
//!   each success (2xx) while it is below `max` brings back a thousandth of `max` (a cut made good in a
//!   hundred successes); a quota the answer states below the limit's (`RateLimit-Policy: 5;w=1`,
//!   `"day";q=1000;w=86400`, `X-RateLimit-Limit: 5`, over the limit's window unless `w` says otherwise) lowers
//!   it at once. Never above `max`, never below a twentieth of it; remembered an hour after its last move.
//!   Turns space their slots for it: at 9/10, 10 calls a second go 111 ms apart. A rate lowered re-spaces
//!   the line at once: what it holds past the cut stretches as the rate fell, in Redis and on every node
//!   (each stretches its waiting calls' slots alike), so no call goes at the old spacing after it; and a
//!   refusal cuts only a rate its call was spaced for (as TCP cuts once a window). Measured against an
//!   upstream slower than configured (a strict 8 a second under `max(10)`, 48 callers on 3 nodes): 11
//!   refused per 1,000 after the first seconds, 7.2–7.5 sent a second of its 8;
//! - **a pause**: a 429 or a 503 with a `Retry-After` (seconds or an HTTP date; else the reset its quota
//!   fields give) pauses the key until then; quota fields that leave nothing (`RateLimit: "default";r=0;t=3`
//!   of the IETF draft, the older `RateLimit-Remaining`/`-Reset`, `X-RateLimit-Remaining`/`-Reset` with
//!   seconds, a Unix time or a duration such as `6m0s`) pause it until their reset. A refusal that says
//!   nothing of when to come back pauses nothing: the slower rate is the answer to it.
//!
//! One script call in Redis for an answer that teaches anything (a success at the whole rate teaches
//! nothing, and costs nothing) and one message every node hears (a node that has not heard of a key for
//! ten seconds reads it from Redis at its next turn). [`inspect`](crate::Limiter::inspect) shows both:
//! `learned` (thousandths of the limit, `None` at the whole), `blocked_for` and `paused` (the status, or 0
//! for quota fields); the metric `limiter_upstream_refusals_total{prefix, status}` counts the 429s and 503s.
//!
//! **A bounded line.** While the key is paused, a call still asks Redis: its slot comes after the pause and
//! the calls that asked before it. A call whose slot would come past its `max_wait` (a pause, a slower rate
//! learned, a full line) is told at once, its [`retry_after`](crate::RateLimited::retry_after) the wait it
//! would have had; no caller waits past its deadline.

//! ## An LLM: requests and tokens in one call
//!
//! The first limit is the upstream's (what a pause holds); the tokens beside it are reserved with an
//! estimate and settled with the real count:
//!
//! ```
//! use limiter_runtime::{Algorithm, Limiter, Rule};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let limiter = Limiter::in_memory();
//! let requests = Rule::new()
//!     .prefix("llm:requests:")
//!     .algorithm(Algorithm::LeakyBucket)
//!     .max(500)
//!     .window(Duration::from_secs(60))
//!     .max_wait(Duration::from_secs(30));
//! let tokens = Rule::new()
//!     .prefix("llm:tokens:")
//!     .algorithm(Algorithm::TokenBucket)
//!     .max(200_000)
//!     .window(Duration::from_secs(60));
//! let turn = limiter
//!     .all([(&requests, "acme", 1), (&tokens, "acme", 4_000)]).turn()
//!     .await
//!     .unwrap();
//! // ... send the prompt; the answer says it used 1,250 tokens:
//! turn.settle(&[1, 1_250]).await;
//! // 200,000 − 1,250 (and what refilled meanwhile: a token bucket refills as time goes).
//! assert!(limiter.inspect(&tokens, "acme").await.unwrap().remaining >= 198_750);
//! # }
//! ```
//!
//! ## The attribute on the client function
//!
//! `#[rate_limit(key = org, window = 60, max = 500, mode = wait, max_wait = "30s")]` on the function that
//! calls the upstream waits for the call's slot in the same fleet-wide line (`mode = wait` is a leaky
//! bucket's, the one algorithm that hands out slots: it needs no `algorithm`), and a call dropped while it
//! waits gives its slot back. The attribute cannot read the upstream's answer: to learn
//! from 429s, call [`turn`](crate::Limiter::turn) and [`answered`](crate::Turn::answered) in the body's
//! place, or put the client layer on the client.
//!
//! ## The client layer
//!
//! With the feature `tower`, [`OutboundLayer`](crate::tower::OutboundLayer) does it all for any
//! `Service<http::Request<B>>` (a hyper-util client, a tonic channel): it waits for the request's turn
//! (keyed by its host, or any function of the request), sends it, tells the fleet what the answer taught,
//! and settles the tokens the answer reports (`.tokens(rule, estimate, used)`). A request whose turn does
//! not come within its deadline fails with [`OutboundError::Limited`](crate::tower::OutboundError::Limited),
//! unsent.
//!
//! ## When Redis fails
//!
//! Waiting calls that hold a slot keep it. Calls that ask while Redis cannot answer are decided by their
//! `on_error`, with one change: `open` is taken as `local`, so a node releases its waiting calls at its own
//! share of the rate, never all at once. Use `on_error = local` (the same, said) for outbound limits;
//! `closed` refuses while Redis is down, and each caller retries until its deadline.
//!
//! ## Strict spacing, without headroom to guess
//!
//! Configure the upstream's published limit as it is: an upstream that spaces its calls strictly (nginx's
//! `limit_req`, Envoy's local rate limit, GCRA in redis-cell, most API gateways: a call only a full
//! `window / max` after the last one it admitted) sees no two sends of a key closer than that, from any
//! nodes, right after a pause or with the line full. How:
//! - **A slot's time is the earliest moment its call may leave**, on Redis's clock: each node reads that clock
//!   through its answers (what an answer took beyond the fastest seen lately is how late it came), not from
//!   when the answer arrived.
//! - **Each slot carries a margin**: a turn spaces the slots by `window / max` and 1/32 of it more (3.1 ms at
//!   10 a second: 97% of the allowance), at least a millisecond (a timer's grain: at 200 a second, 83% of
//!   it; spacing that fine is more than a timer keeps). A call sleeps until a millisecond before its slot,
//!   then yields to the runtime until the slot, so it leaves within the margin (measured: 0.25 ms late at
//!   the median, 1.1 ms at worst, where a Tokio timer alone fires 1.2 and 1.7 ms late).
//! - **A call that wakes past its margin does not go**: a stalled task or a late timer would land it closer
//!   than the spacing to the next slot's call. Its slot goes back and it asks again, at the line's end (the
//!   metric `limiter_late_turns_total{prefix}` counts them).
//!
//! What a margin cannot absorb is a call held up on its way after it left (a slow connection, a stalled
//! proxy): the upstream may refuse it, and its 429 teaches the fleet (below). Measured against nginx
//! (BENCHMARKS.md, "Outbound"): three processes of 16 callers each send 9.6–9.7 calls a second of nginx's
//! 10, none refused, a third each.

// The links above name the `tower` feature's items: without it, they read as text.
#![cfg_attr(not(feature = "tower"), allow(rustdoc::broken_intra_doc_links))]
