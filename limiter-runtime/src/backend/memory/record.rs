//! The admin door's record of changes in this process's memory, as Redis keeps it for every node (see
//! `backend/redis/record.rs`): newest first, trimmed to its bound as it is added to.

use super::MemoryStore;

impl MemoryStore {
    /// Adds `entry` at the head of the record, keeping the newest `kept`.
    pub(crate) fn record(&self, entry: &str, kept: usize) {
        let mut record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        record.push_front(entry.to_owned());
        record.truncate(kept);
    }

    /// Returns the newest `kept` entries of the record, newest first.
    pub(crate) fn recorded(&self, kept: usize) -> Vec<String> {
        let record = self.record.lock().unwrap_or_else(|e| e.into_inner());
        record.iter().take(kept).cloned().collect()
    }
}
