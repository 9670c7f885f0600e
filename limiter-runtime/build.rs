//! Assembles the scripts Redis runs from `scripts/`, at build time, into `$OUT_DIR/scripts/`.
//!
//! Each algorithm's Redis side is written once, in `scripts/algorithms/<name>.lua`, as sections: a line
//! `--@<section>` opens one (`read`, `fits`, `take`, `refused`, `retry`, `write`, `give_back`, `room`, `peek`), and
//! it runs to the next. A template (`scripts/<name>.lua`, `scripts/parts/<name>.lua`) names what goes where
//! with a line `--> <what>`, replaced by (each line keeping the marker's indentation):
//! - `--> <section>`: that section of the algorithm being assembled (nothing if it has none);
//! - `--> <file>.<section>`: a section of `scripts/algorithms/<file>.lua` (kin share one: `queue.read`);
//! - `--> part <name>`: `scripts/parts/<name>.lua`, assembled for the same algorithm;
//! - `--> each <section>: part <name>`: for each algorithm that has `<section>`, in the order of their codes,
//!   a branch `if code == <its code> then ... elseif ...` holding the part assembled for it.
//!
//! Out come, as `src/backend/redis/script/` includes them: `one_limit/<algorithm>.lua` (`one_limit.lua` for
//! each algorithm), and each template of `scripts/` named in `TEMPLATES`, for every algorithm at once.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

/// The algorithms, in the order of their codes (from 1), as `script::code` numbers them.
const ALGORITHMS: [&str; 7] = [
    "sliding_log",
    "fixed_window",
    "sliding_window",
    "token_bucket",
    "leaky_bucket",
    "in_flight",
    "calendar",
];

/// The templates assembled for every algorithm at once.
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
    println!("cargo::rerun-if-changed={}", scripts.display());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("scripts");
    fs::create_dir_all(out.join("one_limit")).unwrap();
    let sources = Sources { scripts: &scripts };
    for algorithm in ALGORITHMS {
        let text = sources.assemble(&sources.file("one_limit.lua"), Some(algorithm));
        fs::write(out.join(format!("one_limit/{algorithm}.lua")), text).unwrap();
    }
    for template in TEMPLATES {
        let text = sources.assemble(&sources.file(&format!("{template}.lua")), None);
        fs::write(out.join(format!("{template}.lua")), text).unwrap();
    }
}

struct Sources<'a> {
    scripts: &'a Path,
}

impl Sources<'_> {
    /// The text of `scripts/<path>`.
    fn file(&self, path: &str) -> String {
        let path = self.scripts.join(path);
        fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Section `name` of `scripts/algorithms/<file>.lua`, if it has one.
    fn section(&self, file: &str, name: &str) -> Option<String> {
        let text = self.file(&format!("algorithms/{file}.lua"));
        let mut lines = text
            .lines()
            .skip_while(|line| line.trim() != format!("--@{name}"));
        lines.next()?;
        let body: Vec<&str> = lines.take_while(|line| !line.starts_with("--@")).collect();
        let body = body.join("\n");
        Some(match body.trim_end() {
            "" => String::new(),
            text => format!("{text}\n"),
        })
    }

    /// `template` with each of its markers replaced, for `algorithm`.
    fn assemble(&self, template: &str, algorithm: Option<&str>) -> String {
        let mut out = String::new();
        for line in template.lines() {
            let indent = &line[..line.len() - line.trim_start().len()];
            let Some(what) = line.trim().strip_prefix("--> ") else {
                out.push_str(line);
                out.push('\n');
                continue;
            };
            let text = self.expand(what.trim(), algorithm);
            for inner in text.lines() {
                match inner.is_empty() {
                    true => out.push('\n'),
                    false => writeln!(out, "{indent}{inner}").unwrap(),
                }
            }
        }
        out
    }

    /// What the marker `--> <what>` stands for, for `algorithm`.
    fn expand(&self, what: &str, algorithm: Option<&str>) -> String {
        if let Some(part) = what.strip_prefix("part ") {
            let text = self.file(&format!("parts/{part}.lua"));
            return self.assemble(&text, algorithm);
        }
        if let Some(each) = what.strip_prefix("each ") {
            let (section, part) = each
                .split_once(": ")
                .expect("`each <section>: part <name>`");
            let mut text = String::new();
            for (code, name) in ALGORITHMS.iter().enumerate() {
                if self.section(name, section).is_none() {
                    continue;
                }
                let keyword = if text.is_empty() { "if" } else { "elseif" };
                writeln!(text, "{keyword} code == {} then", code + 1).unwrap();
                for line in self.expand(part, Some(name)).lines() {
                    match line.is_empty() {
                        true => text.push('\n'),
                        false => writeln!(text, "  {line}").unwrap(),
                    }
                }
            }
            text.push_str("end\n");
            return text;
        }
        let section = match what.split_once('.') {
            Some((file, section)) => self.section(file, section),
            None => {
                let algorithm = algorithm.unwrap_or_else(|| panic!("`--> {what}` outside `each`"));
                self.section(algorithm, what)
            }
        };
        let text = section.unwrap_or_default();
        // A section may name a kin's in turn.
        self.assemble(&text, algorithm)
    }
}
