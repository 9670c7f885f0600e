//! Reading a crate from its sources: from `lib.rs` down the `mod` declarations, each file token by token, the
//! scopes it opens told apart, what each module imports, defines, writes and calls recorded.

use std::collections::BTreeMap;

use super::items::{
    fields, impl_type, matching, normal, path_at, return_type, use_tree, variants, words,
};
use super::krate::{Call, Crate, Method, Module, Written};
use super::tokens::{tokens, Tok, Token};
use super::Sources;

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
    pub(super) fn read(sources: &Sources) -> Crate {
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
