//! Watching a limits file by polling (no file-system events, so no dependency and the same on every
//! platform): every interval its modification time and length are looked at; when they change it is read
//! again, and handed on only when its content did change (an editor's save of the same bytes is no change).
//! A file that cannot be read (removed, say) is handed on as an error, once: keeping the previous good limits
//! meanwhile is the caller's business.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::disk::read_text;
use super::{LimitsError, LimitsFile};

/// What a look at the file found: its limits, or why they could not be read.
pub(crate) type Reading = Result<Read, LimitsError>;

/// A file read: its limits, and its text (what is pushed to the other nodes).
#[derive(Debug, Clone)]
pub(crate) struct Read {
    pub(crate) file: LimitsFile,
    pub(crate) text: Arc<str>,
}

impl std::ops::Deref for Read {
    type Target = LimitsFile;

    fn deref(&self) -> &LimitsFile {
        &self.file
    }
}

/// Reads the limits file at `path` now, then every `every` on `runtime`, and returns the receiver of each
/// reading that differs from the last one (the first reading is its value from the start), and the task's
/// handle. The task ends at its first look after every receiver is dropped (or when aborted).
///
/// A change that keeps both the file's modification time and its length is not seen (a file system whose
/// times are in whole seconds, written twice within one second, each time to the same length).
pub(crate) fn spawn(
    runtime: &Handle,
    path: PathBuf,
    every: Duration,
) -> (watch::Receiver<Reading>, JoinHandle<()>) {
    let mut probe = Probe {
        path,
        stamp: None,
        sent: None,
    };
    let stamp = probe.stamp();
    let first = probe.read(stamp).unwrap_or_else(|| {
        let text = read_text(&probe.path)?;
        let file = LimitsFile::parse(&probe.path, &text)?;
        Ok(Read {
            file,
            text: text.into(),
        })
    });
    let (sender, receiver) = watch::channel(first);
    let task = runtime.spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            if sender.is_closed() {
                return;
            }
            // The file system may be slow (a network one): looked at off the runtime's threads.
            let looked = tokio::task::spawn_blocking(move || {
                let reading = probe.look();
                (probe, reading)
            });
            let Ok((back, reading)) = looked.await else {
                return; // The runtime is shutting down.
            };
            probe = back;
            if let Some(reading) = reading {
                if sender.send(reading).is_err() {
                    return;
                }
            }
        }
    });
    (receiver, task)
}

/// A file's modification time and length: what says it may have changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    length: u64,
}

/// What the watcher remembers of the file.
#[derive(Debug)]
struct Probe {
    path: PathBuf,
    /// The stamp at the last look (`None`: the file could not be looked at).
    stamp: Option<Stamp>,
    /// The digest of the content last handed on; `None` after an error of the file itself (missing,
    /// unreadable), so that the same content back again is handed on.
    sent: Option<[u8; 20]>,
}

impl Probe {
    /// Returns the file's stamp now, if it can be looked at.
    fn stamp(&self) -> Option<Stamp> {
        let metadata = std::fs::metadata(&self.path).ok()?;
        Some(Stamp {
            modified: metadata.modified().ok(),
            length: metadata.len(),
        })
    }

    /// Returns a reading when the file changed since the last look.
    fn look(&mut self) -> Option<Reading> {
        let stamp = self.stamp();
        if stamp == self.stamp {
            return None;
        }
        self.read(stamp)
    }

    /// Reads the file, whose stamp is now `stamp`: returns its reading, unless its content is the one last
    /// handed on.
    fn read(&mut self, stamp: Option<Stamp>) -> Option<Reading> {
        self.stamp = stamp;
        let text = match read_text(&self.path) {
            Ok(text) => text,
            Err(error) => {
                self.sent = None;
                return Some(Err(error));
            }
        };
        let digest = sha1_smol::Sha1::from(text.as_bytes()).digest().bytes();
        if self.sent == Some(digest) {
            return None;
        }
        self.sent = Some(digest);
        let read = LimitsFile::parse(&self.path, &text).map(|file| Read {
            file,
            text: text.into(),
        });
        Some(read)
    }
}

#[cfg(test)]
mod tests {
    use std::fs::{self, File};
    use std::path::Path;
    use std::time::UNIX_EPOCH;

    use super::*;
    use crate::limits::error::Kind;

    /// The interval the tests poll at.
    const EVERY: Duration = Duration::from_millis(10);
    /// The longest a test waits for a reading that must come.
    const PATIENCE: Duration = Duration::from_secs(5);

    /// Writes `text` at `path` and sets its modification time to `second` seconds after the epoch, so that every
    /// write of a test changes the stamp, whatever the file system's clock granularity.
    fn write(path: &Path, text: &str, second: u64) {
        fs::write(path, text).unwrap();
        let file = File::options().write(true).open(path).unwrap();
        file.set_modified(UNIX_EPOCH + Duration::from_secs(second))
            .unwrap();
    }

    /// Waits for the next reading.
    async fn next(limits: &mut watch::Receiver<Reading>) -> Reading {
        let changed = tokio::time::timeout(PATIENCE, limits.changed()).await;
        changed
            .expect("a reading within 5 s")
            .expect("the watcher runs");
        limits.borrow_and_update().clone()
    }

    /// Returns the `max` of the first policy a reading has.
    fn max_of(reading: &Reading) -> Option<u64> {
        reading.as_ref().ok()?.policies.first()?.max
    }

    /// Checks the watcher through a file's life: read at once; a change handed on; the same bytes written again
    /// (a new modification time) not; a removal handed on as an error, once; the file back handed on again.
    #[tokio::test]
    async fn the_watcher_hands_on_each_change_of_content() {
        let dir = std::env::temp_dir().join(format!("limiter-limits-watch-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("limits.toml");
        write(&path, "[policies.a]\nmax = 1\n", 1);
        let (mut limits, _task) = spawn(&Handle::current(), path.clone(), EVERY);
        assert_eq!(max_of(&limits.borrow_and_update()), Some(1), "read at once");

        write(&path, "[policies.a]\nmax = 2\n", 2);
        assert_eq!(max_of(&next(&mut limits).await), Some(2), "a change");

        // The same bytes, saved again: a new stamp, the same content.
        write(&path, "[policies.a]\nmax = 2\n", 3);
        tokio::time::sleep(EVERY * 10).await;
        assert!(
            !limits.has_changed().unwrap(),
            "the same content is no change"
        );

        fs::remove_file(&path).unwrap();
        let removed = next(&mut limits).await.unwrap_err();
        assert_eq!(
            removed.kind(),
            Kind::Io(std::io::ErrorKind::NotFound),
            "{removed}"
        );
        tokio::time::sleep(EVERY * 10).await;
        assert!(
            !limits.has_changed().unwrap(),
            "a missing file is told once"
        );

        // Back with the content it had: handed on, as the last reading was an error.
        write(&path, "[policies.a]\nmax = 2\n", 4);
        assert_eq!(max_of(&next(&mut limits).await), Some(2), "restored");

        // A mistake is handed on with its position.
        write(&path, "[policies.a]\nmax = 0\n", 5);
        let refused = next(&mut limits).await.unwrap_err();
        assert_eq!(
            (refused.line(), refused.column()),
            (Some(2), Some(7)),
            "{refused}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// Checks that the watcher ends once no one receives its readings, and that a file missing from the start
    /// is an error from the start.
    #[tokio::test]
    async fn the_watcher_ends_without_receivers() {
        let path =
            std::env::temp_dir().join(format!("limiter-limits-none-{}.toml", std::process::id()));
        let (limits, task) = spawn(&Handle::current(), path, EVERY);
        assert!(
            limits.borrow().is_err(),
            "a missing file is an error from the start"
        );
        drop(limits);
        let ended = tokio::time::timeout(PATIENCE, task).await;
        assert!(matches!(ended, Ok(Ok(()))), "the task ends: {ended:?}");
    }
}
