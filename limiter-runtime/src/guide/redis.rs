//! # Redis
//!
//! With Redis, every node of a service shares one count per limit. Each decision is one atomic Lua script
//! call (`EVALSHA`), loaded once; a script that Redis no longer has (after a restart, a failover or
//! `SCRIPT FLUSH`: `NOSCRIPT`) is sent once more with its source (`EVAL`), which loads and runs it in one
//! step. That is the only retry: a call that failed or timed out may already have been applied, so it is
//! never sent again. The script reads the time from Redis's `TIME`, so nodes whose clocks disagree still
//! share one exact window. Every algorithm touches exactly one key per limit.
//!
//! One multiplexed connection (to the server, to Sentinel's master, or to every node of a cluster) is shared
//! by every task, and reconnects in the background when it drops.
//!
//! ## One server
//!
//! [`LimiterBuilder::redis`](crate::LimiterBuilder::redis) takes a URL, `redis://host:port/db`. An ACL user
//! and its password go in the URL (`redis://user:password@host:port/`, or `redis://:password@host/` for
//! `requirepass`).
//!
//! Building a limiter connects nothing: the first decision makes the connection (connects, authenticates,
//! selects the database, and with TLS, shakes hands), within a bound of its own, the deadline but at least
//! 250 ms. Making the connection spends none of the decision's deadline, which is for Redis to decide. To find
//! a refused port, a wrong password or a database that does not exist at start-up rather than in the first
//! requests, connect and check there: [`LimiterBuilder::connect`](crate::LimiterBuilder::connect) builds the
//! limiter, connects, and loads every decision script ([`Limiter::ready`](crate::Limiter::ready) does the
//! same for a limiter already built). Either returns [`Error::NotReady`](crate::Error::NotReady), naming the
//! cause.
//!
//! ```no_run
//! use limiter_runtime::Limiter;
//! use std::time::Duration;
//!
//! # #[tokio::main] async fn main() -> Result<(), limiter_runtime::Error> {
//! Limiter::builder()
//!     .redis("redis://127.0.0.1:6379/")
//!     .prefix("my_service:") // crate-wide defaults...
//!     .max(100)
//!     .deadline(Duration::from_millis(20)) // ...and the bound on one Redis decision
//!     .connect()
//!     .await? // Err: "Redis (redis://127.0.0.1:6379) is not ready: ..."
//!     .install()?;
//! # Ok(()) }
//! ```
//!
//! ## Redis Cluster
//!
//! When one Redis is not enough, give the builder a few nodes of a Redis Cluster instead of one URL:
//!
//! ```no_run
//! use limiter_runtime::Limiter;
//!
//! # #[tokio::main] async fn main() -> Result<(), limiter_runtime::Error> {
//! Limiter::builder()
//!     .redis_cluster(["redis://10.0.0.1:6379/", "redis://10.0.0.2:6379/", "redis://10.0.0.3:6379/"])
//!     .connect()
//!     .await?
//!     .install()?;
//! # Ok(()) }
//! ```
//!
//! Every algorithm, `on_error`, the overrides, the heartbeats and the switch work as on one server (the same
//! tests run on one server, a cluster and Sentinel). What you should know:
//!
//! - **One key per limit, so never `CROSSSLOT`.** Every script of a limit touches one key, and each call goes
//!   to the master that owns that key's slot, so limits spread over the masters by themselves. A key
//!   containing `{...}` uses it as a hash tag: `{acme}:alice` and `{acme}:bob` share a slot, and so a master.
//!   That keeps related limits together, but limits all under one tag never spread.
//! - **Seeds, not a node list.** Any reachable node will do; the client learns the rest. Slot migrations
//!   (`redis-cli --cluster reshard`) are followed through `MOVED` and `ASK` without a failed decision, and the
//!   counts move with their keys.
//! - **A failover heals by itself.** When a master dies, decisions on its keys fail (and `on_error` decides)
//!   until a replica takes over, about `cluster-node-timeout` later plus an election. Then they go back to
//!   Redis with no action from you. The new master has never run the scripts: its first call meets
//!   `NOSCRIPT`, and the one `EVAL` loads the script.
//! - **Replication is asynchronous.** Admissions the dead master acknowledged just before it died may not
//!   have reached its replica, and can be admitted again. This is Redis's guarantee, not the limiter's.
//! - **A dropped connection is retried within the deadline.** The cluster client sends a call again when its
//!   connection dropped mid-flight. If the first attempt had run, the call counts twice: at worst one
//!   admission fewer, never one more. A call past its deadline is never sent again.
//! - **One breaker per limiter.** While one master is unreachable, the breaker may open for every key. By
//!   default (`cluster-require-full-coverage yes`) the whole cluster refuses calls until the failover anyway.
//! - **Only Redis's clocks matter.** Each limit's time is the `TIME` of the master that holds it, so keep the
//!   Redis servers on NTP: a key moved to a master whose clock is ahead sees its admissions expire early by
//!   that much. Your nodes' clocks never matter.
//!
//! ### Stacked limits on a cluster
//!
//! On one server (and Sentinel's master) the limits of one call are one atomic script call over all their
//! keys. On a cluster, the keys of one slot go together, slot after slot. When one slot's limits refuse the
//! call, what the other slots charged is given back before the call returns; meanwhile those charges count,
//! so the cluster may briefly admit less than the limits allow, never more. Put related limits under one
//! hash tag (`{acme}:...`) to keep them in one script call.
//!
//! ## Sentinel
//!
//! With Redis Sentinel, name the master and give the Sentinels:
//!
//! ```no_run
//! use limiter_runtime::Limiter;
//!
//! # #[tokio::main] async fn main() -> Result<(), limiter_runtime::Error> {
//! let limiter = Limiter::builder()
//!     .redis_sentinel("mymaster", ["redis://10.0.0.1:26379/", "redis://10.0.0.2:26379/"])
//!     .connect()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! The first decision asks the Sentinels where the master is. A call that fails with an I/O error or
//! `READONLY` (the old master, demoted) makes the next call ask them again, so a failover heals as on a
//! cluster, with the same notes on `NOSCRIPT` and asynchronous replication.
//!
//! ## TLS and auth
//!
//! With the `tls` feature (`limiter-runtime = { version = "0.1", features = ["tls"] }`: rustls with the ring
//! provider), any Redis URL may be `rediss://`. An ACL user and its password go in the URL, as above.
//! [`redis_ca`](crate::LimiterBuilder::redis_ca) trusts your certificate authority instead of the system's,
//! and [`redis_client_certificate`](crate::LimiterBuilder::redis_client_certificate) presents a client
//! certificate to servers that ask for one (`tls-auth-clients yes`):
//!
//! ```no_run
//! # #[cfg(feature = "tls")]
//! # #[tokio::main] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use limiter_runtime::Limiter;
//!
//! let limiter = Limiter::builder()
//!     .redis("rediss://limiter:secret@redis.internal:6380/")
//!     .redis_ca(std::fs::read("/etc/redis/ca.pem")?)
//!     .redis_client_certificate(std::fs::read("client.pem")?, std::fs::read("client.key")?) // mutual TLS only
//!     .connect()
//!     .await?;
//! # Ok(()) }
//! # #[cfg(not(feature = "tls"))] fn main() {}
//! ```
//!
//! - **Cluster.** Give `rediss://user:password@...` seeds. Every node the client learns from the cluster is
//!   reached the same way, over TLS (nodes with `tls-cluster yes` announce their TLS ports).
//! - **Sentinel.** The Sentinels' URLs say how to reach them (`rediss://`, their user; one user for every
//!   Sentinel). To reach the master over TLS or as another user, name it by a URL whose host is its name:
//!   `.redis_sentinel("rediss://limiter:secret@mymaster/", ["rediss://sentinel:other@10.0.0.1:26379/"])`. The
//!   CA and the client certificate serve both, and a master named after a failover is reached the same way.
//! - **What cannot work is refused when the limiter is built:** `rediss://` without the feature; a CA, a
//!   certificate or a key that holds nothing readable; a CA or client certificate with no `rediss://` URL to
//!   use it (a URL missing its second `s` would send the password in the clear); Sentinels with different
//!   users. Errors and `Debug` never show a password.
//! - **What the server refuses** is an error of `connect()` and `ready()` at start-up, naming the cause; later,
//!   it shows as degraded decisions (by `on_error`), each within the deadline, with one warning naming the
//!   cause: a certificate no trusted CA signed (`invalid peer certificate: UnknownIssuer`), a wrong password,
//!   a missing client certificate, a TLS port spoken to in the clear. A plain Redis spoken to with `rediss://`
//!   never answers the handshake. A password the server accepts later (a user loaded late, a password
//!   rotated) heals by itself, like a restart.
//!
//! ## The environment
//!
//! [`LimiterBuilder::env`](crate::LimiterBuilder::env) reads these variables over what the builder set before
//! it: `Limiter::builder().env()?.build()` is the limiter the environment asks for, and the one
//! [`Limiter::current`](crate::Limiter::current) builds when none was installed is made the same way.
//!
//! | variable | sets | example |
//! |---|---|---|
//! | `LIMITER_REDIS_URL` | [`redis`](crate::LimiterBuilder::redis) | `rediss://user:password@10.0.0.5:6380/` |
//! | `LIMITER_REDIS_CA` | `redis_ca` (feature `tls`), from a PEM file | `/etc/redis/ca.pem` |
//! | `LIMITER_REDIS_CLIENT_CERT`, `LIMITER_REDIS_CLIENT_KEY` | `redis_client_certificate` (feature `tls`), from PEM files | `/etc/redis/client.pem` |
//! | `LIMITER_PREFIX` | [`prefix`](crate::LimiterBuilder::prefix) | `shop:` |
//! | `LIMITER_WINDOW` | [`window`](crate::LimiterBuilder::window), a duration as the attribute writes one (each number with its unit) | `10s`, `500ms`, `1m30s`, `1d` |
//! | `LIMITER_MAX` | [`max`](crate::LimiterBuilder::max), at least 1 | `100` |
//! | `LIMITER_MESSAGE` | [`message`](crate::LimiterBuilder::message) | `slow down` |
//! | `LIMITER_RESERVE` | the shares kept for the higher priorities, as `reserve = "..."` takes them | `critical 20%, high 30%`, `none` |
//! | `LIMITER_ALGORITHM` | the default algorithm | `token_bucket` |
//! | `LIMITER_ON_ERROR` | [`on_error`](crate::LimiterBuilder::on_error) | `open`, `closed`, `local` |
//! | `LIMITER_DEADLINE` | [`deadline`](crate::LimiterBuilder::deadline), at most 60 s (a call may wait that long while Redis hangs) | `20ms` |
//!
//! An unset or empty variable changes nothing. A value that cannot be read, or a file that cannot be used, is
//! an error naming the variable.
//!
//! ```no_run
//! use limiter_runtime::Limiter;
//!
//! # #[tokio::main] async fn main() -> Result<(), limiter_runtime::Error> {
//! // LIMITER_REDIS_URL=redis://10.0.0.5:6379/ LIMITER_MAX=50 ./my-service
//! Limiter::builder().prefix("my_service:").env()?.connect().await?.install()?;
//! # Ok(()) }
//! ```

// The links above name the `tls` feature's builder methods: without it, they read as text.
#![cfg_attr(not(feature = "tls"), allow(rustdoc::broken_intra_doc_links))]
