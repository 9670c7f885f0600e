//! Operators' bans in Redis: written at a limit's block key ([`script::block_key`]) by `scripts/ban.lua`,
//! or lifted, each with an announcement on the overrides' channel (every node then forgets its denials, and
//! asks Redis at its next call of the key); listed by scanning each master for block keys.

use std::future::Future;

use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, Value};

use crate::backend::redis::wire::connection::Connection;
use crate::backend::redis::wire::script;
use crate::backend::redis::{read_failed, RedisBackend};
use crate::call::CallLimit;
use crate::error::Error;
use crate::outbound::rate::{self, Move, Moved};
use crate::overrides::OVERRIDES;
use crate::penalty::Block;
use crate::Penalty;

/// What a ban or an unban announces on the overrides' channel, then the limit's store key: every node forgets
/// what Redis told it of the key (a block it holds may have been replaced or lifted). The text is the one
/// runtimes of the version before bans on any limit announced unbans with: they understand it too.
pub(in crate::backend::redis) const REASK: &str = "lift\n";

/// What a pause announces on the overrides' channel, then its length (µs) and the limit's store key: every
/// node notes the pause, so that none of its calls waiting for their turn goes before it ends.
pub(in crate::backend::redis) const PAUSE: &str = "pause\n";

/// Keys a scan asks each master for at a time, and blocks read in one pipeline.
const SCAN_COUNT: usize = 1_000;

impl RedisBackend {
    /// Bans `limit`'s key for `length` µs (keeping the offences `penalty` counts), within the patience.
    pub(crate) async fn ban(
        &self,
        limit: &CallLimit<'_>,
        length: u64,
        penalty: &Penalty,
    ) -> Result<(), Error> {
        let mut connection = self.establish().await.map_err(read_failed)?;
        let block = script::block_key(&limit.key);
        let mut cmd = script::BAN.command(&[&block], 1);
        cmd.arg(&*script::clock(self.test_now()));
        cmd.arg(length).arg(penalty.cap_micros());
        let banned = script::BAN.run::<Vec<i64>>(&mut connection, &cmd);
        self.within_patience(banned).await?;
        self.announce_reask(&mut connection, &limit.key).await
    }

    /// Pauses `limit`'s key for `length` µs (none for 0), as an upstream that answered `status` asked, and
    /// moves the rate the fleet learned for it by `moved` (a rate lowered re-spaces its line, a leaky
    /// bucket's), then tells every node ([`PAUSE`]); returns what it made of the answer.
    pub(crate) async fn pause(
        &self,
        limit: &CallLimit<'_>,
        length: u64,
        status: u16,
        moved: Move,
    ) -> Result<Moved, Error> {
        let mut connection = self.establish().await.map_err(read_failed)?;
        let block = script::block_key(&limit.key);
        let line = limit.algorithm == crate::Algorithm::LeakyBucket;
        let keys: &[&str] = match line {
            true => &[&block, limit.key.as_str()],
            false => &[&block],
        };
        let mut cmd = script::PAUSE.command(keys, 1);
        cmd.arg(&*script::clock(self.test_now()));
        cmd.arg(length).arg(status);
        cmd.arg(moved.keep).arg(moved.step).arg(moved.ceiling);
        cmd.arg(rate::LEAST)
            .arg(rate::REMEMBERED.as_millis() as u64);
        cmd.arg(moved.spaced_for).arg(limit.terms.max);
        let paused = script::PAUSE.run::<(u64, u64, u32, u32)>(&mut connection, &cmd);
        let (now, until, learned, from) = self.within_patience(paused).await?;
        let left = until.saturating_sub(now);
        let mut announce = redis::cmd("PUBLISH");
        announce.arg(OVERRIDES).arg(format!(
            "{PAUSE}{left}:{learned}:{from}:{now}\n{}",
            &*limit.key
        ));
        let _: Value = self
            .within_patience(announce.query_async(&mut connection))
            .await?;
        self.forget_denials();
        Ok(Moved {
            left,
            rate: learned,
            from,
            at: now,
        })
    }

    /// Tells every node, this one first, to forget what Redis told it of `key` ([`REASK`]).
    async fn announce_reask(&self, connection: &mut Connection, key: &str) -> Result<(), Error> {
        let mut announce = redis::cmd("PUBLISH");
        announce.arg(OVERRIDES).arg(format!("{REASK}{key}"));
        let _: Value = self
            .within_patience(announce.query_async(connection))
            .await?;
        self.forget_denials();
        Ok(())
    }

    /// Lifts `limit`'s key's block, if it has one, and tells every node; whether it had one.
    pub(crate) async fn unban(&self, limit: &CallLimit<'_>) -> Result<bool, Error> {
        let mut connection = self.establish().await.map_err(read_failed)?;
        let mut lift = redis::cmd("DEL");
        lift.arg(script::block_key(&limit.key));
        let lifted: u64 = self
            .within_patience(lift.query_async(&mut connection))
            .await?;
        self.announce_reask(&mut connection, &limit.key).await?;
        Ok(lifted > 0)
    }

    /// Reads `limit`'s key's block, if Redis holds one.
    pub(crate) async fn block(&self, limit: &CallLimit<'_>) -> Result<Option<Block>, Error> {
        let mut connection = self.establish().await.map_err(read_failed)?;
        let mut get = redis::cmd("GET");
        get.arg(script::block_key(&limit.key));
        let text: Option<String> = self
            .within_patience(get.query_async(&mut connection))
            .await?;
        Ok(text.as_deref().and_then(Block::parse))
    }

    /// Returns every block key in Redis and what it holds (the store key it blocks, and its block), and Redis's "now"
    /// (µs): each master scanned.
    pub(crate) async fn blocks(&self) -> Result<(Vec<(String, Block)>, u64), Error> {
        let connection = self.establish().await.map_err(read_failed)?;
        let now = match self.test_now() {
            Some(now) => now,
            None => {
                let mut connection = connection.clone();
                let (seconds, micros): (u64, u64) = self
                    .within_patience(redis::cmd("TIME").query_async(&mut connection))
                    .await?;
                seconds * 1_000_000 + micros
            }
        };
        let keys = self.within_patience(block_keys(connection.clone())).await?;
        let mut blocks = Vec::with_capacity(keys.len());
        // A server's blocks are read a thousand at a time, each thousand in one pipeline; a cluster's one at a
        // time (a pipeline of its keys would cross slots).
        let size = if connection.is_cluster() {
            1
        } else {
            SCAN_COUNT
        };
        for chunk in keys.chunks(size) {
            let mut read = redis::pipe();
            for key in chunk {
                read.get(key);
            }
            let mut connection = connection.clone();
            let texts: Vec<Option<String>> = self
                .within_patience(read.query_async(&mut connection))
                .await?;
            let found = chunk.iter().zip(texts).filter_map(|(key, text)| {
                let block = Block::parse(&text?)?;
                Some((script::blocked_key(key)?, block))
            });
            blocks.extend(found);
        }
        Ok((blocks, now))
    }
}

/// Lists every key ending as a block key, from each master (a server: itself).
async fn block_keys(connection: Connection) -> redis::RedisResult<Vec<String>> {
    let pattern = format!("*{}*", script::BLOCK_SUFFIX);
    match connection {
        Connection::Server(server) => {
            scan(&pattern, |cmd| {
                let mut server = server.clone();
                async move { cmd.query_async(&mut server).await }
            })
            .await
        }
        Connection::Cluster(cluster) => {
            let mut cluster = cluster.connection().await?;
            let mut nodes = redis::cmd("CLUSTER");
            nodes.arg("NODES");
            let text: String = nodes.query_async(&mut cluster).await?;
            let mut keys = Vec::new();
            for (host, port) in masters(&text) {
                let at = RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port });
                let found = scan(&pattern, |cmd| {
                    let (mut cluster, at) = (cluster.clone(), at.clone());
                    async move { cluster.route_command(cmd, at).await }
                })
                .await?;
                keys.extend(found);
            }
            Ok(keys)
        }
    }
}

/// Returns the keys matching `pattern` on one node, the whole scan, each step's command sent by `send`.
async fn scan<F: Future<Output = redis::RedisResult<Value>>>(
    pattern: &str,
    mut send: impl FnMut(Cmd) -> F,
) -> redis::RedisResult<Vec<String>> {
    let mut keys = Vec::new();
    let mut cursor = 0_u64;
    loop {
        let mut cmd = redis::cmd("SCAN");
        cmd.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(SCAN_COUNT);
        let (next, found): (u64, Vec<String>) = redis::from_redis_value(send(cmd).await?)?;
        keys.extend(found);
        if next == 0 {
            return Ok(keys);
        }
        cursor = next;
    }
}

/// Parses the masters `CLUSTER NODES` lists: their hosts and ports.
fn masters(nodes: &str) -> Vec<(String, u16)> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let (address, flags) = (fields.get(1)?, fields.get(2)?);
            if !flags.split(',').any(|flag| flag == "master") || flags.contains("fail") {
                return None;
            }
            let address = address.split('@').next()?;
            let (host, port) = address.rsplit_once(':')?;
            Some((host.to_owned(), port.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::masters;

    #[test]
    fn masters_are_read_from_cluster_nodes() {
        let nodes = "07c3 127.0.0.1:30004@31004 slave e7d1 0 1 4 connected\n\
                     67ed 127.0.0.1:30002@31002 master - 0 1 2 connected 5461-10922\n\
                     e7d1 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460\n\
                     a1b2 127.0.0.1:30003@31003 master,fail - 0 0 3 disconnected\n";
        assert_eq!(
            masters(nodes),
            [
                ("127.0.0.1".to_owned(), 30002),
                ("127.0.0.1".to_owned(), 30001)
            ]
        );
    }
}
