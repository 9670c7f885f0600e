//! What a method call calls: the type of its receiver, as far as a reader of text can tell (a chain of
//! fields, a local name's binding, a value's type).

use std::collections::BTreeSet;

use super::items::{path_at, type_path, words};
use super::krate::{Crate, Target};
use super::tokens::Token;

/// Where a call is written, for telling its receiver's type: the module, the file's tokens, the type `Self`
/// stands for and where the enclosing function starts.
pub(super) struct Site<'a> {
    pub(super) module: &'a [String],
    pub(super) toks: &'a [Token],
    pub(super) self_type: Option<&'a [String]>,
    pub(super) fn_start: usize,
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
    pub(super) fn type_named(
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
    pub(super) fn receiver_type(&self, site: &Site<'_>, at: usize) -> Option<Target> {
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
