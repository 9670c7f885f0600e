//! The runtime reads top-down: each of its modules uses only modules of its own layer or the layers below, no
//! modules use each other in a circle, the Redis backend's rooms keep their own order, and one file knows the
//! order of a decision on Redis. Read from the sources by a small reader of Rust (tokens, `use` trees, paths
//! written inline, re-exports followed to where an item is defined, what a method call calls), itself tested
//! first on made-up sources, so that a new import or call that breaks the layering fails here, naming it.
//!
//! Here: the tables (layers, rooms, the order's steps) and the tests on the runtime. Beside, the reader,
//! bottom up: `tokens`, `krate` (a crate as the reader sees it), `items` (`use` trees, paths, types),
//! `reader` (a crate read file by file), `resolve` (where a path leads), `receivers` (what a method call
//! calls); then `checks`, and `self_tests` (the reader and the checks on made-up sources).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

mod checks;
mod items;
mod krate;
mod reader;
mod receivers;
mod resolve;
mod self_tests;
mod tokens;

use self::checks::{
    circle, layering, room_layering, steps_taken, store_named_above_the_backend,
    store_named_below_the_steps,
};
use self::krate::Crate;

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
    // Rules, the overrides in force, and the limits file that holds rules.
    &["rule", "overrides", "limits", "registry"],
    // The call built of them, and the lines calls to an upstream wait in.
    &["call", "outbound"],
    // The backends, who hears of each decision, and what the operators see of them.
    &["backend", "observe", "watch"],
    // The pipeline.
    &["pipeline"],
    // The public API: the limiter (its builder, a resolved limit, an estimate).
    &["limiter"],
    // What expansions call.
    &["private"],
    // The service edges.
    &["edge"],
    // The guide: documentation alone, which uses nothing.
    &["guide"],
];

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

/// The Redis backend's hub: its `mod.rs` puts the rooms together (and defines the store, `RedisBackend`).
const HUB: &[&str] = &["backend", "redis"];

/// The steps of a decision on Redis only its order takes (`decision/order.rs`), each a type's method: telling
/// the breaker what Redis answered, deciding by the fallback, reconciling a late answer.
const STEPS: [(&str, &str); 4] = [
    ("Breaker", "succeeded"),
    ("Breaker", "failed"),
    ("Fallback", "decide"),
    ("RedisBackend", "reconcile"),
];

/// The one file that takes [`STEPS`], by its path under `src`.
const ORDER: &str = "backend/redis/decision/order.rs";

/// A crate's sources by their path under its `src` (`backend/redis/mod.rs`).
type Sources = BTreeMap<String, String>;

/// The runtime, read once for all the tests on it.
fn runtime() -> &'static Crate {
    static RUNTIME: OnceLock<Crate> = OnceLock::new();
    RUNTIME.get_or_init(|| Crate::read(&runtime_sources()))
}

/// The runtime's sources, read from `limiter-runtime/src`.
fn runtime_sources() -> Sources {
    fn walk(root: &Path, dir: &Path, sources: &mut Sources) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(root, &path, sources);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let name = path.strip_prefix(root).unwrap().to_string_lossy();
                let name = name.replace('\\', "/");
                sources.insert(name, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../limiter-runtime/src");
    let mut sources = Sources::new();
    walk(&src, &src, &mut sources);
    sources
}

// ---------------------------------------------------------------------------------------------------------
// The runtime's sources.

#[test]
fn the_runtime_reads_top_down_with_no_circle() {
    let krate = runtime();
    let (graph, broken) = layering(krate);
    let broken = Vec::from_iter(broken);
    assert!(
        broken.is_empty(),
        "uses of a higher layer:\n{}",
        broken.join("\n")
    );
    assert_eq!(
        circle(&graph),
        None,
        "the modules use each other in a circle"
    );
    assert!(
        graph["pipeline"].contains("backend"),
        "the reader reads: {graph:?}"
    );
}

/// The pipeline asks a backend through its interface (`backend/mod.rs`) alone, and nothing above `backend/`
/// reaches a module of one store: only the builder, which assembles one, uses Redis's or memory's.
#[test]
fn nothing_above_the_backend_names_a_store() {
    let krate = runtime();
    let broken = Vec::from_iter(store_named_above_the_backend(krate));
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The Redis backend reads as its rooms say: every folder is a room of [`ROOMS`] with a `//!` saying what it
/// holds, every file but the hub (`mod.rs`) lives in one, and no room uses a room above its own (however the
/// use is written: grouped, renamed, through `super::`, inline, or through the hub's re-exports).
#[test]
fn the_redis_backends_rooms_follow_their_layers() {
    let sources = runtime_sources();
    let hub = format!("{}/", HUB.join("/"));
    let in_hub: Vec<&str> = sources
        .keys()
        .filter_map(|file| file.strip_prefix(&hub))
        .collect();
    let folders: BTreeSet<&str> = in_hub
        .iter()
        .filter_map(|f| Some(f.split_once('/')?.0))
        .collect();
    let listed: BTreeSet<&str> = ROOMS
        .iter()
        .flat_map(|layer| layer.iter().copied())
        .collect();
    assert_eq!(
        folders, listed,
        "the folders of backend/redis are the rooms ROOMS lists"
    );
    for room in &folders {
        let text = &sources[&format!("{hub}{room}/mod.rs")];
        assert!(
            text.starts_with("//! "),
            "backend/redis/{room}/mod.rs says what it holds"
        );
    }
    let loose: Vec<_> = in_hub
        .iter()
        .filter(|f| !f.contains('/') && **f != "mod.rs")
        .collect();
    assert!(loose.is_empty(), "files outside a room: {loose:?}");
    let (graph, broken) = room_layering(runtime());
    let broken = Vec::from_iter(broken);
    assert!(
        broken.is_empty(),
        "uses of a higher room:\n{}",
        broken.join("\n")
    );
    assert!(
        graph["decision"].contains("wire"),
        "the reader reads: {graph:?}"
    );
    assert_eq!(circle(&graph), None, "the rooms use each other in a circle");
}

/// The rooms below a decision's steps (the wire, what spares Redis a call, what decides when it fails) know a
/// call, never the store that puts them together: only a decision's steps and the fleet's features use
/// `RedisBackend`.
#[test]
fn the_redis_backends_lower_rooms_never_name_the_store() {
    let krate = runtime();
    let broken = Vec::from_iter(store_named_below_the_steps(krate));
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// One file knows the order of a decision on Redis: only `decision/order.rs` tells the breaker what Redis
/// answered, decides by the fallback, or reconciles a late answer, whatever names the values go by.
#[test]
fn one_file_knows_the_order_of_a_decision() {
    let krate = runtime();
    let taken = steps_taken(krate, &STEPS).unwrap();
    for (step, places) in &taken {
        let files: BTreeSet<&str> = places
            .iter()
            .map(|p| p.split(':').next().unwrap())
            .collect();
        assert_eq!(
            files,
            BTreeSet::from([ORDER]),
            "{step} should be taken in {ORDER} alone; it is taken at:\n{}",
            Vec::from_iter(places.iter().cloned()).join("\n")
        );
    }
}
