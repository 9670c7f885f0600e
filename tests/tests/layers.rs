//! The runtime reads top-down: each of its modules uses only modules of its own layer or the layers below,
//! and no modules use each other in a circle. Read from the sources (`use crate::...` and `crate::` paths,
//! the root's re-exports resolved to the modules that define them), so that a new import that breaks the
//! layering fails here, naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The runtime's modules, bottom up: a module may use its own layer's and those below. The one table of the
/// runtime's layers (the README's layout and `guide` follow it).
const LAYERS: [&[&str]; 10] = [
    // Keys, algorithms and penalties, the clock, parsing and policy names; Tokio's budget.
    &[
        "algorithm",
        "budget",
        "clock",
        "clock_gate",
        "key",
        "parse",
        "penalty",
        "policy",
    ],
    // What a decision is, the errors, the calendar; sharded key maps.
    &["calendar", "decision", "error", "sharded"],
    // Rules and the overrides in force.
    &["rule", "overrides"],
    // The call built of them.
    &["call"],
    // The backends, who hears of each decision, and what the operators see of them.
    &["backend", "observe", "watch"],
    // The pipeline.
    &["pipeline"],
    // The public API: the limiter (its builder, a resolved limit, a reservation).
    &["limiter"],
    // What expansions call.
    &["private"],
    // The service edges.
    &["edge"],
    // The guide: documentation alone, which uses nothing.
    &["guide"],
];

fn source_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            source_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The module a file of `src` belongs to: its first path component (`backend/redis/mod.rs` is `backend`).
fn module_of(src: &Path, file: &Path) -> String {
    let relative = file.strip_prefix(src).unwrap();
    let first = relative.components().next().unwrap().as_os_str();
    first.to_string_lossy().trim_end_matches(".rs").to_owned()
}

/// What the root re-exports, by name: the module that defines it (`Limiter` → `limiter`).
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut exports = BTreeMap::new();
    for (i, _) in lib.match_indices("pub use crate::") {
        let statement = &lib[i + "pub use crate::".len()..];
        let statement = &statement[..statement.find(';').unwrap_or(statement.len())];
        let (module, names) = statement.split_once("::").unwrap_or((statement, ""));
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.trim().rsplit("::").next().unwrap_or("").to_owned();
            if !name.is_empty() {
                exports.insert(name, module.trim().to_owned());
            }
        }
        exports.insert(module.trim().to_owned(), module.trim().to_owned());
    }
    exports
}

/// Every module `text` names through `crate::` (a module, or a name the root re-exports): paths, and the
/// top level of `use` groups, nested ones too (`crate::{a::B, C, d::{e, f}}` names `a`, `C` and `d`), outside
/// comments.
fn uses(text: &str, exports: &BTreeMap<String, String>) -> BTreeSet<String> {
    let code = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            names.push(first_word(rest));
            continue;
        };
        let (mut depth, mut start) = (0, 0);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    names.push(first_word(&group[start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    names.push(first_word(&group[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    names
        .into_iter()
        .filter(|name| !name.is_empty())
        .map(|name| exports.get(&name).cloned().unwrap_or(name))
        .collect()
}

/// The name a path starts with.
fn first_word(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

#[test]
fn the_runtime_reads_top_down_with_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let exports = root_exports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    let layer = |module: &str| LAYERS.iter().position(|layer| layer.contains(&module));
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut upward = Vec::new();
    for file in &files {
        let module = module_of(&src, file);
        if module == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let Some(own) = layer(&module) else {
            panic!("{}: module {module} is in no layer", file.display());
        };
        for used in uses(&text, &exports) {
            if used == module || used == "__private" {
                continue;
            }
            let Some(theirs) = layer(&used) else {
                panic!("{}: uses `crate::{used}`, in no layer", file.display());
            };
            if theirs > own {
                upward.push(format!("{} ({module}) uses {used}", file.display()));
            }
            graph.entry(module.clone()).or_default().insert(used);
        }
    }
    assert!(
        upward.is_empty(),
        "uses of a higher layer:\n{}",
        upward.join("\n")
    );
    assert_no_circle(&graph);
}

/// Fails on a circle in `graph`, naming it: a depth-first walk never meets a module on its own path.
fn assert_no_circle(graph: &BTreeMap<String, BTreeSet<String>>) {
    fn walk(
        module: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if let Some(at) = path.iter().position(|m| m == module) {
            panic!("a circle: {} -> {module}", path[at..].join(" -> "));
        }
        if !done.insert(module.to_owned()) {
            return;
        }
        path.push(module.to_owned());
        for next in graph.get(module).into_iter().flatten() {
            walk(next, graph, path, done);
        }
        path.pop();
    }
    let mut done = BTreeSet::new();
    for module in graph.keys() {
        walk(module, graph, &mut Vec::new(), &mut done);
    }
}

/// Imports are read however they are written: paths, `use` groups (nested too), the root's re-exports; not
/// from comments.
#[test]
fn imports_are_read_from_use_groups_too() {
    let exports = root_exports("pub use crate::limiter::{Limiter, LimiterBuilder};\n");
    let used = uses(
        "use crate::{algorithm::B, Limiter, rule::{e, f}};\nuse crate::key::H; // crate::watch\n",
        &exports,
    );
    let used: Vec<&str> = used.iter().map(String::as_str).collect();
    assert_eq!(used, ["algorithm", "key", "limiter", "rule"]);
}

/// The pipeline asks a backend through its interface (`backend/mod.rs`) alone: nothing from inside one.
#[test]
fn the_pipeline_imports_nothing_from_inside_a_backend() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src");
    for file in [
        "pipeline.rs",
        "call/mod.rs",
        "call/decided.rs",
        "observe.rs",
    ] {
        let text = std::fs::read_to_string(src.join(file)).unwrap();
        for (i, _) in text.match_indices("crate::backend::") {
            let next = &text[i + "crate::backend::".len()..];
            let inside = next.starts_with("redis") || next.starts_with("memory");
            assert!(
                !inside,
                "{file} reaches inside a backend: {}",
                &next[..30.min(next.len())]
            );
        }
    }
}

/// The Redis backend's parts (`backend/redis/<part>.rs` or `<part>/`) import one another without a circle:
/// the wire at the bottom (a script's command, the connection, the server) never reaches back up. Read from
/// their `super::` paths (`super::super::` below a part's own folder) and `crate::backend::redis::` paths,
/// the names `backend/redis/mod.rs` re-exports resolved to their parts; what `mod.rs` defines itself, and the
/// parts' tests, are left out.
#[test]
fn the_redis_backends_parts_import_without_a_circle() {
    let redis = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src/backend/redis");
    let parts: BTreeSet<String> = std::fs::read_dir(&redis)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.file_name().is_some_and(|name| name != "mod.rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    // What mod.rs re-exports: a name's part.
    let hub = std::fs::read_to_string(redis.join("mod.rs")).unwrap();
    let mut exports = BTreeMap::new();
    for line in hub.lines() {
        let Some(used) = line.split("use self::").nth(1) else {
            continue;
        };
        let part = first_word(used);
        let names = used.split_once("::").map_or("", |(_, names)| names);
        for name in names.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !name.is_empty() && name != "as" {
                exports.insert(name.to_owned(), part.clone());
            }
        }
    }
    let mut files = Vec::new();
    source_files(&redis, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&redis).unwrap();
        let part = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let part = part.trim_end_matches(".rs").to_owned();
        if part == "mod" || relative.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        // Siblings are named `crate::` below, every other path `root::`. A part's own folder puts its files
        // one `super::` further from their siblings.
        let nested = relative.components().count() > 1 && !relative.ends_with("mod.rs");
        let text = text
            .replace("crate::", "root::")
            .replace("root::backend::redis::", "crate::");
        let text = match nested {
            true => text.replace("super::super::", "crate::"),
            false => text
                .replace("super::super::", "root::backend::")
                .replace("super::", "crate::"),
        };
        let names = uses(&text, &BTreeMap::new());
        for name in names {
            let to = exports.get(&name).cloned().unwrap_or(name);
            if to != part && parts.contains(&to) {
                graph.entry(part.clone()).or_default().insert(to);
            }
        }
    }
    assert!(graph.contains_key("connection"), "{graph:?}");
    assert_no_circle(&graph);
}

/// The parts below a decision's order (the batcher, leases, the deny cache, the breaker, permits, instances,
/// and the wire: scripts, connections, the server, the cluster, TLS) know a call, never the backend that
/// puts them together: only the files that run a decision's steps or a background task name `RedisBackend`.
#[test]
fn the_redis_backends_lower_parts_never_name_the_backend() {
    let redis = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src/backend/redis");
    let mut files = Vec::new();
    source_files(&redis, &mut files);
    let mut naming: Vec<String> = files
        .iter()
        .filter(|file| {
            let text = std::fs::read_to_string(file).unwrap();
            text.contains("RedisBackend")
        })
        .map(|file| {
            file.strip_prefix(&redis)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    naming.sort();
    assert_eq!(
        naming,
        [
            // A decision's steps (now, the round trip, across a cluster's slots, late answers, giving
            // back), the background tasks, the operators' overrides, bans and record of changes, and the
            // hub.
            "across_slots.rs",
            "background.rs",
            "bans.rs",
            "decision.rs",
            "giving_back.rs",
            "late.rs",
            "mod.rs",
            "overrides.rs",
            "record.rs",
            "round_trip.rs",
        ]
    );
}
