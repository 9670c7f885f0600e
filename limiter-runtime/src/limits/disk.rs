//! Reading a limits file from disk: one regular file, at most [`MOST_BYTES`], UTF-8; never more than that
//! read into memory, whatever the file holds or becomes while it is read.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::error::{position, Kind, LimitsError};

/// The largest limits file read: 1 MiB, far above any real one (a policy is a few hundred bytes).
pub(crate) const MOST_BYTES: u64 = 1 << 20;

/// Returns the text of the file at `path`: refused, each with its sentence, when it is missing, not a regular
/// file (a directory), larger than [`MOST_BYTES`] (told by its length before any of it is read), or not UTF-8
/// (at the line and column of the first byte that is not).
pub(crate) fn read_text(path: &Path) -> Result<String, LimitsError> {
    let io_error =
        |error: io::Error| LimitsError::file(path, Kind::Io(error.kind()), sentence(&error));
    // Asked before opening: opening a FIFO would wait for a writer.
    let metadata = std::fs::metadata(path).map_err(io_error)?;
    if metadata.is_dir() {
        let problem = "is a directory, not a limits file";
        return Err(LimitsError::file(
            path,
            Kind::Io(io::ErrorKind::IsADirectory),
            problem,
        ));
    }
    if !metadata.is_file() {
        let problem = "is not a regular file (a device, a socket or a pipe), so not a limits file";
        return Err(LimitsError::file(
            path,
            Kind::Io(io::ErrorKind::InvalidInput),
            problem,
        ));
    }
    if metadata.len() > MOST_BYTES {
        return Err(too_large(path, metadata.len()));
    }
    let file = File::open(path).map_err(io_error)?;
    // The length said nothing of what the file holds now: read one byte past the most, never more.
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(MOST_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > MOST_BYTES {
        return Err(too_large(path, bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|error| {
        let valid = error.utf8_error().valid_up_to();
        let text = std::str::from_utf8(&error.as_bytes()[..valid]).unwrap_or("");
        let (line, column) = position(text, valid);
        let problem = format!(
            "the file is not UTF-8 text (byte {valid} starts no character): a limits file is TOML, which is \
             UTF-8"
        );
        LimitsError::file(path, Kind::NotUtf8, problem).at(line, column)
    })
}

/// Returns the error of a file of `length` bytes (at least), too large to be a limits file.
fn too_large(path: &Path, length: u64) -> LimitsError {
    let problem = format!(
        "is {length} bytes or more, larger than a limits file may be ({MOST_BYTES} bytes, 1 MiB); it was not \
         read: is this the limits file?"
    );
    LimitsError::file(path, Kind::TooLarge, problem)
}

/// Returns a sentence for an error opening or reading a file.
fn sentence(error: &io::Error) -> String {
    match error.kind() {
        io::ErrorKind::NotFound => "no such file: the limits file is missing".to_owned(),
        io::ErrorKind::PermissionDenied => "cannot be read: permission denied".to_owned(),
        _ => format!("cannot be read: {error}"),
    }
}
