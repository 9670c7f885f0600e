//! The error of a limits file: where in it (file, line, column) and what was expected there.

use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// A limits file that could not be read: its path as given, where in it the mistake is (1-based line and
/// column, counted in characters), and what was expected there.
///
/// Its `Display` is one sentence, `limits.toml:12:7: unknown field `maxx` in policy "search"; expected one
/// of: ...`, or, for a file that could not be read at all, `limits.toml: no such file`. Only the first
/// mistake of a file is told (in the file's order): fix it and read again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitsError {
    path: PathBuf,
    /// Line and column, 1-based; `None` for a file that could not be read.
    position: Option<(usize, usize)>,
    problem: String,
    kind: Kind,
}

/// What kind of mistake a [`LimitsError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The file could not be opened or read (missing, a directory, no permission).
    Io(io::ErrorKind),
    /// Larger than a limits file may be.
    TooLarge,
    /// Not UTF-8 text.
    NotUtf8,
    /// Not TOML.
    Syntax,
    /// TOML, but not limits: an unknown field, a wrong type, a value the grammar refuses.
    Limits,
}

impl LimitsError {
    /// Returns the path of the file, as it was given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Returns the line of the mistake (1-based), if it is in the text.
    pub fn line(&self) -> Option<usize> {
        self.position.map(|(line, _)| line)
    }

    /// Returns the column of the mistake (1-based, in characters), if it is in the text.
    pub fn column(&self) -> Option<usize> {
        self.position.map(|(_, column)| column)
    }

    /// Returns what is wrong, without the path and position.
    pub fn problem(&self) -> &str {
        &self.problem
    }

    /// Returns what kind of mistake it is.
    #[cfg(test)]
    pub(crate) fn kind(&self) -> Kind {
        self.kind
    }

    /// Creates the error of a file that cannot be read as a whole.
    pub(crate) fn file(path: &Path, kind: Kind, problem: impl Into<String>) -> LimitsError {
        LimitsError {
            path: path.to_owned(),
            position: None,
            problem: problem.into(),
            kind,
        }
    }
}

impl LimitsError {
    /// Returns it placed at `line` and `column` (1-based) of the file.
    pub(crate) fn at(mut self, line: usize, column: usize) -> LimitsError {
        self.position = Some((line, column));
        self
    }
}

impl fmt::Display for LimitsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Some((line, column)) => {
                write!(
                    f,
                    "{}:{line}:{column}: {}",
                    self.path.display(),
                    self.problem
                )
            }
            None => write!(f, "{}: {}", self.path.display(), self.problem),
        }
    }
}

impl std::error::Error for LimitsError {}

/// A file's text and path: what places an error at a byte offset of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Source<'a> {
    pub(crate) path: &'a Path,
    pub(crate) text: &'a str,
}

impl Source<'_> {
    /// Returns the error `problem` at the start of the bytes `at` of the text.
    pub(crate) fn error(
        &self,
        at: &Range<usize>,
        kind: Kind,
        problem: impl Into<String>,
    ) -> LimitsError {
        LimitsError {
            path: self.path.to_owned(),
            position: Some(position(self.text, at.start)),
            problem: problem.into(),
            kind,
        }
    }

    /// Returns the error of a value or key at `at` that is TOML but not limits.
    pub(crate) fn limits(&self, at: &Range<usize>, problem: impl Into<String>) -> LimitsError {
        self.error(at, Kind::Limits, problem)
    }

    /// Returns the bytes of the text at `at` (empty where `at` is not in it).
    pub(crate) fn slice(&self, at: &Range<usize>) -> &str {
        self.text.get(at.clone()).unwrap_or("")
    }
}

/// Returns the 1-based line and column (in characters) of the byte `offset` of `text` (clamped to the text, and
/// back to the start of the character it falls in).
pub(crate) fn position(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that positions are 1-based, counted in characters, and safe past the end or inside a character.
    #[test]
    fn positions_are_lines_and_characters() {
        let text = "a = 1\nbé = 2\n";
        assert_eq!(position(text, 0), (1, 1));
        assert_eq!(position(text, 4), (1, 5));
        assert_eq!(position(text, 6), (2, 1));
        // `é` is two bytes, one column: ` = 2` starts at column 3.
        assert_eq!(position(text, 9), (2, 3));
        assert_eq!(position(text, 8), (2, 2), "inside `é`: its start");
        assert_eq!(position(text, 1_000), (3, 1), "past the end: the end");
    }
}
