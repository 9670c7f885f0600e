//! Imports on made-up sources: each form of import or path reaching a higher room or layer is caught where
//! it is written; what is not a use (a comment, a string, a visibility) is not read as one; a `use` tree is
//! read whole.

use super::{dedent, everything_broken, made_up, names_the_change};
use crate::layers::items::use_tree;
use crate::layers::krate::Crate;
use crate::layers::tokens::{tokens, Tok};

/// A file of the wire (the lowest room), under `src`.
const WIRE: &str = "backend/redis/wire/connection.rs";

/// The Redis backend's hub, under `src`.
const HUB_FILE: &str = "backend/redis/mod.rs";

/// Each form of import or path, written in the wire (the lowest room), that reaches the fleet (the highest):
/// its name, and the changes that make it, the first in the file it is written in.
const ROOM_FORMS: &[(&str, &[(&str, &str)])] = &[
    (
        "a group",
        &[(WIRE, "use crate::backend::redis::{fleet::Fleet};")],
    ),
    (
        "a nested group",
        &[(
            WIRE,
            "use crate::{call, backend::{redis::{fleet::{Fleet}}}};",
        )],
    ),
    (
        "a rename",
        &[(WIRE, "use crate::backend::redis::fleet::Fleet as Quiet;")],
    ),
    ("a glob", &[(WIRE, "use crate::backend::redis::fleet::*;")]),
    (
        "a module by `self`",
        &[(WIRE, "use crate::backend::redis::fleet::{self};")],
    ),
    (
        "a module by name",
        &[(
            "backend/redis/wire/mod.rs",
            "use crate::backend::redis::fleet;",
        )],
    ),
    (
        "`super::super::`",
        &[(WIRE, "use super::super::fleet::Fleet;")],
    ),
    (
        "`super::` from a room's own `mod.rs`",
        &[("backend/redis/wire/mod.rs", "use super::fleet::Fleet;")],
    ),
    (
        "an inline path",
        &[(
            WIRE,
            "fn reach() { crate::backend::redis::fleet::Fleet::new(); }",
        )],
    ),
    (
        "an inline `super::` path",
        &[(WIRE, "fn reach() -> super::super::fleet::Fleet { todo!() }")],
    ),
    (
        "an alias of the hub, inline",
        &[(
            WIRE,
            "
            use crate::backend::redis as hub;
            fn reach() { hub::fleet::Fleet::new(); }
            ",
        )],
    ),
    (
        "the hub's re-export",
        &[
            (WIRE, "use crate::backend::redis::Fleet;"),
            (HUB_FILE, "pub(crate) use self::fleet::Fleet;"),
        ],
    ),
    (
        "the hub's renamed re-export, by `super::`",
        &[
            (WIRE, "use super::super::Ships;"),
            (HUB_FILE, "pub(crate) use self::fleet::{Fleet as Ships};"),
        ],
    ),
    (
        "a glob of the hub, its re-export named inline",
        &[
            (
                WIRE,
                "
                use crate::backend::redis::*;
                fn reach() { Fleet::new(); }
                ",
            ),
            (HUB_FILE, "pub(crate) use self::fleet::Fleet;"),
        ],
    ),
    (
        "the backend's re-export of the hub's, inline",
        &[
            (WIRE, "fn reach() { crate::backend::Ships::new(); }"),
            (HUB_FILE, "pub(crate) use self::fleet::Fleet as Ships;"),
            ("backend/mod.rs", "pub(crate) use self::redis::Ships;"),
        ],
    ),
    (
        "a test module's import",
        &[(
            WIRE,
            "
            #[cfg(test)]
            mod tests {
                use crate::backend::redis::fleet::Fleet;
            }
            ",
        )],
    ),
];

#[test]
fn each_form_of_import_reaching_a_higher_room_is_caught() {
    for (form, changes) in ROOM_FORMS {
        let sources = made_up(changes, &[]);
        let (file, text) = changes[0];
        let broken = everything_broken(&Crate::read(&sources));
        let (higher, rest): (Vec<_>, Vec<_>) = broken
            .iter()
            .partition(|b| b.ends_with("in fleet, a higher room"));
        let caught =
            |b: &&String| b.contains("(wire) uses") && names_the_change(b, &sources, file, text);
        assert!(
            higher.len() == 1 && higher.iter().all(caught),
            "{form} is caught where written: {broken:#?}"
        );
        assert!(
            rest.iter().all(|b| b.starts_with("rooms in a circle")),
            "{form}: {rest:#?}"
        );
    }
}

/// Each form of import or path, written in a module of the lowest layer (`algorithm`), that reaches one of a
/// higher layer (`limiter`): its name, and the changes that make it, the first in the file it is written in.
const LAYER_FORMS: &[(&str, &[(&str, &str)])] = &[
    (
        "the root's re-export",
        &[("algorithm/state.rs", "use crate::Limiter;")],
    ),
    (
        "the root's renamed re-export, inline",
        &[(
            "algorithm/state.rs",
            "fn reach() -> crate::Resolved { todo!() }",
        )],
    ),
    (
        "a group at the root",
        &[(
            "algorithm/state.rs",
            "use crate::{algorithm::State as Own, limiter::Limit};",
        )],
    ),
    (
        "`super::` to the root",
        &[("algorithm/mod.rs", "use super::limiter;")],
    ),
    (
        "`super::super::`, inline",
        &[(
            "algorithm/state.rs",
            "fn reach() { super::super::limiter::Limiter; }",
        )],
    ),
    (
        "a glob",
        &[("algorithm/state.rs", "use crate::limiter::*;")],
    ),
    (
        "a glob's re-export",
        &[
            ("algorithm/mod.rs", "fn reach() -> self::Limit { todo!() }"),
            ("algorithm/state.rs", "pub(crate) use crate::limiter::*;"),
        ],
    ),
];

#[test]
fn each_form_of_import_reaching_a_higher_layer_is_caught() {
    for (form, changes) in LAYER_FORMS {
        let sources = made_up(changes, &[]);
        let (file, text) = changes[0];
        let broken = everything_broken(&Crate::read(&sources));
        let caught = broken.iter().filter(|b| {
            b.contains("(algorithm) uses")
                && b.ends_with("in limiter, a higher layer")
                && names_the_change(b, &sources, file, text)
        });
        assert_eq!(
            caught.count(),
            1,
            "{form} is caught where written: {broken:#?}"
        );
    }
}

/// What is not a use is not read as one: comments (doc comments, nested block comments), strings (raw ones
/// too), characters and lifetimes, a visibility's path (`pub(in crate::..)`).
#[test]
fn comments_strings_and_visibilities_are_no_uses() {
    let text = r###"
        // use crate::backend::redis::fleet::Fleet;
        /// [`crate::backend::redis::fleet`]
        /* crate::backend::redis::fleet /* nested */ crate::backend::redis::fleet */
        const A: &str = "crate::backend::redis::fleet::Fleet \" crate::limiter";
        const B: &str = r##"crate::backend::redis::fleet "# crate::limiter"##;
        const C: [char; 2] = ['"', '\''];
        fn lives<'a>(_: &'a str) -> &'a str { "crate::limiter" }
        pub(in crate::backend::redis) fn seen() {}
        "###;
    let sources = made_up(&[(WIRE, text)], &[]);
    assert_eq!(
        everything_broken(&Crate::read(&sources)),
        Vec::<String>::new()
    );
    let toks = tokens(&dedent(text));
    let strings = Vec::from_iter(toks.iter().filter(|t| matches!(t.tok, Tok::Str(_))));
    assert_eq!(strings.len(), 3, "{strings:?}");
    assert_eq!(
        toks.last().unwrap().line,
        8,
        "lines are counted through comments and strings"
    );
}

/// A `use` tree is read whole: groups (nested too), renames, `as _`, globs, `self`, `super::` and paths from
/// outside the crate.
#[test]
fn use_trees_are_read_whole() {
    let text = "
        use crate::{a::{b, c as d, e::{self, f::*}}, g as _};
        use super::super::h;
        use ::std::fmt;
        ";
    let toks = tokens(text);
    let (mut imports, mut i) = (Vec::new(), 0);
    while i < toks.len() {
        i = use_tree(&toks, i + 1, Vec::new(), &mut imports);
    }
    let read = Vec::from_iter(imports.iter().map(|import| {
        let name = import.name.as_deref().unwrap_or("-");
        format!(
            "{name} {}{}",
            import.path.join("::"),
            if import.glob { "::*" } else { "" }
        )
    }));
    let expected = [
        "b crate::a::b",
        "d crate::a::c",
        "e crate::a::e",
        "- crate::a::e::f::*",
        "- crate::g",
        "h super::super::h",
        "fmt ::std::fmt",
    ];
    assert_eq!(read, expected);
}
