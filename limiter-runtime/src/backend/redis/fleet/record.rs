//! The admin door's record of changes in Redis: one list (one slot on a cluster), newest first, so that every
//! node's changes are listed together; each addition trims it to its bound in the same round trip, so it never
//! grows past the bound by more than the additions in flight.

use crate::backend::redis::{read_failed, RedisBackend};
use crate::error::Error;

/// The list's key.
const RECORD: &str = "limiter:changes";

impl RedisBackend {
    /// Adds `entry` at the head of the record, keeping the newest `kept`; within the patience.
    pub(crate) async fn record(&self, entry: &str, kept: usize) -> Result<(), Error> {
        let mut connection = self.establish().await.map_err(read_failed)?;
        let mut add = redis::pipe();
        add.lpush(RECORD, entry)
            .ignore()
            .ltrim(RECORD, 0, kept as isize - 1)
            .ignore();
        self.within_patience(add.query_async::<()>(&mut connection))
            .await
    }

    /// Returns the newest `kept` entries of the record, newest first; within the patience.
    pub(crate) async fn recorded(&self, kept: usize) -> Result<Vec<String>, Error> {
        let mut connection = self.establish().await.map_err(read_failed)?;
        let mut read = redis::cmd("LRANGE");
        read.arg(RECORD).arg(0).arg(kept as isize - 1);
        self.within_patience(read.query_async(&mut connection))
            .await
    }
}
