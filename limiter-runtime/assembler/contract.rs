//! The sections an algorithm's file may have, as `scripts/algorithms/README.md` declares them: their names,
//! which every algorithm must have, and what each must leave (a local it must assign), which
//! [`Contract::unassigned`] checks on a section's text.

use super::Error;

/// Where the sections are declared, under `scripts/`.
pub(super) const PATH: &str = "algorithms/README.md";

/// One section, as declared.
#[derive(Debug)]
struct Declared {
    /// Its name, as a `--@` line and a marker write it.
    name: String,
    /// Whether every algorithm must have it.
    required: bool,
    /// The locals it must assign.
    leaves: Vec<String>,
}

/// The sections declared, in the order of their declarations.
#[derive(Debug)]
pub(super) struct Contract {
    sections: Vec<Declared>,
}

impl Contract {
    /// Reads the declarations of `text` (of [`PATH`]): a line `### <section>: required` (or `optional`) declares a
    /// section; a line `Must leave: `<local>`, ...` under it, what it must assign.
    pub(super) fn read(text: &str) -> Result<Self, Error> {
        let mut sections: Vec<Declared> = Vec::new();
        let mut leaves_at = None;
        for (index, line) in text.lines().enumerate() {
            let error = |message: String| Error::new(PATH, index + 1, message);
            if let Some(heading) = line.strip_prefix("### ") {
                let (name, need) = heading.split_once(": ").ok_or_else(|| {
                    error(format!(
                        "`{line}`: expected `### <section>: required` or `### <section>: optional`"
                    ))
                })?;
                let required = match need {
                    "required" => true,
                    "optional" => false,
                    _ => {
                        return Err(error(format!(
                            "`{need}`: expected `required` or `optional`"
                        )))
                    }
                };
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_lowercase() || c == '_') {
                    return Err(error(format!(
                        "`{name}`: a section's name is lowercase letters and `_`"
                    )));
                }
                if sections.iter().any(|section| section.name == name) {
                    return Err(error(format!("`{name}` is declared twice")));
                }
                sections.push(Declared {
                    name: name.to_owned(),
                    required,
                    leaves: Vec::new(),
                });
                leaves_at = None;
            } else if let Some(list) = line.strip_prefix("Must leave:") {
                let Some(section) = sections.last_mut() else {
                    return Err(error(
                        "`Must leave:` before any `### <section>` heading".to_owned(),
                    ));
                };
                if let Some(first) = leaves_at {
                    return Err(error(format!(
                        "a second `Must leave:` for `{}` (the first at line {first})",
                        section.name
                    )));
                }
                leaves_at = Some(index + 1);
                for local in list.split(',') {
                    let name = local
                        .trim()
                        .strip_prefix('`')
                        .and_then(|name| name.strip_suffix('`'))
                        .filter(|name| is_name(name))
                        .ok_or_else(|| {
                            error(format!(
                                "`{}`: expected `Must leave: `<local>`, `<local>`, ...`",
                                local.trim()
                            ))
                        })?;
                    section.leaves.push(name.to_owned());
                }
            }
        }
        if sections.is_empty() {
            return Err(Error::new(
                PATH,
                0,
                "declares no section (`### <section>: required`)",
            ));
        }
        Ok(Self { sections })
    }

    /// Whether `name` is a section's.
    pub(super) fn knows(&self, name: &str) -> bool {
        self.sections.iter().any(|section| section.name == name)
    }

    /// The names of the sections, for a message: "read, fits, ...".
    pub(super) fn names(&self) -> String {
        let names: Vec<&str> = self
            .sections
            .iter()
            .map(|section| section.name.as_str())
            .collect();
        names.join(", ")
    }

    /// The sections every algorithm must have.
    pub(super) fn required(&self) -> impl Iterator<Item = &str> {
        self.sections
            .iter()
            .filter(|section| section.required)
            .map(|section| section.name.as_str())
    }

    /// The first local section `name` must leave that `text` (the section, assembled) assigns nowhere.
    pub(super) fn unassigned<'c>(&'c self, name: &str, text: &str) -> Option<&'c str> {
        let section = self.sections.iter().find(|section| section.name == name)?;
        section
            .leaves
            .iter()
            .map(String::as_str)
            .find(|local| !assigns(text, local))
    }
}

/// Whether `name` is a Lua name.
fn is_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether a line of `text` assigns `local` (`local a, local = ...`, `if ... then local = ... end`): `local`
/// is one of the names, comma-separated, just before a ` = ` (comments aside).
fn assigns(text: &str, local: &str) -> bool {
    text.lines().any(|line| {
        let code = line.split("--").next().unwrap_or_default();
        code.match_indices(" = ").any(|(at, _)| {
            let before = &code[..at];
            let in_targets = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | ',' | ' ');
            let start = before
                .char_indices()
                .rev()
                .find(|&(_, c)| !in_targets(c))
                .map_or(0, |(at, c)| at + c.len_utf8());
            let targets = &before[start..];
            targets
                .split(',')
                .any(|target| target.split_whitespace().last() == Some(local))
        })
    })
}
