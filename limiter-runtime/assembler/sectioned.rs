//! A file of `scripts/algorithms/`, read into its sections: a line `--@<section>` opens one, and it runs to the
//! next; the lines before the first are the file's comment.

use std::collections::BTreeMap;

use super::contract::Contract;
use super::Error;

/// One section of a file.
#[derive(Debug)]
pub(super) struct Section {
    /// The line of its `--@<section>` (from 1): its text starts on the next.
    pub(super) line: usize,
    /// Its text, without the lines blank at its end; each line ends with a newline ("" when it has none).
    pub(super) text: String,
}

/// A file of `scripts/algorithms/`, read.
#[derive(Debug)]
pub(super) struct Sectioned {
    /// Its path under `scripts/`.
    pub(super) path: String,
    /// Its number of lines.
    pub(super) lines: usize,
    /// Its sections, by name.
    pub(super) sections: BTreeMap<String, Section>,
}

impl Sectioned {
    /// Reads `text`, the file `scripts/<path>`, into its sections, each named in `contract`.
    pub(super) fn read(path: &str, text: &str, contract: &Contract) -> Result<Self, Error> {
        let mut sections = BTreeMap::new();
        let mut open: Option<(String, usize, Vec<&str>)> = None;
        let mut lines = 0;
        for (index, line) in text.lines().enumerate() {
            let at = index + 1;
            lines = at;
            let error = |message: String| Error::new(path, at, message);
            let Some(name) = line.trim_start().strip_prefix("--@") else {
                match &mut open {
                    Some((_, _, body)) => body.push(line),
                    None if line.trim().is_empty() => {}
                    None if line.trim_start().starts_with("-->") => {
                        return Err(error(format!(
                            "`{}`: a marker before the first `--@<section>` line is in no section",
                            line.trim()
                        )))
                    }
                    None if line.trim_start().starts_with("--") => {}
                    None => {
                        return Err(error(format!(
                            "`{}`: code before the first `--@<section>` line is in no section",
                            line.trim()
                        )))
                    }
                }
                continue;
            };
            if !line.starts_with("--@") || name.trim() != name {
                return Err(error(format!(
                    "`{line}`: expected `--@{}` alone on its line, from its start",
                    name.trim()
                )));
            }
            if !contract.knows(name) {
                return Err(error(format!(
                    "`--@{name}` names no section: expected one of {} (declared in scripts/{})",
                    contract.names(),
                    super::contract::PATH
                )));
            }
            if let Some((name, line, body)) = open.take() {
                sections.insert(name, Section::new(line, &body));
            }
            if let Some(first) = sections.get(name).map(|section| section.line) {
                return Err(error(format!(
                    "a second `--@{name}` section (the first at line {first})"
                )));
            }
            open = Some((name.to_owned(), at, Vec::new()));
        }
        if let Some((name, line, body)) = open {
            sections.insert(name, Section::new(line, &body));
        }
        Ok(Self {
            path: path.to_owned(),
            lines,
            sections,
        })
    }
}

impl Section {
    /// The section opened at `line`, of `body`'s lines.
    fn new(line: usize, body: &[&str]) -> Self {
        let text = match body.join("\n").trim_end() {
            "" => String::new(),
            text => format!("{text}\n"),
        };
        Self { line, text }
    }
}
