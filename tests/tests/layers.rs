//! The runtime reads top-down: each of its modules uses only modules of its own layer or the layers below,
//! and no modules use each other in a circle. Read from the sources (`use crate::...` and `crate::` paths,
//! the root's re-exports resolved to the modules that define them), so that a new import that breaks the
//! layering fails here, naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The runtime's modules, bottom up: a module may use its own layer's and those below. The one table of the
/// runtime's layers (the README's layout and `guide` follow it).
const LAYERS: [&[&str]; 10] = [
    // Keys, algorithms, penalties and priorities, the clock, parsing and policy names; Tokio's budget.
    &[
        "algorithm",
        "budget",
        "clock",
        "clock_gate",
        "key",
        "parse",
        "penalty",
        "policy",
        "priority",
    ],
    // What a decision is, the errors, the calendar; sharded key maps.
    &["calendar", "decision", "error", "sharded"],
    // Rules and the overrides in force.
    &["rule", "overrides"],
    // The call built of them, and the lines calls to an upstream wait in.
    &["call", "outbound"],
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

/// The pipeline asks a backend through its interface (`backend/mod.rs`) alone, and nothing above `backend/`
/// names a type of one store: only the builder, which assembles one, names Redis's or memory's.
#[test]
fn nothing_above_the_backend_names_a_store() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src");
    let mut files = Vec::new();
    source_files(&src, &mut files);
    let stores = [
        "RedisBackend",
        "MemoryStore",
        "ToAsk",
        "InLine",
        "backend::redis::",
        "backend::memory::",
    ];
    let mut naming = Vec::new();
    for file in &files {
        let relative = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if relative.starts_with("backend/") || relative.starts_with("limiter/builder/") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        for store in stores {
            if text.contains(store) {
                naming.push(format!("{relative} names {store}"));
            }
        }
    }
    assert!(naming.is_empty(), "{}", naming.join("\n"));
}

/// The Redis backend's rooms (`backend/redis/<room>/`), bottom up: a room may use its own layer's rooms and
/// those below, never one above. The one table of them (each room's `//!` says the same).
const ROOMS: [&[&str]; 4] = [
    // The wire: scripts, the connection, the server, the cluster, TLS. Sends and parses; decides nothing.
    &["wire"],
    // What spares Redis a call (the deny cache, coalescing, leases), and what decides when Redis cannot (the
    // breaker, the fallback, the count of live nodes).
    &["sparing", "failure"],
    // A decision's steps: the order, the round trip, across slots, late answers, giving back, permits.
    &["decision"],
    // What a node shares with the others for operators: overrides, bans, the record, the background tasks.
    &["fleet"],
];

/// A file of a room (its path under `backend/redis/`), its room, and the other rooms it names.
type RoomFile = (String, String, BTreeSet<String>);

/// The rooms of `backend/redis/` (its folders), each of its files with the rooms it names, as
/// `crate::backend::redis::<room>` paths or a sibling room through `super::super::<room>`.
fn redis_rooms() -> (BTreeSet<String>, Vec<RoomFile>) {
    let redis = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src/backend/redis");
    let rooms: BTreeSet<String> = std::fs::read_dir(&redis)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut files = Vec::new();
    source_files(&redis, &mut files);
    let mut read = Vec::new();
    for file in &files {
        let relative = file.strip_prefix(&redis).unwrap();
        if relative.components().count() < 2 {
            continue;
        }
        let room = relative
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(file).unwrap();
        let code: String = text
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let mut used = BTreeSet::new();
        for prefix in ["crate::backend::redis::", "super::super::"] {
            for (i, _) in code.match_indices(prefix) {
                let name = first_word(&code[i + prefix.len()..]);
                if rooms.contains(&name) && name != room {
                    used.insert(name);
                }
            }
        }
        read.push((relative.to_string_lossy().into_owned(), room, used));
    }
    (rooms, read)
}

/// The Redis backend reads as its rooms say: every folder is a room of [`ROOMS`] with a `//!` saying what it
/// holds, every file but the hub (`mod.rs`) lives in one, and no room uses a room above its own.
#[test]
fn the_redis_backends_rooms_follow_their_layers() {
    let (rooms, files) = redis_rooms();
    let listed: BTreeSet<String> = ROOMS
        .iter()
        .flat_map(|layer| layer.iter().map(|r| r.to_string()))
        .collect();
    assert_eq!(
        rooms, listed,
        "the folders of backend/redis are the rooms ROOMS lists"
    );
    let redis = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src/backend/redis");
    for room in &rooms {
        let text = std::fs::read_to_string(redis.join(room).join("mod.rs")).unwrap();
        assert!(
            text.starts_with("//! "),
            "backend/redis/{room}/mod.rs says what it holds"
        );
    }
    let loose: Vec<_> = std::fs::read_dir(&redis)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs") && name != "mod.rs")
        .collect();
    assert!(loose.is_empty(), "files outside a room: {loose:?}");
    let layer = |room: &str| {
        ROOMS
            .iter()
            .position(|layer| layer.contains(&room))
            .unwrap()
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut upward = Vec::new();
    for (file, room, used) in &files {
        for other in used {
            if layer(other) > layer(room) {
                upward.push(format!("{file} ({room}) uses {other}"));
            }
            graph.entry(room.clone()).or_default().insert(other.clone());
        }
    }
    assert!(
        upward.is_empty(),
        "uses of a higher room:\n{}",
        upward.join("\n")
    );
    assert!(graph["decision"].contains("wire"), "{graph:?}");
    assert_no_circle(&graph);
}

/// The rooms below a decision's steps (the wire, what spares Redis a call, what decides when it fails) know a
/// call, never the store that puts them together: only a decision's steps and the fleet's features name
/// `RedisBackend`.
#[test]
fn the_redis_backends_lower_rooms_never_name_the_store() {
    let redis = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src/backend/redis");
    let mut files = Vec::new();
    source_files(&redis, &mut files);
    let naming: Vec<String> = files
        .iter()
        .filter(|file| {
            std::fs::read_to_string(file)
                .unwrap()
                .contains("RedisBackend")
        })
        .map(|file| {
            file.strip_prefix(&redis)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|file| {
            !(file == "mod.rs" || file.starts_with("decision/") || file.starts_with("fleet/"))
        })
        .collect();
    assert!(naming.is_empty(), "{naming:?}");
}

/// One file knows the order of a decision on Redis: only `decision/order.rs` tells the breaker what Redis
/// answered, decides by the fallback, or reconciles a late answer.
#[test]
fn one_file_knows_the_order_of_a_decision() {
    let redis = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src/backend/redis");
    let mut files = Vec::new();
    source_files(&redis, &mut files);
    let steps = [
        "breaker.succeeded(",
        "breaker.failed(",
        "fallback.decide(",
        ".reconcile(",
    ];
    let mut where_: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file
            .strip_prefix(&redis)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if relative.ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        let text = text.split("#[cfg(test)]\nmod tests").next().unwrap();
        for step in steps {
            if text.contains(step) {
                where_.entry(step).or_default().insert(relative.clone());
            }
        }
    }
    for step in steps {
        let files: Vec<_> = where_.get(step).into_iter().flatten().collect();
        assert_eq!(files, ["decision/order.rs"], "{step} is taken in {files:?}");
    }
}
