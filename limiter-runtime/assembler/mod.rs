//! The assembler of the scripts Redis runs: it places each algorithm's sections (`scripts/algorithms/`) in the
//! templates of `scripts/` and `scripts/parts/`, strictly, so that a typo fails the build, naming the file and
//! the line. `build.rs` runs it (into `$OUT_DIR/scripts/`); the crate's tests include it, to test it with
//! made-up sources and to check that the scripts kept in `scripts/assembled/` are what it assembles now.
//!
//! Each algorithm's Redis side is written once, in `scripts/algorithms/<algorithm>.lua`, as sections: a line
//! `--@<section>` opens one, and it runs to the next. Which sections there are, which every algorithm must
//! have, what each may read and what it must leave, `scripts/algorithms/README.md` declares; the assembler
//! reads it (see [`contract`]). A template (`scripts/<name>.lua`, `scripts/parts/<name>.lua`) names what goes
//! where with a marker, a line `--> <what>`, replaced by (each line keeping the marker's indentation):
//! - `--> <section>`: that section of the algorithm being assembled (nothing if it has none, as an optional
//!   section may be);
//! - `--> <file>.<section>`: that section of `scripts/algorithms/<file>.lua`, which must have it (kin share
//!   one: `--> queue.read`), assembled for the algorithm being assembled;
//! - `--> part <name>`: `scripts/parts/<name>.lua`, assembled for the same algorithm;
//! - `--> each <section>: <what>`: for each algorithm that has `<section>`, in the order of their codes, a
//!   branch `if code == <its code> then -- <its name>` (then `elseif`), holding `--> <what>` assembled for it.
//!
//! Anything else on a line that starts with `-->` or `--@` is an error, as are an unknown section, part or
//! file, a required section an algorithm lacks, a section that does not assign what it must leave, a part
//! that places itself, and a marker in a script of `scripts/` that is not assembled.
//!
//! Out come `one_limit/<algorithm>.lua` (`one_limit.lua` assembled for each algorithm) and each template
//! named (`<template>.lua`, for every algorithm at once).

mod contract;
mod error;
mod expand;
mod marker;
mod sectioned;
#[cfg(test)]
mod tests;

pub(crate) use self::error::Error;

/// Where the assembler reads its sources: `scripts/` (a directory for `build.rs`, a map for the tests).
pub(crate) trait Sources {
    /// Returns the text of `scripts/<path>`, or `None` when there is no such file.
    fn read(&self, path: &str) -> Option<String>;

    /// Returns the names of the files (not directories) of `scripts/<directory>` (`""`: `scripts/` itself),
    /// in any order.
    fn list(&self, directory: &str) -> Vec<String>;
}

/// One assembled script: its path under the output directory (`groups.lua`, `one_limit/token_bucket.lua`)
/// and its text, as Redis runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Script {
    /// Its path under the output directory.
    pub(crate) path: String,
    /// Its text.
    pub(crate) text: String,
}

/// The template assembled once for each algorithm (`one_limit/<algorithm>.lua`).
const ONE_LIMIT: &str = "one_limit";

/// Assembles every script from `sources`: `one_limit.lua` for each of `algorithms` (named in the order of their
/// codes, from 1), then each of `templates` (names of `scripts/<template>.lua`) for all of them at once. Checks
/// every source first, those it does not assemble too. Returns the first error met.
pub(crate) fn assemble(
    sources: &impl Sources,
    algorithms: &[&str],
    templates: &[&str],
) -> Result<Vec<Script>, Error> {
    let assembler = expand::Assembler::new(sources, algorithms, templates)?;
    let mut scripts = Vec::new();
    for algorithm in algorithms {
        scripts.push(Script {
            path: format!("{ONE_LIMIT}/{algorithm}.lua"),
            text: assembler.template(ONE_LIMIT, Some(algorithm))?,
        });
    }
    for template in templates {
        scripts.push(Script {
            path: format!("{template}.lua"),
            text: assembler.template(template, None)?,
        });
    }
    Ok(scripts)
}
