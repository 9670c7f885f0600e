//! The runtime reads top-down: each of its modules uses only modules of its own layer or the layers below, no
//! modules use each other in a circle, the Redis backend's rooms keep their own order, and one file knows the
//! order of a decision on Redis. Read from the sources by a small reader of Rust (tokens, `use` trees, paths
//! written inline, re-exports followed to where an item is defined, what a method call calls), itself tested
//! first on made-up sources, so that a new import or call that breaks the layering fails here, naming it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

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
// Tokens.

/// A token of Rust source: what the reader needs of it. Comments are dropped; a literal keeps only a string's
/// text (a `#[path = ".."]` needs it).
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// A word: an identifier or a keyword (`r#type` is `type`). A `$` is dropped: `$crate` is `crate`. A byte
    /// or C string's prefix is a word of its own (`b"x"` is `b` and `"x"`).
    Word(String),
    /// Punctuation: `::`, `->` and `=>` as one token, any other character alone.
    Punct(String),
    /// A string literal's text (escapes left as written).
    Str(String),
    /// Any other literal (a number, a character), or a lifetime.
    Other,
}

/// A token and the line it starts on (from 1).
#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

impl Token {
    /// Whether this is the word `word`.
    fn is_word(&self, word: &str) -> bool {
        matches!(&self.tok, Tok::Word(w) if w == word)
    }

    /// Whether this is the punctuation `punct`.
    fn is(&self, punct: &str) -> bool {
        matches!(&self.tok, Tok::Punct(p) if p == punct)
    }

    /// The word this is, if it is one.
    fn word(&self) -> Option<&str> {
        match &self.tok {
            Tok::Word(w) => Some(w),
            _ => None,
        }
    }
}

/// Splits `text` into tokens: comments (nested block comments too, doc comments alike) dropped, strings (raw,
/// byte and C strings too) and characters read whole, lifetimes told from characters.
fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let (mut out, mut i, mut line) = (Vec::new(), 0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let word_char = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        let (c, start_line) = (chars[i], line);
        let mut push = |tok| {
            out.push(Token {
                tok,
                line: start_line,
            })
        };
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            loop {
                if i >= chars.len() {
                    break;
                } else if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    line += usize::from(chars[i] == '\n');
                    i += 1;
                }
            }
        } else if c == '"' {
            let (text, next, lines) = quoted(&chars, i + 1);
            push(Tok::Str(text));
            (i, line) = (next, line + lines);
        } else if c == '\'' {
            if at(i + 1) == '\\' || (at(i + 2) == '\'' && at(i + 1) != '\'') {
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            } else {
                i += 1;
                while i < chars.len() && word_char(chars[i]) {
                    i += 1;
                }
            }
            push(Tok::Other);
        } else if c.is_ascii_digit() {
            while i < chars.len()
                && (word_char(chars[i]) || (chars[i] == '.' && at(i + 1).is_ascii_digit()))
            {
                i += 1;
            }
            push(Tok::Other);
        } else if word_char(c) {
            let start = i;
            while i < chars.len() && word_char(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let raw = matches!(word.as_str(), "r" | "br" | "cr");
            if raw && (at(i) == '"' || (at(i) == '#' && matches!(at(i + 1), '#' | '"'))) {
                let hashes = chars[i..].iter().take_while(|c| **c == '#').count();
                let open = i + hashes + 1;
                let mut end = open;
                while end < chars.len()
                    && !(chars[end] == '"' && (1..=hashes).all(|k| at(end + k) == '#'))
                {
                    end += 1;
                }
                let text: String = chars[open..end.min(chars.len())].iter().collect();
                line += text.matches('\n').count();
                push(Tok::Str(text));
                i = end + 1 + hashes;
            } else if word == "r" && at(i) == '#' && word_char(at(i + 1)) {
                let start = i + 1;
                i = start;
                while i < chars.len() && word_char(chars[i]) {
                    i += 1;
                }
                push(Tok::Word(chars[start..i].iter().collect()));
            } else {
                push(Tok::Word(word));
            }
        } else if c == '$' {
            i += 1;
        } else {
            let pair: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            if matches!(pair.as_str(), "::" | "->" | "=>") {
                push(Tok::Punct(pair));
                i += 2;
            } else {
                push(Tok::Punct(c.to_string()));
                i += 1;
            }
        }
    }
    out
}

/// A string's text from `start` (after its opening quote) to its closing one: the text, the index after the
/// closing quote, and how many lines it spans.
fn quoted(chars: &[char], start: usize) -> (String, usize, usize) {
    let mut i = start;
    while i < chars.len() && chars[i] != '"' {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    let text: String = chars[start..i.min(chars.len())].iter().collect();
    let lines = text.matches('\n').count();
    (text, i + 1, lines)
}

// ---------------------------------------------------------------------------------------------------------
// A crate as the reader sees it: its modules, and what each imports, defines, writes and calls.

/// A path written in the sources: its words as written (`crate`, `self`, `super` and `Self` kept), where, and
/// the type `Self` stands for there (inside an `impl`).
#[derive(Clone, Debug)]
struct Written {
    path: Vec<String>,
    line: usize,
    self_type: Option<Vec<String>>,
}

/// A name a `use` brings in: the name (none for a glob or `as _`), the path it stands for as written (`self`
/// resolved to its parent: `use a::{self}` is `a`), whether a glob, and its line.
#[derive(Clone, Debug, PartialEq)]
struct Import {
    name: Option<String>,
    path: Vec<String>,
    glob: bool,
    line: usize,
}

/// A method an `impl` defines: the type as the `impl` writes it, and the method's name and line.
#[derive(Clone, Debug)]
struct Method {
    ty: Vec<String>,
    name: String,
    line: usize,
}

/// A method call (`receiver.method(..)`): the method's name, the index of that name among its file's tokens
/// and its line, the type `Self` stands for there, and the index where the enclosing function starts.
#[derive(Clone, Debug)]
struct Call {
    method: String,
    at: usize,
    line: usize,
    self_type: Option<Vec<String>>,
    fn_start: usize,
}

/// A module: its file (under `src`), whether it is test code alone (`#[cfg(test)]`, or inside such a module),
/// its child modules, its imports, the names it defines, the paths its code writes (imports' included), the
/// methods its `impl`s define and the method calls it makes; and for what a call's receiver is, its structs'
/// fields, its enums' one-field variants and its functions' return types (each a type as written).
#[derive(Default)]
struct Module {
    file: String,
    test: bool,
    children: BTreeSet<String>,
    imports: Vec<Import>,
    defines: BTreeSet<String>,
    written: Vec<Written>,
    methods: Vec<Method>,
    calls: Vec<Call>,
    fields: BTreeMap<String, Vec<(String, Vec<Token>)>>,
    variants: BTreeMap<(String, String), Vec<Token>>,
    returns: BTreeMap<String, Vec<Token>>,
}

/// A crate read from its sources, from `lib.rs` down the `mod` declarations: its modules by path (the root is
/// `[]`, `backend/redis/mod.rs` is `[backend, redis]`, an inline `mod tests` adds `tests`), and each file's
/// tokens.
struct Crate {
    modules: BTreeMap<Vec<String>, Module>,
    tokens: BTreeMap<String, Vec<Token>>,
}

/// What a path reaches: the module that defines what it names (re-exports followed), and the words after
/// that module, the item first (`crate::backend::redis::Breaker::failed` is module
/// `[backend, redis, failure, breaker]`, item `[Breaker, failed]`; a module itself has no item).
#[derive(Clone, Debug, PartialEq)]
struct Target {
    module: Vec<String>,
    item: Vec<String>,
}

/// A scope the reader is in: a module (its path, the folder its `mod x;` files are in, whether test code), an
/// `impl` (its type as written), a function (where it starts), or any other block.
enum Scope {
    Module(Vec<String>, String, bool),
    Impl(Vec<String>),
    Fn(usize),
    Block,
}

impl Crate {
    /// Reads the crate of `sources`, from its `lib.rs`.
    fn read(sources: &Sources) -> Crate {
        let mut krate = Crate {
            modules: BTreeMap::new(),
            tokens: BTreeMap::new(),
        };
        let mut files = vec![("lib.rs".to_owned(), Vec::new(), false)];
        while let Some((file, path, test)) = files.pop() {
            let folder = format!("{}/mod.rs", file.trim_end_matches(".rs"));
            let file = if sources.contains_key(&file) {
                file
            } else {
                folder
            };
            if let Some(text) = sources.get(&file) {
                files.extend(krate.read_file(&file, text, path, test));
            }
        }
        krate
    }

    /// Reads one file of module `path`: its modules (inline ones too), returning the files of the modules it
    /// declares (`mod x;`), each with its module path and whether test code.
    fn read_file(
        &mut self,
        file: &str,
        text: &str,
        path: Vec<String>,
        test: bool,
    ) -> Vec<(String, Vec<String>, bool)> {
        let folder = match file.rsplit_once('/') {
            _ if file == "lib.rs" => String::new(),
            Some((folder, "mod.rs")) => format!("{folder}/"),
            _ => format!("{}/", file.trim_end_matches(".rs")),
        };
        self.modules.insert(path.clone(), Module::of(file, test));
        let mut reader = FileReader {
            krate: self,
            file,
            toks: tokens(text),
            scopes: vec![(Scope::Module(path, folder, test), 0)],
            depth: 0,
            parens: 0,
            pending: None,
            attrs: Vec::new(),
            declared: Vec::new(),
        };
        let mut i = 0;
        while i < reader.toks.len() {
            i = reader.step(i);
        }
        let (toks, declared) = (reader.toks, reader.declared);
        self.tokens.insert(file.to_owned(), toks);
        declared
    }
}

impl Module {
    /// An empty module of `file`.
    fn of(file: &str, test: bool) -> Module {
        Module {
            file: file.to_owned(),
            test,
            ..Module::default()
        }
    }
}

/// Reads one file, token by token: the scopes it is in (each with the brace depth it opened at), the scope
/// the next `{` opens (with the bracket depth it was announced at: a `;` there ends it), the attributes
/// waiting for their item, and the files of the modules declared.
struct FileReader<'a> {
    krate: &'a mut Crate,
    file: &'a str,
    toks: Vec<Token>,
    scopes: Vec<(Scope, usize)>,
    depth: usize,
    parens: usize,
    pending: Option<(Scope, usize)>,
    attrs: Vec<Vec<Token>>,
    declared: Vec<(String, Vec<String>, bool)>,
}

impl FileReader<'_> {
    /// The module the reader is in: its path, the folder of its `mod x;` files, whether test code.
    fn module(&self) -> (Vec<String>, String, bool) {
        let module = self.scopes.iter().rev().find_map(|(scope, _)| match scope {
            Scope::Module(path, folder, test) => Some((path.clone(), folder.clone(), *test)),
            _ => None,
        });
        module.unwrap()
    }

    /// The module the reader is in, to write what it reads there.
    fn this(&mut self) -> &mut Module {
        let (path, ..) = self.module();
        self.krate.modules.get_mut(&path).unwrap()
    }

    /// The type `Self` stands for where the reader is: the `impl`'s, as written.
    fn self_type(&self) -> Option<Vec<String>> {
        self.scopes.iter().rev().find_map(|(scope, _)| match scope {
            Scope::Impl(ty) => Some(ty.clone()),
            _ => None,
        })
    }

    /// Whether the reader is right inside a module (else in a function, an `impl`, a block).
    fn at_module_level(&self) -> bool {
        matches!(self.scopes.last(), Some((Scope::Module(..), _)))
    }

    /// Reads the token at `i` (and what it starts), returning the index of the next one to read.
    fn step(&mut self, i: usize) -> usize {
        let toks = &self.toks;
        let next = |k: usize| toks.get(i + k);
        let previous = i.checked_sub(1).map(|p| &toks[p]);
        let item_start = previous
            .is_none_or(|t| ["}", ";", "{", "]"].iter().any(|p| t.is(p)) || t.is_word("unsafe"));
        let word = toks[i].word().map(str::to_owned);
        let named = next(1).and_then(Token::word).map(str::to_owned);
        let next = match (&toks[i].tok, word.as_deref(), named) {
            (Tok::Punct(p), ..) if p == "#" => self.attribute(i),
            (Tok::Punct(p), ..) if p == "." && !previous.is_some_and(|t| t.is(".")) => {
                self.call(i);
                i + 1
            }
            (Tok::Punct(p), ..) => {
                self.punct(&p.clone());
                i + 1
            }
            (_, Some("pub"), _) if next(1).is_some_and(|t| t.is("(")) => matching(toks, i + 1) + 1,
            (_, Some("use"), _) => self.use_item(i),
            (_, Some("mod"), Some(name)) => self.mod_item(i, name),
            (_, Some("impl"), _) if item_start => {
                let ty = impl_type(&toks[i + 1..]);
                self.pending = Some((Scope::Impl(ty), self.parens));
                i + 1
            }
            (_, Some("fn"), Some(name)) => self.fn_item(i, name),
            (_, Some("macro_rules"), _) if next(1).is_some_and(|t| t.is("!")) => {
                let name = next(2).and_then(Token::word).map(str::to_owned);
                self.this().defines.extend(name);
                i + 1
            }
            (_, Some(kind), Some(name))
                if self.at_module_level()
                    && [
                        "struct", "enum", "union", "trait", "type", "const", "static",
                    ]
                    .contains(&kind)
                    && name != "fn" =>
            {
                self.type_item(i, kind, name)
            }
            (_, Some(_), _)
                if next(1).is_some_and(|t| t.is("::"))
                    && !previous.is_some_and(|t| t.is("::") || t.is(".")) =>
            {
                self.path(i)
            }
            _ => i + 1,
        };
        let keeps = matches!(
            word.as_deref(),
            Some("pub" | "unsafe" | "async" | "extern" | "default")
        );
        if !keeps && !self.toks[i].is("#") {
            self.attrs.clear();
        }
        next
    }

    /// An attribute (`#[..]`, `#![..]`) at `i`: kept for the item it is on.
    fn attribute(&mut self, i: usize) -> usize {
        let open = (i + 1..(i + 3).min(self.toks.len())).find(|&k| self.toks[k].is("["));
        let Some(open) = open else {
            return i + 1;
        };
        let close = matching(&self.toks, open);
        self.attrs.push(self.toks[open + 1..close].to_vec());
        close + 1
    }

    /// Punctuation: braces open and close scopes, brackets are counted, a `;` ends what was announced.
    fn punct(&mut self, p: &str) {
        match p {
            "{" => {
                let scope = self.pending.take().map_or(Scope::Block, |(scope, _)| scope);
                self.scopes.push((scope, self.depth));
                self.depth += 1;
            }
            "}" => {
                self.depth -= 1;
                if self.scopes.last().is_some_and(|(_, at)| *at == self.depth) {
                    self.scopes.pop();
                }
            }
            "(" | "[" => self.parens += 1,
            ")" | "]" => self.parens -= 1,
            ";" if self
                .pending
                .as_ref()
                .is_some_and(|(_, at)| *at == self.parens) =>
            {
                self.pending = None;
            }
            _ => {}
        }
    }

    /// A `.` at `i`: a method call if a name and `(` follow (a turbofish between them too).
    fn call(&mut self, i: usize) {
        let toks = &self.toks;
        let Some(method) = toks.get(i + 1).and_then(Token::word) else {
            return;
        };
        let open = match toks.get(i + 2) {
            Some(t) if t.is("::") && toks.get(i + 3).is_some_and(|t| t.is("<")) => {
                matching(toks, i + 3) + 1
            }
            _ => i + 2,
        };
        if !toks.get(open).is_some_and(|t| t.is("(")) {
            return;
        }
        let fn_start = self.scopes.iter().rev().find_map(|(scope, _)| match scope {
            Scope::Fn(start) => Some(*start),
            _ => None,
        });
        let call = Call {
            method: method.to_owned(),
            at: i + 1,
            line: toks[i + 1].line,
            self_type: self.self_type(),
            fn_start: fn_start.unwrap_or(0),
        };
        self.this().calls.push(call);
    }

    /// A `use` at `i`: its names imported, its paths written.
    fn use_item(&mut self, i: usize) -> usize {
        let mut imports = Vec::new();
        let next = use_tree(&self.toks, i + 1, Vec::new(), &mut imports);
        let self_type = self.self_type();
        let this = self.this();
        for import in imports {
            this.written.push(Written {
                path: import.path.clone(),
                line: import.line,
                self_type: self_type.clone(),
            });
            this.imports.push(import);
        }
        next
    }

    /// A `mod name` at `i`: a child module, in its file (`mod name;`, where a `#[path]` says or in the
    /// folder's) or inline (`mod name { .. }`), test code if `#[cfg(test)]` says so.
    fn mod_item(&mut self, i: usize, name: String) -> usize {
        let (module, folder, test) = self.module();
        let test = test
            || self
                .attrs
                .iter()
                .any(|a| words(a) == ["cfg", "(", "test", ")"]);
        let file_attr = self.attrs.iter().find_map(|a| match a.as_slice() {
            [path, eq, Token {
                tok: Tok::Str(f), ..
            }] if path.is_word("path") && eq.is("=") => Some(f.clone()),
            _ => None,
        });
        self.this().children.insert(name.clone());
        let child = [module, vec![name.clone()]].concat();
        if self.toks.get(i + 2).is_some_and(|t| t.is(";")) {
            let own_folder = self.file.rsplit_once('/').map_or("", |(f, _)| f);
            let child_file = match file_attr {
                Some(f) => normal(&format!("{own_folder}/{f}")),
                None => format!("{folder}{name}.rs"),
            };
            self.declared.push((child_file, child, test));
        } else {
            let module = Module::of(self.file, test);
            self.krate.modules.insert(child.clone(), module);
            let scope = Scope::Module(child, format!("{folder}{name}/"), test);
            self.pending = Some((scope, self.parens));
        }
        i + 2
    }

    /// A `fn name` at `i`: a method of the `impl` it is in, or a function the module defines (with its
    /// return type); its body a function's scope.
    fn fn_item(&mut self, i: usize, name: String) -> usize {
        let line = self.toks[i + 1].line;
        let returned = return_type(&self.toks[i + 2..]);
        let in_impl = matches!(self.scopes.last(), Some((Scope::Impl(_), _)));
        let at_module_level = self.at_module_level();
        let ty = self.self_type().unwrap_or_default();
        let this = self.this();
        if in_impl {
            this.methods.push(Method { ty, name, line });
        } else if at_module_level {
            this.defines.insert(name.clone());
            this.returns
                .extend(returned.map(|returned| (name, returned)));
        }
        self.pending = Some((Scope::Fn(i), self.parens));
        i + 2
    }

    /// A type or another named item `kind name` at `i` the module defines: a struct's fields and an enum's
    /// one-field variants kept.
    fn type_item(&mut self, i: usize, kind: &str, name: String) -> usize {
        let fields = fields(&self.toks[i + 2..]);
        let variants = variants(&self.toks[i + 2..]);
        let this = self.this();
        if kind == "struct" {
            this.fields.insert(name.clone(), fields);
        } else if kind == "enum" {
            for (variant, ty) in variants {
                this.variants.insert((name.clone(), variant), ty);
            }
        }
        this.defines.insert(name);
        i + 2
    }

    /// A path at `i` (`a::b::c`), written.
    fn path(&mut self, i: usize) -> usize {
        let (path, end) = path_at(&self.toks, i);
        let line = self.toks[i].line;
        let self_type = self.self_type();
        if path.len() > 1 {
            self.this().written.push(Written {
                path,
                line,
                self_type,
            });
        }
        end
    }
}

// ---------------------------------------------------------------------------------------------------------
// Reading items: `use` trees, paths, an `impl`'s type, a function's return type, fields and variants.

/// The index of the bracket that closes the one at `open` (`(`, `[`, `{` or `<`); the last token's if none.
fn matching(toks: &[Token], open: usize) -> usize {
    let (opens, closes) = match &toks[open].tok {
        Tok::Punct(p) if p == "<" => ("<", ">"),
        Tok::Punct(p) if p == "{" => ("{", "}"),
        Tok::Punct(p) if p == "[" => ("[", "]"),
        _ => ("(", ")"),
    };
    let mut depth = 0;
    for (k, token) in toks.iter().enumerate().skip(open) {
        if token.is(opens) {
            depth += 1;
        } else if token.is(closes) {
            depth -= 1;
            if depth == 0 {
                return k;
            }
        }
    }
    toks.len() - 1
}

/// The tokens as text (a string quoted), to compare an attribute or a type with what is expected.
fn words(toks: &[Token]) -> Vec<String> {
    toks.iter()
        .map(|t| match &t.tok {
            Tok::Word(w) | Tok::Punct(w) => w.clone(),
            Tok::Str(s) => format!("{s:?}"),
            Tok::Other => "'".to_owned(),
        })
        .collect()
}

/// `path` with its `..` and `.` folded (`a/b/../c.rs` is `a/c.rs`).
fn normal(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            ".." if parts.last().is_some_and(|p| *p != "..") => {
                parts.pop();
            }
            "." | "" => {}
            _ => parts.push(part),
        }
    }
    parts.join("/")
}

/// Reads the `use` tree from `i` (after `use`) into `imports`, returning the index after its `;`.
fn use_tree(toks: &[Token], i: usize, prefix: Vec<String>, imports: &mut Vec<Import>) -> usize {
    let mut i = use_subtree(toks, i, prefix, imports);
    while i < toks.len() && !toks[i].is(";") {
        i += 1;
    }
    i + 1
}

/// Reads one tree of a `use` (a path, a group `{..}` of trees, a glob, each maybe renamed), every path under
/// `prefix`; returns the index after it. A path from outside the crate (`::std`) starts with an empty word.
fn use_subtree(
    toks: &[Token],
    mut i: usize,
    mut path: Vec<String>,
    imports: &mut Vec<Import>,
) -> usize {
    if toks.get(i).is_some_and(|t| t.is("::")) {
        if path.is_empty() {
            path.push(String::new());
        }
        i += 1;
    }
    while let Some(token) = toks.get(i) {
        if let Some(word) = token.word() {
            path.push(word.to_owned());
            i += 1;
            if toks.get(i).is_some_and(|t| t.is("::")) {
                i += 1;
                continue;
            }
            if word == "self" {
                path.pop();
            }
            let mut name = path.last().cloned();
            if toks.get(i).is_some_and(|t| t.is_word("as")) {
                name = toks
                    .get(i + 1)
                    .and_then(Token::word)
                    .filter(|n| *n != "_")
                    .map(str::to_owned);
                i += 2;
            }
            imports.push(Import {
                name,
                path,
                glob: false,
                line: token.line,
            });
            return i;
        } else if token.is("{") {
            i += 1;
            while toks.get(i).is_some_and(|t| !t.is("}")) {
                i = use_subtree(toks, i, path.clone(), imports);
                if toks.get(i).is_some_and(|t| t.is(",")) {
                    i += 1;
                }
            }
            return i + 1;
        } else if token.is("*") {
            imports.push(Import {
                name: None,
                path,
                glob: true,
                line: token.line,
            });
            return i + 1;
        } else {
            return i + 1;
        }
    }
    i
}

/// The path written at `i` (`a::b::C`, up to a `::<`, `::{` or `::*`), and the index after it.
fn path_at(toks: &[Token], mut i: usize) -> (Vec<String>, usize) {
    let mut path = Vec::new();
    while let Some(word) = toks.get(i).and_then(Token::word) {
        path.push(word.to_owned());
        i += 1;
        if !(toks.get(i).is_some_and(|t| t.is("::"))
            && toks.get(i + 1).and_then(Token::word).is_some())
        {
            break;
        }
        i += 1;
    }
    (path, i)
}

/// The path of a type written from `toks[0]`, references, lifetimes, `mut` and `dyn` skipped, and the
/// pointers that call through to what they hold unwrapped (`&'a Arc<Breaker>` is `Breaker`); none when it is
/// not a path (a tuple, a slice, a function).
fn type_path(toks: &[Token]) -> Option<Vec<String>> {
    let mut i = 0;
    while toks
        .get(i)
        .is_some_and(|t| t.is("&") || t.is_word("mut") || t.is_word("dyn") || t.tok == Tok::Other)
    {
        i += 1;
    }
    let (path, end) = path_at(toks, i);
    let pointer = matches!(path.last().map(String::as_str), Some("Arc" | "Box" | "Rc"));
    if pointer && toks.get(end).is_some_and(|t| t.is("<")) {
        return type_path(&toks[end + 1..]);
    }
    (!path.is_empty()).then_some(path)
}

/// The type an `impl` is for, from the tokens after `impl`: after `for` if it implements a trait, else after
/// its generics.
fn impl_type(toks: &[Token]) -> Vec<String> {
    let head = &toks[..toks.iter().position(|t| t.is("{")).unwrap_or(toks.len())];
    let mut start = if head.first().is_some_and(|t| t.is("<")) {
        matching(head, 0) + 1
    } else {
        0
    };
    let mut depth = 0;
    for (k, token) in head.iter().enumerate().skip(start) {
        if token.is("<") {
            depth += 1;
        } else if token.is(">") {
            depth -= 1;
        } else if token.is_word("where") && depth == 0 {
            break;
        } else if token.is_word("for") && depth == 0 && !head.get(k + 1).is_some_and(|t| t.is("<"))
        {
            start = k + 1;
            break;
        }
    }
    type_path(&head[start..]).unwrap_or_default()
}

/// A function's return type as written, from the tokens after its name: none when it returns nothing.
fn return_type(toks: &[Token]) -> Option<Vec<Token>> {
    let mut i = 0;
    if toks.first().is_some_and(|t| t.is("<")) {
        i = matching(toks, 0) + 1;
    }
    if !toks.get(i).is_some_and(|t| t.is("(")) {
        return None;
    }
    i = matching(toks, i) + 1;
    if !toks.get(i).is_some_and(|t| t.is("->")) {
        return None;
    }
    let end = toks[i..]
        .iter()
        .position(|t| t.is("{") || t.is(";") || t.is_word("where"))
        .map_or(toks.len(), |k| i + k);
    Some(toks[i + 1..end].to_vec())
}

/// A struct's or an enum's body, from the tokens after its name: the tokens between its braces (none for a
/// unit or tuple struct).
fn body(toks: &[Token]) -> &[Token] {
    let Some(open) = toks
        .iter()
        .position(|t| t.is("{") || t.is(";") || t.is("("))
    else {
        return &[];
    };
    if !toks[open].is("{") {
        return &[];
    }
    &toks[open + 1..matching(toks, open)]
}

/// The body's entries split at its top-level commas, attributes and visibility dropped from each.
fn entries(body: &[Token]) -> Vec<&[Token]> {
    let (mut out, mut start, mut depth) = (Vec::new(), 0, 0);
    for (k, token) in body.iter().enumerate() {
        match &token.tok {
            Tok::Punct(p) if matches!(p.as_str(), "(" | "[" | "{" | "<") => depth += 1,
            Tok::Punct(p) if matches!(p.as_str(), ")" | "]" | "}" | ">") => depth -= 1,
            Tok::Punct(p) if p == "," && depth == 0 => {
                out.push(&body[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    out.push(&body[start..]);
    out.into_iter()
        .map(|mut entry| loop {
            if entry.first().is_some_and(|t| t.is("#")) && entry.len() > 1 {
                entry = &entry[matching(entry, 1) + 1..];
            } else if entry.first().is_some_and(|t| t.is_word("pub")) {
                let skip = if entry.get(1).is_some_and(|t| t.is("(")) {
                    matching(entry, 1) + 1
                } else {
                    1
                };
                entry = &entry[skip..];
            } else {
                return entry;
            }
        })
        .filter(|entry| !entry.is_empty())
        .collect()
}

/// A struct's named fields, each with its type as written, from the tokens after the struct's name.
fn fields(toks: &[Token]) -> Vec<(String, Vec<Token>)> {
    entries(body(toks))
        .into_iter()
        .filter_map(|entry| match entry {
            [name, colon, ty @ ..] if colon.is(":") => Some((name.word()?.to_owned(), ty.to_vec())),
            _ => None,
        })
        .collect()
}

/// An enum's variants that hold one value (`State(State)`), each with that value's type as written, from the
/// tokens after the enum's name.
fn variants(toks: &[Token]) -> Vec<(String, Vec<Token>)> {
    entries(body(toks))
        .into_iter()
        .filter_map(|entry| match entry {
            [name, open, inner @ .., close] if open.is("(") && close.is(")") => {
                let one = entries(inner).len() == 1;
                one.then(|| Some((name.word()?.to_owned(), inner.to_vec())))?
            }
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------------------
// Resolving: where a path written in a module leads.

/// How many imports the reader follows from one path before it gives up (a loop of re-exports).
const FOLLOWS: usize = 16;

impl Crate {
    /// Where `path`, written in module `from`, leads: `crate::`, `self::`, `super::` (repeated too), a child
    /// module's name, or a name `from` imports (by name or through a glob) or defines; none when it leaves
    /// the crate (a dependency, the standard library) or names something local (a variable, a generic).
    fn resolve(&self, from: &[String], path: &[String]) -> Option<Target> {
        self.resolve_within(from, path, 0)
    }

    /// [`Crate::resolve`], `follows` imports followed so far.
    fn resolve_within(&self, from: &[String], path: &[String], follows: usize) -> Option<Target> {
        let first = path.first()?;
        if follows > FOLLOWS {
            return None;
        }
        match first.as_str() {
            "" => None,
            "crate" => self.walk(Vec::new(), &path[1..], follows),
            "self" => self.walk(from.to_vec(), &path[1..], follows),
            "super" => {
                let mut module = from.to_vec();
                let supers = path.iter().take_while(|w| *w == "super").count();
                for _ in 0..supers {
                    module.pop()?;
                }
                self.walk(module, &path[supers..], follows)
            }
            _ => {
                let module = self.modules.get(from)?;
                if module.children.contains(first) {
                    self.walk(from.to_vec(), path, follows)
                } else if module.defines.contains(first) {
                    Some(Target {
                        module: from.to_vec(),
                        item: path.to_vec(),
                    })
                } else {
                    self.imported(from, path, follows)
                }
            }
        }
    }

    /// Walks `rest` down from module `at`: a child module is entered, a name `at` imports is followed, and a
    /// name it defines (or one the reader cannot place) is what the path reaches, in `at`.
    fn walk(&self, mut at: Vec<String>, rest: &[String], follows: usize) -> Option<Target> {
        for (k, word) in rest.iter().enumerate() {
            let module = self.modules.get(&at);
            if module.is_some_and(|m| m.children.contains(word)) {
                at.push(word.clone());
                continue;
            }
            if module.is_some_and(|m| !m.defines.contains(word)) {
                if let Some(found) = self.imported(&at, &rest[k..], follows) {
                    return Some(found);
                }
            }
            return Some(Target {
                module: at,
                item: rest[k..].to_vec(),
            });
        }
        Some(Target {
            module: at,
            item: Vec::new(),
        })
    }

    /// Where `path` leads when module `at` imports its first word: by name, else through a glob of a module
    /// that has that word; none when `at` does not import it.
    fn imported(&self, at: &[String], path: &[String], follows: usize) -> Option<Target> {
        let module = self.modules.get(at)?;
        let word = path.first()?;
        let named = module
            .imports
            .iter()
            .find(|import| !import.glob && import.name.as_ref() == Some(word));
        if let Some(import) = named {
            let mut full = import.path.clone();
            full.extend_from_slice(&path[1..]);
            return self.resolve_within(at, &full, follows + 1);
        }
        for import in module.imports.iter().filter(|import| import.glob) {
            let Some(glob) = self.resolve_within(at, &import.path, follows + 1) else {
                continue;
            };
            let Some(globbed) = self
                .modules
                .get(&glob.module)
                .filter(|_| glob.item.is_empty())
            else {
                continue;
            };
            if globbed.children.contains(word) || globbed.defines.contains(word) {
                return self.walk(glob.module, path, follows + 1);
            }
            if let Some(found) = self.imported(&glob.module, path, follows + 1) {
                return Some(found);
            }
        }
        None
    }

    /// The module a path written in module `from` names as it is written: its first word placed by `from`
    /// itself (`crate`, `self`, `super`, a child, an import of `from`'s), then child modules walked, a
    /// re-export of another module not followed (`crate::backend::X` names `backend` even when `backend`
    /// re-exports `X` from one of its own); none for a path that leaves the crate or starts at a name `from`
    /// defines.
    fn written_module(&self, from: &[String], path: &[String]) -> Option<Vec<String>> {
        self.written_within(from, path, 0)
    }

    /// [`Crate::written_module`], `follows` imports followed so far.
    fn written_within(
        &self,
        from: &[String],
        path: &[String],
        follows: usize,
    ) -> Option<Vec<String>> {
        let first = path.first()?;
        let supers = path.iter().take_while(|w| *w == "super").count();
        let (mut at, rest) = match first.as_str() {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (from.to_vec(), &path[1..]),
            "super" => (
                from[..from.len().checked_sub(supers)?].to_vec(),
                &path[supers..],
            ),
            _ if self.modules.get(from)?.children.contains(first) => (from.to_vec(), path),
            _ if follows <= FOLLOWS => {
                let module = self.modules.get(from)?;
                let import = module
                    .imports
                    .iter()
                    .find(|i| !i.glob && i.name.as_ref() == Some(first))?;
                let full = [import.path.as_slice(), &path[1..]].concat();
                return self.written_within(from, &full, follows + 1);
            }
            _ => return None,
        };
        for word in rest {
            if !self
                .modules
                .get(&at)
                .is_some_and(|m| m.children.contains(word))
            {
                break;
            }
            at.push(word.clone());
        }
        Some(at)
    }

    /// The file that holds module `module` (of the nearest module the reader read, for one it could not).
    fn file_of(&self, module: &[String]) -> &str {
        (0..=module.len())
            .rev()
            .find_map(|n| self.modules.get(&module[..n]))
            .map_or("lib.rs", |m| m.file.as_str())
    }

    /// Every path each module writes, with where it leads: the module that writes it, the path, and its
    /// target. Paths that leave the crate are left out.
    fn reached(&self) -> Vec<(&[String], &Module, &Written, Target)> {
        let mut out = Vec::new();
        for (path, module) in &self.modules {
            for written in &module.written {
                if let Some(target) = self.resolve(path, &written.path) {
                    out.push((path.as_slice(), module, written, target));
                }
            }
        }
        out
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

// ---------------------------------------------------------------------------------------------------------
// What a method call calls: the type of its receiver, as far as a reader of text can tell.

/// Where a call is written, for telling its receiver's type: the module, the file's tokens, the type `Self`
/// stands for and where the enclosing function starts.
struct Site<'a> {
    module: &'a [String],
    toks: &'a [Token],
    self_type: Option<&'a [String]>,
    fn_start: usize,
}

impl Crate {
    /// The type a type written as `toks` in module `module` is (references and pointers looked through):
    /// where it is defined and its name; none for one outside the crate or not a path.
    fn type_of(
        &self,
        module: &[String],
        toks: &[Token],
        self_type: Option<&[String]>,
    ) -> Option<Target> {
        self.type_named(module, &type_path(toks)?, self_type)
    }

    /// The type the path `path` names in module `module` (`Self` is `self_type`).
    fn type_named(
        &self,
        module: &[String],
        path: &[String],
        self_type: Option<&[String]>,
    ) -> Option<Target> {
        let path = match path.first().map(String::as_str) {
            Some("Self") => [self_type?, &path[1..]].concat(),
            _ => path.to_vec(),
        };
        let target = self.resolve(module, &path)?;
        (target.item.len() == 1).then_some(target)
    }

    /// The type of field `field` of type `of`; of unknown type, the type every struct with such a field gives
    /// it, if they agree.
    fn field_type(&self, of: Option<&Target>, field: &str) -> Option<Target> {
        if let Some(of) = of {
            let module = self.modules.get(&of.module)?;
            let (_, ty) = module
                .fields
                .get(&of.item[0])?
                .iter()
                .find(|(name, _)| name == field)?;
            return self.type_of(&of.module, ty, Some(&of.item));
        }
        let mut found = BTreeSet::new();
        for (path, module) in &self.modules {
            for (name, fields) in &module.fields {
                for (_, ty) in fields.iter().filter(|(f, _)| f == field) {
                    let own = [name.clone()];
                    found.insert(
                        self.type_of(path, ty, Some(&own))
                            .map(|t| (t.module, t.item)),
                    );
                }
            }
        }
        match found.len() {
            1 => found
                .pop_first()
                .unwrap()
                .map(|(module, item)| Target { module, item }),
            _ => None,
        }
    }

    /// The type of the receiver of the method call whose name is at `at` (after its `.`): a chain of fields
    /// from `self` or a local name (`self.breaker`, `redis.fallback`, `b`); none when the reader cannot tell.
    fn receiver_type(&self, site: &Site<'_>, at: usize) -> Option<Target> {
        let (toks, dot) = (site.toks, at - 1);
        // Back from the call's `.` over words and the dots between them: `self.breaker`, `b`.
        let mut start = dot;
        while start >= 1 && toks[start - 1].word().is_some() {
            start -= 1;
            match start >= 1 && toks[start - 1].is(".") {
                true => start -= 1,
                false => break,
            }
        }
        // A chain that hangs on something else (a call's result, an index, a path) is not read.
        let hangs = start >= 1 && (toks[start - 1].is("::") || toks[start - 1].is("."));
        if start == dot || toks[start].word().is_none() || hangs {
            return None;
        }
        self.chain_type(site, &toks[start..dot], start)
    }

    /// The type of a chain of fields `a.b.c` written at index `at` (its first word `self`, or a local name).
    fn chain_type(&self, site: &Site<'_>, chain: &[Token], at: usize) -> Option<Target> {
        let first = chain.first()?.word()?;
        let mut ty = match first {
            "self" => Some(self.type_named(site.module, site.self_type?, None)?),
            _ => self.binding_type(site, first, at),
        };
        for field in chain[1..].iter().filter_map(Token::word) {
            ty = Some(self.field_type(ty.as_ref(), field)?);
        }
        ty
    }

    /// The type of local name `name` where it is used at `at`: from its last binding before that in the
    /// enclosing function (a typed parameter, a `let` typed or whose value's type shows, a pattern of an
    /// `Option`, a `Result` or an enum's variant); none when that is not seen.
    fn binding_type(&self, site: &Site<'_>, name: &str, at: usize) -> Option<Target> {
        let toks = site.toks;
        let k = (site.fn_start..at).rev().find(|&k| {
            toks[k].is_word(name)
                && !toks
                    .get(k.wrapping_sub(1))
                    .is_some_and(|t| t.is(".") || t.is("::"))
                && toks.get(k + 1).is_some_and(|t| {
                    [":", "=", ")", ",", "|"].iter().any(|p| t.is(p)) || t.is_word("in")
                })
                && k >= 1
                && (["(", ",", "|"].iter().any(|p| toks[k - 1].is(p))
                    || ["let", "mut", "ref", "for"]
                        .iter()
                        .any(|w| toks[k - 1].is_word(w)))
        })?;
        let upto = |from: usize, stops: &[&str]| {
            let mut depth = 0i32;
            let end = (from..toks.len())
                .find(|&e| {
                    let t = &toks[e];
                    if ["(", "[", "{", "<"].iter().any(|p| t.is(p)) {
                        depth += 1;
                    } else if [")", "]", "}", ">"].iter().any(|p| t.is(p)) {
                        depth -= 1;
                    }
                    depth < 0 || (depth == 0 && stops.iter().any(|s| t.is(s) || t.is_word(s)))
                })
                .unwrap_or(toks.len());
            &toks[from..end]
        };
        if toks[k + 1].is(":") {
            return self.type_of(
                site.module,
                upto(k + 2, &["=", ",", "|", ";", ")"]),
                site.self_type,
            );
        }
        let mut before = k - 1;
        while toks[before].is_word("mut") || toks[before].is_word("ref") {
            before -= 1;
        }
        if toks[before].is_word("let") && toks[k + 1].is("=") {
            return self.value_type(site, upto(k + 2, &[";", "else"]), k + 2);
        }
        if toks[before].is("(") && toks[k + 1].is(")") {
            let mut p = before;
            while p >= 2 && toks[p - 1].word().is_some() && toks[p - 2].is("::") {
                p -= 2;
            }
            let (pattern, _) = path_at(toks, p - 1);
            if matches!(pattern.as_slice(), [one] if one == "Some" || one == "Ok") {
                let eq = (k..toks.len())
                    .find(|&e| toks[e].is("=") || toks[e].is("=>") || toks[e].is("{"))?;
                return self.value_type(site, upto(eq + 1, &[";", "else", "{"]), eq + 1);
            }
            let variant = self.resolve(site.module, &pattern)?;
            let module = self.modules.get(&variant.module)?;
            let held = module
                .variants
                .get(&(variant.item.first()?.clone(), variant.item.get(1)?.clone()))?;
            return self.type_of(&variant.module, held, None);
        }
        None
    }

    /// The type of the value written as `value` (at index `at`): a chain of fields (`&self.breaker`,
    /// `Arc::clone(&later.redis)`, `x.clone()`), a struct literal, a call of a type's function (taken to make
    /// one: `State::reported(..)`), or a call of a function of the module with its return type written.
    fn value_type(&self, site: &Site<'_>, value: &[Token], at: usize) -> Option<Target> {
        let mut start = 0;
        while value
            .get(start)
            .is_some_and(|t| t.is("&") || t.is("*") || t.is_word("mut"))
        {
            start += 1;
        }
        let (path, end) = path_at(value, start);
        let rest = &value[end.min(value.len())..];
        let pointer = |p: &str| matches!(p, "Arc" | "Rc" | "Box");
        if matches!(path.as_slice(), [p, c] if pointer(p) && (c == "clone" || c == "new")) {
            let inner = &rest[1..rest.len().saturating_sub(1)];
            return self.value_type(site, inner, at + end + 1);
        }
        if path.len() > 1 && rest.first().is_some_and(|t| t.is("(")) {
            return self.type_named(site.module, &path[..path.len() - 1], site.self_type);
        }
        if !path.is_empty() && rest.first().is_some_and(|t| t.is("{")) {
            return self.type_named(site.module, &path, site.self_type);
        }
        if path.len() == 1 && rest.first().is_some_and(|t| t.is("(")) {
            let returned = self.modules.get(site.module)?.returns.get(&path[0])?;
            return self.type_of(site.module, returned, site.self_type);
        }
        let mut chain_end = start;
        while value.get(chain_end).and_then(Token::word).is_some() {
            chain_end += 1;
            if value.get(chain_end).is_some_and(|t| t.is("."))
                && value.get(chain_end + 1).and_then(Token::word).is_some()
                && !value.get(chain_end + 2).is_some_and(|t| t.is("("))
            {
                chain_end += 1;
            } else {
                break;
            }
        }
        let tail = &value[chain_end..];
        let plain = tail.is_empty()
            || matches!(
                words(tail)
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .as_slice(),
                [".", "clone", "(", ")"] | [".", "as_ref", "(", ")"]
            );
        if chain_end > start && plain {
            return self.chain_type(site, &value[start..chain_end], at + start);
        }
        None
    }
}

// ---------------------------------------------------------------------------------------------------------
// The checks, each over a crate read: what breaks it, named (none when it holds).

/// A graph of which part uses which (modules, or rooms).
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The one module above their own that tests (`#[cfg(test)]` modules) may use: what expansions call, so that
/// a test of a lower module (key lists) holds it to what expansions write.
const TESTS_MAY_USE: &str = "private";

/// Which of the crate's modules (per [`LAYERS`]) uses which, and each use of a higher layer's module or of a
/// module in no layer, as `file:line (module) uses `path`, ...`.
fn layering(krate: &Crate) -> (Graph, BTreeSet<String>) {
    let module =
        |path: &[String]| Some(top_module(krate.file_of(path)).to_owned()).filter(|m| m != "lib");
    ordered(krate, &LAYERS, "layer", module, Some(TESTS_MAY_USE))
}

/// Which of the Redis backend's rooms (per [`ROOMS`]) uses which, and each use of a higher room or of a room
/// [`ROOMS`] does not list.
fn room_layering(krate: &Crate) -> (Graph, BTreeSet<String>) {
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
fn store_named_below_the_steps(krate: &Crate) -> BTreeSet<String> {
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
fn store_named_above_the_backend(krate: &Crate) -> BTreeSet<String> {
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
fn circle(graph: &Graph) -> Option<String> {
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
fn steps_taken(
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
// ---------------------------------------------------------------------------------------------------------
// The reader, tested on made-up sources: each form of import and call it must catch, and a good layout it
// must accept. Sources are written indented, as Rust is; `dedent` takes the indentation off.

/// A made-up runtime laid out as the real one is, small: each layer and room uses only its own and those
/// below (through groups, renames, globs, `super::`, inline paths and re-exports), and `decision/order.rs`
/// alone takes the order's steps (another type's `failed` is called elsewhere, a breaker's in its tests).
const GOOD: &[(&str, &str)] = &[
    (
        "lib.rs",
        r#"
        //! A made-up runtime.
        mod algorithm;
        mod backend;
        mod call;
        mod limiter;
        mod pipeline;
        #[doc(hidden)]
        #[path = "private.rs"]
        pub mod __private;
        pub use crate::limiter::{Limit as Resolved, Limiter};
        "#,
    ),
    (
        "algorithm/mod.rs",
        r#"
        pub(crate) mod state;
        pub(crate) use self::state::*;
        /// Says `crate::limiter` in a comment, and in a string, which are no uses: "crate::limiter::Limiter".
        pub struct Algorithm;
        "#,
    ),
    (
        "algorithm/state.rs",
        "
        pub(crate) struct State;
        impl State {
            pub(crate) fn decide(&mut self) {}
        }
        #[cfg(test)]
        mod tests {
            use super::*;
            use crate::__private::Part;
        }
        ",
    ),
    (
        "call.rs",
        "
        use crate::algorithm::{self, state::{State as Held}};
        pub(crate) struct Call(Held);
        fn algorithm() -> algorithm::Algorithm { crate::Algorithm }
        ",
    ),
    (
        "backend/mod.rs",
        "
        pub(crate) mod redis;
        pub(crate) use self::redis::{one_limit_source, RedisBackend};
        ",
    ),
    (
        "backend/redis/mod.rs",
        "
        mod decision;
        mod failure;
        mod fleet;
        mod sparing;
        mod wire;
        use self::failure::breaker::Breaker;
        pub(crate) use self::failure::degraded::Fallback;
        pub(crate) use self::wire::Connection;
        pub(crate) struct RedisBackend {
            breaker: Breaker,
            pub(crate) fallback: Fallback,
            connection: Connection,
        }
        pub(crate) fn one_limit_source() {}
        ",
    ),
    (
        "backend/redis/wire/mod.rs",
        "
        //! The wire.
        pub(super) mod connection;
        pub(crate) use self::connection::Connection;
        ",
    ),
    (
        "backend/redis/wire/connection.rs",
        "
        use crate::call::Call;
        pub(crate) struct Connection;
        pub(in crate::backend::redis) fn send(_: &Call) {}
        ",
    ),
    (
        "backend/redis/failure/mod.rs",
        "
        //! Failures.
        pub(super) mod breaker;
        pub(super) mod degraded;
        ",
    ),
    (
        "backend/redis/failure/breaker.rs",
        "
        pub(crate) struct Breaker;
        impl Breaker {
            pub(crate) fn succeeded(&self) {}
            pub(crate) fn failed(&self) {}
        }
        #[cfg(test)]
        mod tests {
            use super::*;
            fn breaker() -> Breaker { Breaker }
            #[test]
            fn opens() {
                let b = breaker();
                b.failed();
            }
        }
        ",
    ),
    (
        "backend/redis/failure/degraded.rs",
        "
        use super::super::wire::connection::Connection;
        pub(crate) struct Fallback;
        impl Fallback {
            pub(crate) fn decide(&self, _: &Connection) {}
        }
        ",
    ),
    (
        "backend/redis/sparing/mod.rs",
        "
        //! Sparing.
        use super::Connection;
        pub(crate) struct Lease;
        impl Lease {
            pub(crate) fn failed(&self) {}
        }
        fn give_up(lease: &Lease) { lease.failed(); }
        ",
    ),
    (
        "backend/redis/decision/mod.rs",
        "
        //! The steps.
        pub(super) mod late;
        pub(super) mod order;
        ",
    ),
    (
        ORDER,
        "
        use crate::backend::redis::{sparing::Lease, RedisBackend};
        impl RedisBackend {
            pub(crate) fn ask(&self, lease: &Lease) {
                self.breaker.failed();
                self.breaker.succeeded();
                self.fallback.decide(&self.connection);
                self.reconcile();
                lease.failed();
            }
        }
        ",
    ),
    (
        LATE,
        "
        use std::sync::Arc;
        use crate::backend::redis::{failure::{breaker}, wire::{self, Connection as Wired}};
        use crate::backend::redis::RedisBackend;
        impl RedisBackend {
            pub(crate) fn reconcile(&self) {
                let Some(mut state) = crate::algorithm::State::new() else { return };
                state.decide();
            }
        }
        ",
    ),
    (
        "backend/redis/fleet/mod.rs",
        "
        //! The fleet.
        use super::decision::*;
        use crate::backend::redis::sparing;
        pub(crate) struct Fleet;
        impl Fleet {
            pub(crate) fn new() -> Fleet { Fleet }
        }
        ",
    ),
    (
        "pipeline.rs",
        "
        use crate::backend::{self, one_limit_source};
        use crate::call::Call;
        fn sources() { backend::one_limit_source(); }
        ",
    ),
    (
        "limiter/mod.rs",
        "
        use crate::pipeline;
        pub struct Limiter;
        pub struct Limit;
        ",
    ),
    (
        "private.rs",
        "
        pub struct Part;
        use crate::{Limiter, Resolved};
        ",
    ),
];

/// A file of a decision's steps other than the order, under `src`.
const LATE: &str = "backend/redis/decision/late.rs";

/// `text` without its first line break and its lines' common indentation (`"\n    a\n      b\n    "` is
/// `"a\n  b\n"`).
fn dedent(text: &str) -> String {
    let text = text.strip_prefix('\n').unwrap_or(text);
    let indent = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let lines = text
        .lines()
        .map(|line| line.get(indent..).unwrap_or("").trim_end());
    lines
        .map(|line| format!("{line}\n"))
        .collect::<String>()
        .trim_end()
        .to_owned()
        + "\n"
}

/// The made-up sources of [`GOOD`], with `changes` (a file's text appended; a new file's is its text) and
/// each `(from, to)` of `renames` replaced in every file.
fn made_up(changes: &[(&str, &str)], renames: &[(&str, &str)]) -> Sources {
    let mut sources: Sources = GOOD
        .iter()
        .map(|(f, t)| (f.to_string(), dedent(t)))
        .collect();
    for (file, text) in changes {
        sources
            .entry(file.to_string())
            .or_default()
            .push_str(&dedent(text));
    }
    for text in sources.values_mut() {
        for (from, to) in renames {
            *text = text.replace(from, to);
        }
    }
    sources
}

/// Whether `found` (`file:line...`) names `file` at a line of the change `text` appended to it last.
fn names_the_change(found: &str, sources: &Sources, file: &str, text: &str) -> bool {
    let first = sources[file].lines().count() - dedent(text).lines().count() + 1;
    let line = found
        .strip_prefix(&format!("{file}:"))
        .and_then(|rest| rest.split([':', ' ']).next());
    line.and_then(|line| line.parse::<usize>().ok())
        .is_some_and(|line| line >= first)
}

/// Everything each check finds in a crate, as one list: what a good layout shows none of.
fn everything_broken(krate: &Crate) -> Vec<String> {
    let (modules, mut broken) = layering(krate);
    let (rooms, in_rooms) = room_layering(krate);
    broken.extend(in_rooms);
    broken.extend(store_named_below_the_steps(krate));
    broken.extend(store_named_above_the_backend(krate));
    broken.extend(circle(&modules).map(|c| format!("modules in a circle: {c}")));
    broken.extend(circle(&rooms).map(|c| format!("rooms in a circle: {c}")));
    match steps_taken(krate, &STEPS) {
        Ok(taken) => {
            for (step, places) in taken {
                if places.iter().any(|p| !p.starts_with(ORDER)) || places.is_empty() {
                    broken.insert(format!("{step} taken at {places:?}"));
                }
            }
        }
        Err(e) => {
            broken.insert(e);
        }
    }
    Vec::from_iter(broken)
}

#[test]
fn a_good_layout_is_accepted() {
    let krate = Crate::read(&made_up(&[], &[]));
    assert_eq!(everything_broken(&krate), Vec::<String>::new());
    let (modules, _) = layering(&krate);
    let (rooms, _) = room_layering(&krate);
    let used = |graph: &Graph, part: &str| Vec::from_iter(graph[part].iter().cloned());
    assert_eq!(
        used(&modules, "private"),
        ["limiter"],
        "the root's re-exports followed"
    );
    assert_eq!(used(&modules, "call"), ["algorithm"]);
    assert_eq!(used(&modules, "backend"), ["algorithm", "call"]);
    assert_eq!(
        used(&rooms, "decision"),
        ["failure", "sparing", "wire"],
        "groups read"
    );
    assert_eq!(used(&rooms, "failure"), ["wire"]);
    assert_eq!(
        used(&rooms, "sparing"),
        ["wire"],
        "the hub's re-export, by `super::`"
    );
    assert_eq!(
        used(&rooms, "fleet"),
        ["decision", "sparing"],
        "a glob, a module by name"
    );
}

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

/// A way of taking a step of the order outside `decision/order.rs`: its name, the step, how the check sees it
/// taken, the changes that make it (the first in the file it is taken in), and words replaced in every file.
struct OrderForm {
    form: &'static str,
    step: &'static str,
    seen: &'static str,
    changes: &'static [(&'static str, &'static str)],
    renames: &'static [(&'static str, &'static str)],
}

/// Each way of taking a step of the order outside `decision/order.rs`.
const ORDER_FORMS: &[OrderForm] = &[
    OrderForm {
        form: "a field renamed",
        step: "Breaker::failed",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "
            impl RedisBackend {
                fn again(&self) { self.guard.failed(); }
            }
            ",
        )],
        renames: &[
            ("breaker: Breaker", "guard: Breaker"),
            ("self.breaker.", "self.guard."),
        ],
    },
    OrderForm {
        form: "a local name",
        step: "Breaker::failed",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "
            impl RedisBackend {
                fn again(&self) {
                    let b = &self.breaker;
                    b.failed();
                }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a local name, cloned",
        step: "Fallback::decide",
        seen: "on a `Fallback`",
        changes: &[(
            LATE,
            "
            impl RedisBackend {
                fn again(&self) {
                    let f = self.fallback.clone();
                    f.decide(todo!());
                }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a local name, an `Arc` of the store",
        step: "RedisBackend::reconcile",
        seen: "on a `RedisBackend`",
        changes: &[(
            LATE,
            "
            fn again(redis: RedisBackend) {
                let held = Arc::new(redis);
                let it = Arc::clone(&held);
                it.reconcile();
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a typed parameter",
        step: "Breaker::succeeded",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "
            use crate::backend::redis::failure::breaker::Breaker;
            fn tell(told: &Breaker) { told.succeeded(); }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a typed closure parameter",
        step: "Breaker::failed",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "fn again() { let tell = |b: &breaker::Breaker| b.failed(); }",
        )],
        renames: &[],
    },
    OrderForm {
        form: "an enum's variant in a pattern",
        step: "Breaker::failed",
        seen: "on a `Breaker`",
        changes: &[(
            LATE,
            "
            enum Held { One(breaker::Breaker) }
            fn again(held: Held) {
                match held { Held::One(b) => b.failed() }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "the method by its path",
        step: "Breaker::failed",
        seen: "through `breaker::Breaker::failed`",
        changes: &[(
            LATE,
            "
            impl RedisBackend {
                fn again(&self) { breaker::Breaker::failed(&self.breaker); }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "the method through a renamed type",
        step: "Breaker::succeeded",
        seen: "through `Guard::succeeded`",
        changes: &[(
            LATE,
            "
            use crate::backend::redis::failure::breaker::Breaker as Guard;
            fn again() { let _ = Guard::succeeded; }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "`Self::` in an `impl` of the store",
        step: "RedisBackend::reconcile",
        seen: "through `Self::reconcile`",
        changes: &[(
            "backend/redis/fleet/mod.rs",
            "
            impl crate::backend::redis::RedisBackend {
                fn again(&self) { Self::reconcile(self); }
            }
            ",
        )],
        renames: &[],
    },
    OrderForm {
        form: "a receiver the reader cannot tell, in the backend",
        step: "Fallback::decide",
        seen: "on a receiver of a type the reader cannot tell",
        changes: &[(LATE, "fn again() { make().decide(todo!()); }")],
        renames: &[],
    },
    OrderForm {
        form: "a field of the store, outside the backend",
        step: "Fallback::decide",
        seen: "on a `Fallback`",
        changes: &[(
            "pipeline.rs",
            "fn again(x: Unknown) { x.fallback.decide(todo!()); }",
        )],
        renames: &[],
    },
];

/// The order check looks at what is called, not at what a value is named: each way of taking a step outside
/// the order is caught, where it is written, the order's own steps still seen; calls of another type's method
/// of a step's name (`Lease::failed`), or in tests, are not steps.
#[test]
fn each_way_of_taking_a_step_outside_the_order_is_caught() {
    for OrderForm {
        form,
        step,
        seen,
        changes,
        renames,
    } in ORDER_FORMS
    {
        let sources = made_up(changes, renames);
        let (file, text) = changes[0];
        let taken = steps_taken(&Crate::read(&sources), &STEPS).unwrap();
        for (other, places) in &taken {
            let outside = Vec::from_iter(places.iter().filter(|p| !p.starts_with(ORDER)));
            let caught =
                |p: &&String| names_the_change(p, &sources, file, text) && p.ends_with(seen);
            if other == step {
                assert!(
                    outside.len() == 1 && outside.iter().all(caught),
                    "{form}: {places:#?}"
                );
            } else {
                assert!(outside.is_empty(), "{form}: {other} at {outside:#?}");
            }
            assert!(
                places.iter().any(|p| p.starts_with(ORDER)),
                "{form}: {other} in the order"
            );
        }
    }
}

/// A step the crate does not define (renamed, moved to another type) fails the check, naming it, rather than
/// being found taken nowhere.
#[test]
fn a_step_defined_nowhere_fails_the_check() {
    let sources = made_up(&[], &[("fn failed(&self) {}", "fn failing(&self) {}")]);
    let failed = steps_taken(&Crate::read(&sources), &STEPS).unwrap_err();
    let expected = "Breaker::failed should be defined once, is defined at []";
    assert!(failed.starts_with(expected), "{failed}");
}

/// Each way a store is named where it may not be: a store's module from above the backend (as written, or a
/// store's own type through the backend's interface), the store from a room below a decision's steps.
const STORE_FORMS: &[(&str, &str, &str)] = &[
    (
        "a store's module, above the backend",
        "pipeline.rs",
        "use crate::backend::redis::wire::Connection;",
    ),
    (
        "a store's module, through an alias",
        "pipeline.rs",
        "
        use crate::backend as stores;
        fn reach() { stores::redis::one_limit_source(); }
        ",
    ),
    (
        "a store's type, through the backend's interface",
        "pipeline.rs",
        "fn reach(_: &crate::backend::RedisBackend) {}",
    ),
    (
        "the store, below the steps",
        "backend/redis/wire/mod.rs",
        "use crate::backend::redis::RedisBackend;",
    ),
    (
        "the store, below the steps, by `super::`",
        "backend/redis/sparing/mod.rs",
        "fn reach(_: super::RedisBackend) {}",
    ),
];

#[test]
fn the_stores_are_named_only_where_they_may_be() {
    for (form, file, text) in STORE_FORMS {
        let sources = made_up(&[(file, text)], &[]);
        let krate = Crate::read(&sources);
        let above = store_named_above_the_backend(&krate);
        let broken = Vec::from_iter(above.into_iter().chain(store_named_below_the_steps(&krate)));
        let caught = |b: &String| names_the_change(b, &sources, file, text);
        assert!(
            broken.len() == 1 && broken.iter().all(caught),
            "{form}: {broken:#?}"
        );
    }
}
