//! Resolving: where a path written in a module leads, re-exports (named or through globs) followed to the
//! module that defines what it names.

use super::krate::{Crate, Module, Target, Written};

/// How many imports the reader follows from one path before it gives up (a loop of re-exports).
const FOLLOWS: usize = 16;

impl Crate {
    /// Where `path`, written in module `from`, leads: `crate::`, `self::`, `super::` (repeated too), a child
    /// module's name, or a name `from` imports (by name or through a glob) or defines; none when it leaves
    /// the crate (a dependency, the standard library) or names something local (a variable, a generic).
    pub(super) fn resolve(&self, from: &[String], path: &[String]) -> Option<Target> {
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
    pub(super) fn written_module(&self, from: &[String], path: &[String]) -> Option<Vec<String>> {
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
    pub(super) fn file_of(&self, module: &[String]) -> &str {
        (0..=module.len())
            .rev()
            .find_map(|n| self.modules.get(&module[..n]))
            .map_or("lib.rs", |m| m.file.as_str())
    }

    /// Every path each module writes, with where it leads: the module that writes it, the path, and its
    /// target. Paths that leave the crate are left out.
    pub(super) fn reached(&self) -> Vec<(&[String], &Module, &Written, Target)> {
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
