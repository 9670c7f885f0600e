//! Assembles the scripts Redis runs from `scripts/`, at build time, into `$OUT_DIR/scripts/`, where
//! `src/backend/redis/wire/script/` includes them: `one_limit/<algorithm>.lua` for each algorithm, and each
//! template of `TEMPLATES` for every algorithm at once. The assembler, and the grammar of its sections and
//! markers, is `assembler/` (strict: a typo fails the build, naming the file and line). A copy of what it
//! writes is kept in `scripts/assembled/`, for review, which a test holds to what it writes now.

#[path = "assembler/mod.rs"]
mod assembler;

use std::path::{Path, PathBuf};
use std::{env, fs};

/// The algorithms, in the order of their codes (from 1), as `script::code` numbers them: each one's file is
/// `scripts/algorithms/<name>.lua`. The one list, `limiter_grammar::algorithm::NAMES`.
const ALGORITHMS: [&str; 7] = limiter_grammar::algorithm::NAMES;

/// The templates of `scripts/` assembled for every algorithm at once.
const TEMPLATES: [&str; 7] = [
    "groups",
    "give_back",
    "lease",
    "ban",
    "pause",
    "renew",
    "inspect",
];

fn main() {
    let scripts = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap()).join("scripts");
    // What the scripts are assembled from (not `scripts/assembled/`, the copy a test writes).
    for source in ["algorithms", "parts"] {
        println!("cargo::rerun-if-changed={}", scripts.join(source).display());
    }
    let sources = Directory(&scripts);
    for name in assembler::Sources::list(&sources, "") {
        println!("cargo::rerun-if-changed={}", scripts.join(name).display());
    }
    let assembled = assembler::assemble(&sources, &ALGORITHMS, &TEMPLATES)
        .unwrap_or_else(|error| panic!("the scripts cannot be assembled: {error}"));
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("scripts");
    if out.exists() {
        fs::remove_dir_all(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()));
    }
    for script in assembled {
        let path = out.join(&script.path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, script.text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// `scripts/`, on disk.
struct Directory<'a>(&'a Path);

impl assembler::Sources for Directory<'_> {
    fn read(&self, path: &str) -> Option<String> {
        fs::read_to_string(self.0.join(path)).ok()
    }

    fn list(&self, directory: &str) -> Vec<String> {
        let directory = self.0.join(directory);
        let entries =
            fs::read_dir(&directory).unwrap_or_else(|e| panic!("{}: {e}", directory.display()));
        entries
            .map(|entry| entry.unwrap_or_else(|e| panic!("{}: {e}", directory.display())))
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_file()))
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect()
    }
}
