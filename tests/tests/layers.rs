//! The runtime reads top-down: each of its modules uses only modules of its own layer or the layers below,
//! and no modules use each other in a circle. Read from the sources (`use crate::...` and `crate::` paths,
//! the root's re-exports resolved to the modules that define them), so that a new import that breaks the
//! layering fails here, naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The runtime's modules, bottom up: a module may use its own layer's and those below.
const LAYERS: [&[&str]; 7] = [
    // Keys, algorithms, the clock and the calendar; what a decision is, and the errors.
    &[
        "algorithm",
        "budget",
        "calendar",
        "clock",
        "decision",
        "error",
        "key",
        "parse",
        "policy",
        "sharded",
    ],
    // Rules, the overrides in force, and the call built of them.
    &["rule", "overrides", "call"],
    // The backends, who hears of each decision, and what the operators see of them.
    &["backend", "observe", "watch"],
    // The pipeline.
    &["pipeline"],
    // The public API: the limiter (its builder, a resolved limit, a reservation), and what expansions call.
    &["limiter", "private"],
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

/// Every module `text` names through `crate::` (a module, or a name the root re-exports).
fn uses(text: &str, exports: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    let text: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    for (i, _) in text.match_indices("crate::") {
        let rest = &text[i + "crate::".len()..];
        let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end].split(',').collect()
        } else {
            vec![rest]
        };
        for name in names {
            let name: String = name
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if let Some(module) = exports.get(&name) {
                used.insert(module.clone());
            } else if !name.is_empty() {
                used.insert(name);
            }
        }
    }
    used
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
    // No circle: a depth-first walk never meets a module on its own path.
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
        walk(module, &graph, &mut Vec::new(), &mut done);
    }
    // The layers hold what they say: the pipeline imports nothing from inside a backend, and the public
    // error depends on nothing above the bottom.
    let error = graph.get("error").cloned().unwrap_or_default();
    assert!(
        error.iter().all(|m| layer(m) == Some(0)),
        "error uses {error:?}"
    );
}

/// The pipeline asks a backend through its interface (`backend/mod.rs`) alone: nothing from inside one.
#[test]
fn the_pipeline_imports_nothing_from_inside_a_backend() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src");
    for file in ["pipeline.rs", "call.rs", "observe.rs"] {
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
