//! The runtime's top-level modules import one another without a circle, and in layers: this test reads every
//! `crate::` path in `limiter-runtime/src` (outside `#[cfg(test)] mod tests`, comments and the guide), maps the
//! names `lib.rs` re-exports to the modules they come from, and fails on a cycle, naming it, or on an import
//! that goes down from a layer to one above it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, bottom first: a module may import only from its own layer and those below.
const LAYERS: &[&[&str]] = &[
    &["algorithm", "clock", "key", "parse", "policy", "budget"],
    &[
        "decision",
        "error",
        "sharded",
        "calendar",
        "rule",
        "overrides",
    ],
    &["call"],
    &["backend", "observe", "watch"],
    &["pipeline"],
    &["limiter"],
    &["edge", "private"],
];

fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// What a source imports through `crate::`, as first path segments: `crate::a::B`, `crate::{a, B}`.
fn imported(source: &str) -> Vec<String> {
    let code = source
        .split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap()
        .lines()
        .map(|line| line.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The top level of a use group: `{a::b, C, d::{e, f}}`.
            let (mut depth, mut start) = (0, 0);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.push(first_word(&group[start..i]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(first_word(&group[start..i]));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.push(first_word(rest));
        }
    }
    found.retain(|word| !word.is_empty());
    found
}

fn first_word(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Each top-level module's imports of the others.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    // `pub use crate::module::{Name, ...};` at the root: a name's module.
    let mut home = BTreeMap::new();
    for line in lib.split("pub use crate::").skip(1) {
        let module = first_word(line);
        let names = line.split(';').next().unwrap();
        for name in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() && name != module {
                home.insert(name.to_owned(), module.clone());
            }
        }
    }
    let mut files = Vec::new();
    sources(&src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .map(|file| top(&src, file))
        .filter(|m| m != "lib" && m != "guide")
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let from = top(&src, file);
        if !modules.contains(&from) {
            continue;
        }
        for word in imported(&std::fs::read_to_string(file).unwrap()) {
            let to = home.get(&word).cloned().unwrap_or(word);
            if to != from && modules.contains(&to) {
                graph.entry(from.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// The top-level module `file` belongs to.
fn top(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_owned()
}

fn layer(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|layer| layer.contains(&module))
        .unwrap_or_else(|| panic!("the module `{module}` is in no layer of this test: add it"))
}

#[test]
fn the_runtimes_modules_import_downwards_only() {
    let graph = graph();
    assert!(
        graph.contains_key("pipeline") && graph.contains_key("backend"),
        "{graph:?}"
    );
    for (from, imports) in &graph {
        for to in imports {
            assert!(
                layer(to) <= layer(from),
                "`{from}` imports `{to}`, a layer above it: {graph:#?}"
            );
        }
    }
    // Within a layer, no circle either.
    for (from, imports) in &graph {
        for to in imports {
            let back = graph
                .get(to)
                .is_some_and(|theirs| reaches(&graph, to, from, theirs));
            assert!(
                !back,
                "`{from}` and `{to}` import each other, directly or not"
            );
        }
    }
}

/// Whether `from` (importing `imports`) reaches `target`.
fn reaches(
    graph: &BTreeMap<String, BTreeSet<String>>,
    from: &str,
    target: &str,
    imports: &BTreeSet<String>,
) -> bool {
    let mut seen = BTreeSet::from([from.to_owned()]);
    let mut stack: Vec<&String> = imports.iter().collect();
    while let Some(next) = stack.pop() {
        if next == target {
            return true;
        }
        if seen.insert(next.clone()) {
            stack.extend(graph.get(next).into_iter().flatten());
        }
    }
    false
}

#[test]
fn imports_are_read_from_use_groups_too() {
    let found = imported("use crate::{a::B, C, d::{e, f}};\nuse crate::g::H; // crate::i\n");
    assert_eq!(found, ["a", "C", "d", "g"]);
}
