//! Reading items from tokens: `use` trees, paths, an `impl`'s type, a function's return type, a struct's
//! fields and an enum's variants.

use super::krate::Import;
use super::tokens::{Tok, Token};

/// The index of the bracket that closes the one at `open` (`(`, `[`, `{` or `<`); the last token's if none.
pub(super) fn matching(toks: &[Token], open: usize) -> usize {
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
pub(super) fn words(toks: &[Token]) -> Vec<String> {
    toks.iter()
        .map(|t| match &t.tok {
            Tok::Word(w) | Tok::Punct(w) => w.clone(),
            Tok::Str(s) => format!("{s:?}"),
            Tok::Other => "'".to_owned(),
        })
        .collect()
}

/// `path` with its `..` and `.` folded (`a/b/../c.rs` is `a/c.rs`).
pub(super) fn normal(path: &str) -> String {
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
pub(super) fn use_tree(
    toks: &[Token],
    i: usize,
    prefix: Vec<String>,
    imports: &mut Vec<Import>,
) -> usize {
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
pub(super) fn path_at(toks: &[Token], mut i: usize) -> (Vec<String>, usize) {
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
pub(super) fn type_path(toks: &[Token]) -> Option<Vec<String>> {
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
pub(super) fn impl_type(toks: &[Token]) -> Vec<String> {
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
pub(super) fn return_type(toks: &[Token]) -> Option<Vec<Token>> {
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
pub(super) fn fields(toks: &[Token]) -> Vec<(String, Vec<Token>)> {
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
pub(super) fn variants(toks: &[Token]) -> Vec<(String, Vec<Token>)> {
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
