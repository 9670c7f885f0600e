//! [`Assembler`]: every source read and checked once, then each template assembled, its markers replaced by
//! what they place.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::contract::{self, Contract};
use super::marker::{self, Marker};
use super::sectioned::Sectioned;
use super::{Error, Sources, ONE_LIMIT};

/// The sources, read and checked.
pub(super) struct Assembler<'s, S> {
    /// Where the parts and templates are read.
    sources: &'s S,
    /// The sections there are.
    contract: Contract,
    /// The algorithms, in the order of their codes (from 1).
    algorithms: &'s [&'s str],
    /// Every file of `scripts/algorithms/`, by name (without `.lua`).
    files: BTreeMap<String, Sectioned>,
}

/// Where a text being assembled is, and for which algorithm.
#[derive(Clone, Copy)]
struct Place<'p> {
    /// Its file, under `scripts/`.
    path: &'p str,
    /// The line (from 1) it starts on: a marker's own line.
    line: usize,
    /// The algorithm it is assembled for (`None`: a script for every algorithm at once).
    algorithm: Option<&'p str>,
}

impl<'s, S: Sources> Assembler<'s, S> {
    /// Reads every source and checks it: the contract, every file of `scripts/algorithms/` (each of `algorithms`
    /// among them, with every required section, each assigning what it must leave), every marker of every
    /// part and template, and no marker in a script of `scripts/` that is not `one_limit` or of `templates`.
    pub(super) fn new(
        sources: &'s S,
        algorithms: &'s [&'s str],
        templates: &[&str],
    ) -> Result<Self, Error> {
        let text = sources.read(contract::PATH).ok_or_else(|| {
            Error::new(
                contract::PATH,
                0,
                "missing: it declares the algorithms' sections",
            )
        })?;
        let contract = Contract::read(&text)?;
        let mut files = BTreeMap::new();
        for name in lua_files(sources, "algorithms") {
            let path = format!("algorithms/{name}.lua");
            let text = sources.read(&path).unwrap_or_default();
            files.insert(name, Sectioned::read(&path, &text, &contract)?);
        }
        let assembler = Self {
            sources,
            contract,
            algorithms,
            files,
        };
        assembler.check(templates)?;
        Ok(assembler)
    }

    /// Checks every source read (see [`Assembler::new`]).
    fn check(&self, templates: &[&str]) -> Result<(), Error> {
        let (algorithms, sources) = (self.algorithms, self.sources);
        for (index, algorithm) in algorithms.iter().enumerate() {
            if algorithms[..index].contains(algorithm) {
                return Err(Error::new(
                    &format!("algorithms/{algorithm}.lua"),
                    0,
                    format!("`{algorithm}` is listed twice among the algorithms"),
                ));
            }
            self.check_algorithm(algorithm)?;
        }
        for file in self.files.values() {
            for section in file.sections.values() {
                self.check_markers(&file.path, section.line + 1, &section.text)?;
            }
        }
        for name in lua_files(sources, "parts") {
            let path = format!("parts/{name}.lua");
            self.check_markers(&path, 1, &sources.read(&path).unwrap_or_default())?;
        }
        for name in lua_files(sources, "") {
            let path = format!("{name}.lua");
            let text = sources.read(&path).unwrap_or_default();
            if name == ONE_LIMIT || templates.contains(&name.as_str()) {
                self.check_markers(&path, 1, &text)?;
            } else if let Some(index) = text.lines().position(|line| {
                let line = line.trim_start();
                line.starts_with("-->") || line.starts_with("--@")
            }) {
                return Err(Error::new(
                    &path,
                    index + 1,
                    "a marker in a script that is not assembled: name it among the templates (`TEMPLATES` in \
                     build.rs), or leave it plain Lua",
                ));
            }
        }
        for template in [ONE_LIMIT].iter().chain(templates) {
            if sources.read(&format!("{template}.lua")).is_none() {
                return Err(Error::new(
                    &format!("{template}.lua"),
                    0,
                    "missing: it is a template to assemble",
                ));
            }
        }
        Ok(())
    }

    /// Returns `scripts/<template>.lua` assembled, for `algorithm` (`None`: for every algorithm at once).
    pub(super) fn template(
        &self,
        template: &str,
        algorithm: Option<&str>,
    ) -> Result<String, Error> {
        let path = format!("{template}.lua");
        let text = self.sources.read(&path).unwrap_or_default();
        let place = Place {
            path: &path,
            line: 1,
            algorithm,
        };
        self.assemble(&text, place, &mut Vec::new())
    }

    /// Checks that `algorithm` has its file, every required section, and that each of its sections assigns what
    /// it must leave.
    fn check_algorithm(&self, algorithm: &str) -> Result<(), Error> {
        let path = format!("algorithms/{algorithm}.lua");
        let file = self.files.get(algorithm).ok_or_else(|| {
            Error::new(
                &path,
                0,
                format!("missing: `{algorithm}` is among the algorithms"),
            )
        })?;
        if let Some(missing) = self
            .contract
            .required()
            .find(|name| !file.sections.contains_key(*name))
        {
            let required: Vec<&str> = self.contract.required().collect();
            return Err(Error::new(
                &path,
                file.lines,
                format!(
                    "ends without a `--@{missing}` section: every algorithm must have {} (declared in scripts/{})",
                    required.join(", "),
                    contract::PATH
                ),
            ));
        }
        for (name, section) in &file.sections {
            let text = self.assemble(
                &section.text,
                Place {
                    path: &path,
                    line: section.line + 1,
                    algorithm: Some(algorithm),
                },
                &mut vec![format!("{algorithm}.{name}")],
            )?;
            if let Some(local) = self.contract.unassigned(name, &text) {
                return Err(Error::new(
                    &path,
                    section.line,
                    format!(
                        "section `{name}` assigns `{local}` nowhere, which it must leave (declared in scripts/{})",
                        contract::PATH
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks every marker of `text` (`scripts/<path>` from line `first`): its grammar, and that what it names
    /// exists.
    fn check_markers(&self, path: &str, first: usize, text: &str) -> Result<(), Error> {
        for (index, line) in text.lines().enumerate() {
            let error = |message: String| Error::new(path, first + index, message);
            if line.trim_start().starts_with("--@") {
                return Err(error(format!(
                    "`{}`: a section opens only in a file of scripts/algorithms/",
                    line.trim()
                )));
            }
            match marker::read(line).map_err(error)? {
                Some((_, Marker::Each(section, inner))) => {
                    self.check_section_name(section).map_err(error)?;
                    self.check_names(inner.into()).map_err(error)?;
                }
                Some((_, marker)) => self.check_names(marker).map_err(error)?,
                None => {}
            }
        }
        Ok(())
    }

    /// Checks that the names of `marker` (no `each`) exist: a section's, a part, a file of algorithms with the
    /// section named.
    fn check_names(&self, marker: Marker<'_>) -> Result<(), String> {
        match marker {
            Marker::Section(section) => self.check_section_name(section),
            Marker::Kin(file, section) => {
                self.check_section_name(section)?;
                let sectioned = self.files.get(file).ok_or_else(|| {
                    format!(
                        "`--> {file}.{section}`: there is no file scripts/algorithms/{file}.lua"
                    )
                })?;
                match sectioned.sections.contains_key(section) {
                    true => Ok(()),
                    false => Err(format!(
                        "`--> {file}.{section}`: scripts/algorithms/{file}.lua has no `--@{section}` section"
                    )),
                }
            }
            Marker::Part(part) => match self.sources.read(&format!("parts/{part}.lua")) {
                Some(_) => Ok(()),
                None => Err(format!(
                    "`--> part {part}`: there is no file scripts/parts/{part}.lua"
                )),
            },
            Marker::Each(..) => unreachable!("`each` holds no `each`"),
        }
    }

    /// Checks that `name` is a section's.
    fn check_section_name(&self, name: &str) -> Result<(), String> {
        match self.contract.knows(name) {
            true => Ok(()),
            false => Err(format!(
                "no section is named `{name}`: expected one of {} (declared in scripts/{})",
                self.contract.names(),
                contract::PATH
            )),
        }
    }

    /// Returns `text` (at `place`) with each of its markers replaced by what it places. `placing` holds what
    /// is being placed around it, so that a part or section that places itself is an error, not a loop.
    fn assemble(
        &self,
        text: &str,
        place: Place<'_>,
        placing: &mut Vec<String>,
    ) -> Result<String, Error> {
        let mut out = String::new();
        for (index, line) in text.lines().enumerate() {
            let at = Place {
                line: place.line + index,
                ..place
            };
            let error = |message: String| Error::new(place.path, at.line, message);
            if line.trim_start().starts_with("--@") {
                return Err(error(format!(
                    "`{}`: a section opens only in a file of scripts/algorithms/",
                    line.trim()
                )));
            }
            let Some((indent, marker)) = marker::read(line).map_err(error)? else {
                out.push_str(line);
                out.push('\n');
                continue;
            };
            for inner in self.expand(marker, at, placing)?.lines() {
                match inner.is_empty() {
                    true => out.push('\n'),
                    false => writeln!(out, "{indent}{inner}").unwrap(),
                }
            }
        }
        Ok(out)
    }

    /// Returns what `marker`, the line `at`, places for `at`'s algorithm.
    fn expand(
        &self,
        marker: Marker<'_>,
        at: Place<'_>,
        placing: &mut Vec<String>,
    ) -> Result<String, Error> {
        let error = |message: String| Error::new(at.path, at.line, message);
        match marker {
            Marker::Part(part) => {
                self.check_names(marker).map_err(error)?;
                let path = format!("parts/{part}.lua");
                let text = self.sources.read(&path).unwrap_or_default();
                let place = Place {
                    path: &path,
                    line: 1,
                    algorithm: at.algorithm,
                };
                self.within(placing, format!("part {part}"), at, |placing| {
                    self.assemble(&text, place, placing)
                })
            }
            Marker::Kin(file, section) => {
                self.check_names(marker).map_err(error)?;
                self.section(file, section, at, placing)
            }
            Marker::Section(section) => {
                self.check_section_name(section).map_err(error)?;
                let algorithm = at.algorithm.ok_or_else(|| {
                    error(format!(
                        "`--> {section}` in a script for every algorithm: place it within `--> each <section>: ...`"
                    ))
                })?;
                match self.files[algorithm].sections.contains_key(section) {
                    true => self.section(algorithm, section, at, placing),
                    false => Ok(String::new()),
                }
            }
            Marker::Each(section, inner) => {
                self.check_section_name(section).map_err(error)?;
                let mut text = String::new();
                for (index, name) in self.algorithms.iter().enumerate() {
                    if !self.files[*name].sections.contains_key(section) {
                        continue;
                    }
                    let keyword = if text.is_empty() { "if" } else { "elseif" };
                    writeln!(text, "{keyword} code == {} then -- {name}", index + 1).unwrap();
                    let at = Place {
                        algorithm: Some(name),
                        ..at
                    };
                    for line in self.expand(inner.into(), at, placing)?.lines() {
                        match line.is_empty() {
                            true => text.push('\n'),
                            false => writeln!(text, "  {line}").unwrap(),
                        }
                    }
                }
                if text.is_empty() {
                    return Err(error(format!("no algorithm has a `--@{section}` section")));
                }
                text.push_str("end\n");
                Ok(text)
            }
        }
    }

    /// Returns section `name` of `scripts/algorithms/<file>.lua` (which has it), placed `at` (assembled for its
    /// algorithm).
    fn section(
        &self,
        file: &str,
        name: &str,
        at: Place<'_>,
        placing: &mut Vec<String>,
    ) -> Result<String, Error> {
        let sectioned = &self.files[file];
        let section = &sectioned.sections[name];
        let place = Place {
            path: &sectioned.path,
            line: section.line + 1,
            algorithm: at.algorithm,
        };
        self.within(placing, format!("{file}.{name}"), at, |placing| {
            self.assemble(&section.text, place, placing)
        })
    }

    /// Runs `assemble` with `what`, placed `at`, among what is being placed (an error unless it already is),
    /// and names `at` in the errors it meets.
    fn within(
        &self,
        placing: &mut Vec<String>,
        what: String,
        at: Place<'_>,
        assemble: impl FnOnce(&mut Vec<String>) -> Result<String, Error>,
    ) -> Result<String, Error> {
        if placing.contains(&what) {
            let through = placing.join(" > ");
            return Err(Error::new(
                at.path,
                at.line,
                format!("`{what}` places itself (through {through})"),
            ));
        }
        placing.push(what);
        let assembled = assemble(placing);
        placing.pop();
        assembled.map_err(|error| error.placed_by(at.path, at.line, at.algorithm))
    }
}

/// The names (without `.lua`) of the `.lua` files of `scripts/<directory>`, in order.
fn lua_files(sources: &impl Sources, directory: &str) -> Vec<String> {
    let mut names: Vec<String> = sources
        .list(directory)
        .into_iter()
        .filter_map(|name| name.strip_suffix(".lua").map(str::to_owned))
        .collect();
    names.sort();
    names
}
