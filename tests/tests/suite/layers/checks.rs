//! The checks, each over a crate read: what breaks it, named (none when it holds): the layers, the Redis
//! backend's rooms, where the stores are named, circles, and where the order's steps are taken.

use std::collections::{BTreeMap, BTreeSet};

use super::krate::{Crate, Target};
use super::receivers::Site;
use super::{HUB, LAYERS, ROOMS};

/// A graph of which part uses which (modules, or rooms).
pub(super) type Graph = BTreeMap<String, BTreeSet<String>>;

/// The one module above their own that tests (`#[cfg(test)]` modules) may use: what expansions call, so that
/// a test of a lower module (key lists) holds it to what expansions write.
const TESTS_MAY_USE: &str = "private";

/// Which of the crate's modules (per [`LAYERS`]) uses which, and each use of a higher layer's module or of a
/// module in no layer, as `file:line (module) uses `path`, ...`.
pub(super) fn layering(krate: &Crate) -> (Graph, BTreeSet<String>) {
    let module =
        |path: &[String]| Some(top_module(krate.file_of(path)).to_owned()).filter(|m| m != "lib");
    ordered(krate, &LAYERS, "layer", module, Some(TESTS_MAY_USE))
}

/// Which of the Redis backend's rooms (per [`ROOMS`]) uses which, and each use of a higher room or of a room
/// [`ROOMS`] does not list.
pub(super) fn room_layering(krate: &Crate) -> (Graph, BTreeSet<String>) {
    ordered(
        krate,
        &ROOMS,
        "room",
        |path| room_of(path).map(str::to_owned),
        None,
    )
}

/// Which part of the crate uses which, and each use of a part higher in `table` (bottom up: a part may use
/// its own layer's and those below) or of a part in none of its layers: a module's part told by `part` (none
/// for a module in no part), the table's layers called `kind`s, tests let use `tests_may_use` too.
fn ordered(
    krate: &Crate,
    table: &[&[&str]],
    kind: &str,
    part: impl Fn(&[String]) -> Option<String>,
    tests_may_use: Option<&str>,
) -> (Graph, BTreeSet<String>) {
    let layer = |part: &str| table.iter().position(|layer| layer.contains(&part));
    let (mut graph, mut broken) = (Graph::new(), BTreeSet::new());
    for (path, module, written, target) in krate.reached() {
        let (Some(own), Some(theirs)) = (part(path), part(&target.module)) else {
            continue;
        };
        if own == theirs || (module.test && Some(theirs.as_str()) == tests_may_use) {
            continue;
        }
        let path = written.path.join("::");
        let at = format!("{}:{} ({own}) uses `{path}`", module.file, written.line);
        match (layer(&own), layer(&theirs)) {
            (None, _) => broken.insert(format!("{at}, but {own} is in no {kind} of the table")),
            (_, None) => broken.insert(format!(
                "{at}, in {theirs}, which is in no {kind} of the table"
            )),
            (Some(a), Some(b)) if b > a => {
                broken.insert(format!("{at}, in {theirs}, a higher {kind}"))
            }
            _ => false,
        };
        graph.entry(own).or_default().insert(theirs);
    }
    (graph, broken)
}

/// Each use of the store (`RedisBackend`, which the hub defines) from a room below a decision's steps.
pub(super) fn store_named_below_the_steps(krate: &Crate) -> BTreeSet<String> {
    let steps = ROOMS
        .iter()
        .position(|layer| layer.contains(&"decision"))
        .unwrap();
    let below = |room: &str| ROOMS[..steps].iter().any(|layer| layer.contains(&room));
    let mut broken = BTreeSet::new();
    for (path, module, written, target) in krate.reached() {
        let store =
            target.module == HUB && target.item.first().is_some_and(|i| i == "RedisBackend");
        if store && room_of(path).is_some_and(below) {
            let path = written.path.join("::");
            broken.insert(format!(
                "{}:{} uses `{path}`, the store",
                module.file, written.line
            ));
        }
    }
    broken
}

/// The stores' modules, which only the backend and the builder may name.
const STORES: [&[&str]; 2] = [HUB, &["backend", "memory"]];

/// The stores' own types, which only the backend and the builder may use, however they are reached (through
/// the backend's interface too).
const STORE_TYPES: [&str; 4] = ["RedisBackend", "MemoryStore", "ToAsk", "InLine"];

/// Each path from outside the backend and the builder (which assembles a store) that names a store's module
/// as it is written (`crate::backend::redis::..`, an alias of it, `super::redis::..`), or that reaches a
/// store's own type ([`STORE_TYPES`]) however it is written. What the backend's interface re-exports of a
/// store otherwise (a constant, a function) is the interface's.
pub(super) fn store_named_above_the_backend(krate: &Crate) -> BTreeSet<String> {
    let mut broken = BTreeSet::new();
    for (path, module, written, target) in krate.reached() {
        if module.file.starts_with("backend/") || module.file.starts_with("limiter/builder/") {
            continue;
        }
        let named = krate
            .written_module(path, &written.path)
            .unwrap_or_default();
        let store = STORES.iter().find(|store| within(&named, store));
        let own_type = STORES.iter().find(|store| {
            within(&target.module, store)
                && target
                    .item
                    .first()
                    .is_some_and(|i| STORE_TYPES.contains(&i.as_str()))
        });
        if let Some(store) = store.or(own_type) {
            let (path, store) = (written.path.join("::"), store.join("::"));
            broken.insert(format!(
                "{}:{} uses `{path}`, of {store}",
                module.file, written.line
            ));
        }
    }
    broken
}

/// A circle in `graph`, named (`a -> b -> a`), if there is one: a depth-first walk meets a node on its own
/// path.
pub(super) fn circle(graph: &Graph) -> Option<String> {
    fn walk(
        node: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<String> {
        if let Some(at) = path.iter().position(|m| m == node) {
            return Some(format!("{} -> {node}", path[at..].join(" -> ")));
        }
        if !done.insert(node.to_owned()) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = walk(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| walk(node, graph, &mut Vec::new(), &mut done))
}

/// Where each step (a type's method) is taken outside test code, as `file:line: how`, by step: through a path
/// to it (`Breaker::failed`, `Self::failed`, an alias of the type), or a call of a method of its name on a
/// receiver of its type, or in the Redis backend (where the breaker, the fallback and the store live) on one
/// whose type the reader cannot tell (counted: a renamed variable must not hide a step; elsewhere a step's
/// receiver is reached through a field of the store, whose type the reader tells). Fails, naming it, on a
/// step the crate does not define exactly once.
pub(super) fn steps_taken(
    krate: &Crate,
    steps: &[(&str, &str)],
) -> Result<BTreeMap<String, BTreeSet<String>>, String> {
    let mut taken = BTreeMap::new();
    for &(ty, method) in steps {
        let home = step_home(krate, ty, method)?;
        let is_step = |target: &Target| target.module == home && target.item == [ty, method];
        let is_type = |target: &Target| target.module == home && target.item == [ty];
        let places: &mut BTreeSet<String> = taken.entry(format!("{ty}::{method}")).or_default();
        for (path, module) in krate.modules.iter().filter(|(_, m)| !m.test) {
            let by_path = module
                .written
                .iter()
                .filter(|w| w.path.last().is_some_and(|m| m == method));
            for written in by_path {
                let path_to = match written.path[0].as_str() {
                    "Self" => written
                        .self_type
                        .as_ref()
                        .map(|own| [own, &written.path[1..]].concat()),
                    _ => Some(written.path.clone()),
                };
                if path_to
                    .and_then(|p| krate.resolve(path, &p))
                    .is_some_and(|t| is_step(&t))
                {
                    let how = format!("through `{}`", written.path.join("::"));
                    places.insert(format!("{}:{}: {how}", module.file, written.line));
                }
            }
            for call in module.calls.iter().filter(|c| c.method == method) {
                let site = Site {
                    module: path,
                    toks: &krate.tokens[&module.file],
                    self_type: call.self_type.as_deref(),
                    fn_start: call.fn_start,
                };
                let how = match krate.receiver_type(&site, call.at) {
                    Some(receiver) if is_type(&receiver) => format!("`.{method}(..)` on a `{ty}`"),
                    None if within(path, HUB) => {
                        format!("`.{method}(..)` on a receiver of a type the reader cannot tell")
                    }
                    _ => continue,
                };
                places.insert(format!("{}:{}: {how}", module.file, call.line));
            }
        }
    }
    Ok(taken)
}

/// The module that defines type `ty`, whose `impl` (outside test code) defines method `method`: an error
/// naming the places when not exactly one does.
fn step_home(krate: &Crate, ty: &str, method: &str) -> Result<Vec<String>, String> {
    let mut defined = BTreeMap::new();
    for (path, module) in krate.modules.iter().filter(|(_, m)| !m.test) {
        for m in module.methods.iter().filter(|m| m.name == method) {
            if let Some(own) = krate
                .type_named(path, &m.ty, None)
                .filter(|own| own.item == [ty])
            {
                defined.insert(format!("{}:{}", module.file, m.line), own.module);
            }
        }
    }
    match defined.len() {
        1 => Ok(defined.pop_first().unwrap().1),
        _ => Err(format!(
            "{ty}::{method} should be defined once, is defined at {:?}: name the step anew",
            Vec::from_iter(defined.keys())
        )),
    }
}

/// The runtime's module a file of `src` belongs to: its first path component (`backend/redis/mod.rs` is
/// `backend`, `lib.rs` is `lib`).
fn top_module(file: &str) -> &str {
    let first = file.split('/').next().unwrap_or(file);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// Whether module `module` is `ancestor` or inside it.
fn within(module: &[String], ancestor: &[&str]) -> bool {
    module.len() >= ancestor.len() && module.iter().zip(ancestor).all(|(a, b)| a == b)
}

/// The room of the Redis backend a module is in (`[backend, redis, decision, late]` is in `decision`): none
/// outside the rooms (the hub itself, or not in the backend).
fn room_of(module: &[String]) -> Option<&str> {
    match module {
        [backend, redis, room, ..] if [backend.as_str(), redis.as_str()] == HUB => Some(room),
        _ => None,
    }
}
