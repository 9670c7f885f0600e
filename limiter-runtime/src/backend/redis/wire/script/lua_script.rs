//! [`LuaScript`]: one Lua script of `scripts/`, called by its SHA-1, and sent with its source when Redis does
//! not have it. The bottom of the wire: it knows redis-rs's commands and nothing of this crate.

use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, RedisResult, Script, ServerErrorKind};

/// A Lua script of `scripts/`, called by its SHA-1 (EVALSHA) and, when Redis does not have it (NOSCRIPT:
/// after a restart, a failover or `SCRIPT FLUSH`), once more with its source (EVAL), which loads and runs it in
/// one atomic step, so that retry cannot meet NOSCRIPT again.
pub(crate) struct LuaScript {
    source: &'static str,
    sha1: String,
}

impl LuaScript {
    pub(crate) fn new(source: &'static str) -> LuaScript {
        LuaScript {
            source,
            sha1: Script::new(source).get_hash().to_owned(),
        }
    }

    /// Builds the command that runs the script on `keys` (its arguments to be added), by its SHA-1, for `calls`
    /// calls decided together.
    pub(crate) fn command(&self, keys: &[&str], calls: usize) -> Cmd {
        // Room from the start for the command, the SHA-1, the keys, a few numbers, and each call's cost, nonce
        // and group: grown one argument at a time, the buffers cost more than the rest of building it.
        let more = calls.saturating_sub(1);
        let key_bytes: usize = keys.iter().map(|key| key.len()).sum();
        let bytes = 192 + 32 * more + key_bytes.saturating_sub(keys.first().map_or(0, |k| k.len()));
        let mut cmd = Cmd::with_capacity(8 + keys.len() + 3 * more, bytes);
        cmd.arg("EVALSHA").arg(&self.sha1).arg(keys.len()).arg(keys);
        cmd
    }

    /// Runs `command` (made by [`command`](LuaScript::command)). Only NOSCRIPT is retried, with the script's
    /// source: any other failure may have been applied.
    pub(crate) async fn run<T: redis::FromRedisValue>(
        &'static self,
        connection: &mut impl ConnectionLike,
        command: &Cmd,
    ) -> RedisResult<T> {
        match command.query_async(connection).await {
            Err(error) if error.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                self.with_source(command).query_async(connection).await
            }
            result => result,
        }
    }

    /// Builds the command that loads the script (`SCRIPT LOAD`), so that the first call finds it.
    pub(crate) fn load_command(&self) -> Cmd {
        let mut load = redis::cmd("SCRIPT");
        load.arg("LOAD").arg(self.source);
        load
    }

    /// Returns `command` with the script's source in place of its SHA-1 (EVAL).
    fn with_source(&self, command: &Cmd) -> Cmd {
        let mut eval = Cmd::new();
        eval.arg("EVAL").arg(self.source);
        for arg in command.args_iter().skip(2) {
            if let redis::Arg::Simple(bytes) = arg {
                eval.arg(bytes);
            }
        }
        eval
    }

    /// Runs the script on `key` with `args`, as [`run`](LuaScript::run) does.
    pub(crate) async fn invoke<T: redis::FromRedisValue>(
        &'static self,
        connection: &mut impl ConnectionLike,
        key: &str,
        args: impl redis::ToRedisArgs,
    ) -> RedisResult<T> {
        let mut command = self.command(&[key], 1);
        command.arg(args);
        self.run(connection, &command).await
    }
}
