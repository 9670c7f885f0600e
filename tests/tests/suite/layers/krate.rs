//! A crate as the reader sees it: its modules, and what each imports, defines, writes and calls.

use std::collections::{BTreeMap, BTreeSet};

use super::tokens::Token;

/// A path written in the sources: its words as written (`crate`, `self`, `super` and `Self` kept), where, and
/// the type `Self` stands for there (inside an `impl`).
#[derive(Clone, Debug)]
pub(super) struct Written {
    pub(super) path: Vec<String>,
    pub(super) line: usize,
    pub(super) self_type: Option<Vec<String>>,
}

/// A name a `use` brings in: the name (none for a glob or `as _`), the path it stands for as written (`self`
/// resolved to its parent: `use a::{self}` is `a`), whether a glob, and its line.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Import {
    pub(super) name: Option<String>,
    pub(super) path: Vec<String>,
    pub(super) glob: bool,
    pub(super) line: usize,
}

/// A method an `impl` defines: the type as the `impl` writes it, and the method's name and line.
#[derive(Clone, Debug)]
pub(super) struct Method {
    pub(super) ty: Vec<String>,
    pub(super) name: String,
    pub(super) line: usize,
}

/// A method call (`receiver.method(..)`): the method's name, the index of that name among its file's tokens
/// and its line, the type `Self` stands for there, and the index where the enclosing function starts.
#[derive(Clone, Debug)]
pub(super) struct Call {
    pub(super) method: String,
    pub(super) at: usize,
    pub(super) line: usize,
    pub(super) self_type: Option<Vec<String>>,
    pub(super) fn_start: usize,
}

/// A module: its file (under `src`), whether it is test code alone (`#[cfg(test)]`, or inside such a module),
/// its child modules, its imports, the names it defines, the paths its code writes (imports' included), the
/// methods its `impl`s define and the method calls it makes; and for what a call's receiver is, its structs'
/// fields, its enums' one-field variants and its functions' return types (each a type as written).
#[derive(Default)]
pub(super) struct Module {
    pub(super) file: String,
    pub(super) test: bool,
    pub(super) children: BTreeSet<String>,
    pub(super) imports: Vec<Import>,
    pub(super) defines: BTreeSet<String>,
    pub(super) written: Vec<Written>,
    pub(super) methods: Vec<Method>,
    pub(super) calls: Vec<Call>,
    pub(super) fields: BTreeMap<String, Vec<(String, Vec<Token>)>>,
    pub(super) variants: BTreeMap<(String, String), Vec<Token>>,
    pub(super) returns: BTreeMap<String, Vec<Token>>,
}

/// A crate read from its sources, from `lib.rs` down the `mod` declarations: its modules by path (the root is
/// `[]`, `backend/redis/mod.rs` is `[backend, redis]`, an inline `mod tests` adds `tests`), and each file's
/// tokens.
pub(super) struct Crate {
    pub(super) modules: BTreeMap<Vec<String>, Module>,
    pub(super) tokens: BTreeMap<String, Vec<Token>>,
}

/// What a path reaches: the module that defines what it names (re-exports followed), and the words after
/// that module, the item first (`crate::backend::redis::Breaker::failed` is module
/// `[backend, redis, failure, breaker]`, item `[Breaker, failed]`; a module itself has no item).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Target {
    pub(super) module: Vec<String>,
    pub(super) item: Vec<String>,
}

impl Module {
    /// An empty module of `file`.
    pub(super) fn of(file: &str, test: bool) -> Module {
        Module {
            file: file.to_owned(),
            test,
            ..Module::default()
        }
    }
}
