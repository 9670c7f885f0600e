//! The assembler on made-up sources: a good assembly, and each typo it must refuse, with its file and line.

use std::collections::BTreeMap;

use super::{assemble, Script, Sources};

/// Made-up sources: a file's path under `scripts/` to its text.
struct Made(BTreeMap<&'static str, &'static str>);

impl Sources for Made {
    fn read(&self, path: &str) -> Option<String> {
        self.0.get(path).map(|text| (*text).to_owned())
    }

    fn list(&self, directory: &str) -> Vec<String> {
        let prefix = match directory {
            "" => String::new(),
            directory => format!("{directory}/"),
        };
        self.0
            .keys()
            .filter_map(|path| path.strip_prefix(&prefix))
            .filter(|name| !name.contains('/'))
            .map(str::to_owned)
            .collect()
    }
}

/// The algorithms of the made-up sources, in the order of their codes.
const ALGORITHMS: [&str; 2] = ["one", "two"];

/// The made-up templates for every algorithm at once.
const TEMPLATES: [&str; 1] = ["inspect"];

/// Sources that assemble: two algorithms (`two` shares its `read` with its kin `shared`), `one_limit.lua`
/// placing their sections and a part, `inspect.lua` placing `peek` for each that has it, a script not
/// assembled.
fn good() -> Made {
    Made(BTreeMap::from([
        (
            "algorithms/README.md",
            "# Sections\n\n### read: required\n\nMust leave: `first`\n\n### fits: required\n\nMust leave: \
             `fits`\n\n### take: optional\n\n### peek: optional\n",
        ),
        (
            "algorithms/one.lua",
            "-- One.\n\n--@read\nlocal first = 1\n\n--@fits\nlocal fits = first < 2\n\n--@take\nfirst = \
             first + 1\n",
        ),
        (
            "algorithms/two.lua",
            "-- Two, kin of shared.\n\n--@read\n--> shared.read\n\n--@fits\nlocal fits = true\n\n--@peek\n\
             return {2}\n",
        ),
        ("algorithms/shared.lua", "-- What two shares.\n\n--@read\nlocal first = 0\n"),
        (
            "one_limit.lua",
            "-- head\n--> part now\n--> read\nif true then\n  --> fits\n  --> take\nend\n",
        ),
        ("parts/now.lua", "local now = 1\n"),
        ("inspect.lua", "--> each peek: peek\nreturn 0\n"),
        ("plain.lua", "return 1\n"),
    ]))
}

/// `sources` with `path`'s text replaced by `text`.
fn with(mut sources: Made, path: &'static str, text: &'static str) -> Made {
    sources.0.insert(path, text);
    sources
}

/// Why `sources` do not assemble.
fn refusal(sources: &Made) -> String {
    match assemble(sources, &ALGORITHMS, &TEMPLATES) {
        Ok(scripts) => panic!("assembled, though it should not: {scripts:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn good_sources_are_assembled_each_section_in_its_place() {
    let scripts = assemble(&good(), &ALGORITHMS, &TEMPLATES).unwrap();
    let script = |path: &str, text: &str| Script {
        path: path.to_owned(),
        text: text.to_owned(),
    };
    assert_eq!(
        scripts,
        [
            script(
                "one_limit/one.lua",
                "-- head\nlocal now = 1\nlocal first = 1\nif true then\n  local fits = first < 2\n  first = \
                 first + 1\nend\n"
            ),
            script(
                "one_limit/two.lua",
                "-- head\nlocal now = 1\nlocal first = 0\nif true then\n  local fits = true\nend\n"
            ),
            script(
                "inspect.lua",
                "if code == 2 then -- two\n  return {2}\nend\nreturn 0\n"
            ),
        ]
    );
}

#[test]
fn a_misspelled_marker_is_refused() {
    let sources = with(good(), "one_limit.lua", "-- head\n--> part now\n--> reed\n");
    assert_eq!(
        refusal(&sources),
        "scripts/one_limit.lua:3: no section is named `reed`: expected one of read, fits, take, peek (declared \
         in scripts/algorithms/README.md)"
    );
    let sources = with(good(), "inspect.lua", "--> each peek: part noww\n");
    assert_eq!(
        refusal(&sources),
        "scripts/inspect.lua:1: `--> part noww`: there is no file scripts/parts/noww.lua"
    );
    let sources = with(
        good(),
        "algorithms/two.lua",
        "--@read\n--> shared.fits\n--@fits\nlocal fits = 1\n",
    );
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/two.lua:2: `--> shared.fits`: scripts/algorithms/shared.lua has no `--@fits` section"
    );
    let sources = with(good(), "parts/now.lua", "--> prat now\n");
    assert_eq!(
        refusal(&sources),
        "scripts/parts/now.lua:1: `--> prat now`: expected `--> <section>`, `--> <file>.<section>`, \
         `--> part <name>` or `--> each <section>: <what>`"
    );
}

#[test]
fn a_marker_without_its_space_is_refused() {
    let sources = with(
        good(),
        "one_limit.lua",
        "-- head\n--> part now\n  -->read\n",
    );
    assert_eq!(
        refusal(&sources),
        "scripts/one_limit.lua:3: `-->read`: a marker needs a space after `-->`: expected `--> read`"
    );
    let sources = with(good(), "parts/now.lua", "-->  read\n");
    assert_eq!(
        refusal(&sources),
        "scripts/parts/now.lua:1: `-->  read`: expected `--> <section>`, `--> <file>.<section>`, `--> part \
         <name>` or `--> each <section>: <what>`, with single spaces and none at the end"
    );
}

#[test]
fn a_missing_section_is_refused() {
    let sources = with(
        good(),
        "algorithms/one.lua",
        "-- One.\n\n--@read\nlocal first = 1\n",
    );
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/one.lua:4: ends without a `--@fits` section: every algorithm must have read, fits \
         (declared in scripts/algorithms/README.md)"
    );
    let mut sources = good();
    sources.0.remove("algorithms/two.lua");
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/two.lua: missing: `two` is among the algorithms"
    );
}

#[test]
fn an_unknown_section_is_refused() {
    let sources = with(
        good(),
        "algorithms/one.lua",
        "-- One.\n--@read\nlocal first = 1\n--@fist\n",
    );
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/one.lua:4: `--@fist` names no section: expected one of read, fits, take, peek \
         (declared in scripts/algorithms/README.md)"
    );
    let sources = with(good(), "inspect.lua", "--> each peak: peek\n");
    assert_eq!(
        refusal(&sources),
        "scripts/inspect.lua:1: no section is named `peak`: expected one of read, fits, take, peek (declared \
         in scripts/algorithms/README.md)"
    );
    let sources = with(good(), "parts/now.lua", "--@read\n");
    assert_eq!(
        refusal(&sources),
        "scripts/parts/now.lua:1: `--@read`: a section opens only in a file of scripts/algorithms/"
    );
}

#[test]
fn a_section_line_out_of_its_form_is_refused() {
    let sources = with(good(), "algorithms/shared.lua", "--@read\n  --@fits\n");
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/shared.lua:2: `  --@fits`: expected `--@fits` alone on its line, from its start"
    );
    let sources = with(
        good(),
        "algorithms/shared.lua",
        "--@read\nlocal first = 0\n--@read\n",
    );
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/shared.lua:3: a second `--@read` section (the first at line 1)"
    );
    let sources = with(good(), "algorithms/shared.lua", "local lost = 1\n--@read\n");
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/shared.lua:1: `local lost = 1`: code before the first `--@<section>` line is in no \
         section"
    );
}

#[test]
fn a_section_that_does_not_leave_what_it_must_is_refused() {
    let sources = with(
        good(),
        "algorithms/two.lua",
        "--@read\n--> shared.read\n--@fits\nlocal fit = true\n",
    );
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/two.lua:3: section `fits` assigns `fits` nowhere, which it must leave (declared in \
         scripts/algorithms/README.md)"
    );
    // What a kin's section assigns counts.
    let sources = with(
        good(),
        "algorithms/shared.lua",
        "--@read\nlocal second = 0\n",
    );
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/two.lua:3: section `read` assigns `first` nowhere, which it must leave (declared in \
         scripts/algorithms/README.md)"
    );
}

#[test]
fn a_part_that_places_itself_is_refused_naming_the_markers_that_placed_it() {
    let sources = with(good(), "parts/now.lua", "local now = 1\n--> part now\n");
    assert_eq!(
        refusal(&sources),
        "scripts/parts/now.lua:2: `part now` places itself (through part now)\n  placed by the marker at \
         scripts/one_limit.lua:2, for one"
    );
}

#[test]
fn a_section_of_one_algorithm_in_a_script_for_all_is_refused() {
    let sources = with(good(), "inspect.lua", "--> peek\n");
    assert_eq!(
        refusal(&sources),
        "scripts/inspect.lua:1: `--> peek` in a script for every algorithm: place it within `--> each \
         <section>: ...`"
    );
    let sources = with(good(), "inspect.lua", "--> each take: each peek: peek\n");
    assert_eq!(
        refusal(&sources),
        "scripts/inspect.lua:1: `--> each take: each peek: peek`: after `each take: `, expected `<section>`, \
         `<file>.<section>` or `part <name>`"
    );
}

#[test]
fn a_marker_in_a_script_not_assembled_is_refused() {
    let sources = with(good(), "plain.lua", "return 1\n--> read\n");
    assert_eq!(
        refusal(&sources),
        "scripts/plain.lua:2: a marker in a script that is not assembled: name it among the templates \
         (`TEMPLATES` in build.rs), or leave it plain Lua"
    );
}

#[test]
fn an_undeclared_contract_is_refused() {
    let sources = with(good(), "algorithms/README.md", "### read: needed\n");
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/README.md:1: `needed`: expected `required` or `optional`"
    );
    let sources = with(
        good(),
        "algorithms/README.md",
        "### read: required\nMust leave: first\n",
    );
    assert_eq!(
        refusal(&sources),
        "scripts/algorithms/README.md:2: `first`: expected `Must leave: `<local>`, `<local>`, ...`"
    );
}
