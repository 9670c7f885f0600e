//! [`Error`]: why the scripts cannot be assembled, at which file and line.

use std::fmt;

/// Why the scripts cannot be assembled: what is wrong, where, and through which markers the assembler got
/// there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    /// The file, under `scripts/`, and the line (from 1; 0 for the file as a whole).
    at: (String, usize),
    /// What is wrong, and what was expected.
    message: String,
    /// The markers that placed the text at fault, innermost first.
    placed_by: Vec<String>,
}

impl Error {
    /// An error at `line` (from 1; 0 for the whole file) of `scripts/<path>`.
    pub(super) fn new(path: &str, line: usize, message: impl Into<String>) -> Self {
        Self {
            at: (path.to_owned(), line),
            message: message.into(),
            placed_by: Vec::new(),
        }
    }

    /// Adds the marker that placed the text at fault: `line` of `scripts/<path>`, assembled for `algorithm`.
    pub(super) fn placed_by(mut self, path: &str, line: usize, algorithm: Option<&str>) -> Self {
        self.placed_by.push(match algorithm {
            Some(algorithm) => format!("scripts/{path}:{line}, for {algorithm}"),
            None => format!("scripts/{path}:{line}"),
        });
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (path, line) = &self.at;
        match line {
            0 => write!(f, "scripts/{path}: {}", self.message)?,
            line => write!(f, "scripts/{path}:{line}: {}", self.message)?,
        }
        for marker in &self.placed_by {
            write!(f, "\n  placed by the marker at {marker}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
