//! A template's line read as a marker (`--> <what>`), by its grammar alone: whether the names it holds exist
//! is the assembler's to check.

/// What a marker places.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marker<'t> {
    /// `--> <section>`: that section of the algorithm being assembled.
    Section(&'t str),
    /// `--> <file>.<section>`: that section of `scripts/algorithms/<file>.lua`.
    Kin(&'t str, &'t str),
    /// `--> part <name>`: `scripts/parts/<name>.lua`.
    Part(&'t str),
    /// `--> each <section>: <what>`: `<what>` for each algorithm that has `<section>`.
    Each(&'t str, Inner<'t>),
}

/// What an `each` marker places for each algorithm: any marker but another `each`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Inner<'t> {
    /// `<section>`.
    Section(&'t str),
    /// `<file>.<section>`.
    Kin(&'t str, &'t str),
    /// `part <name>`.
    Part(&'t str),
}

/// The forms of a marker, for a message.
const FORMS: &str =
    "`--> <section>`, `--> <file>.<section>`, `--> part <name>` or `--> each <section>: <what>`";

/// Reads `line`: `Ok(None)` when it is no marker (its first characters other than spaces are not `-->`), else
/// the marker's indentation and what it places, or why it is not one.
pub(super) fn read(line: &str) -> Result<Option<(&str, Marker<'_>)>, String> {
    let text = line.trim_start();
    let indent = &line[..line.len() - text.len()];
    let Some(rest) = text.strip_prefix("-->") else {
        return Ok(None);
    };
    let Some(what) = rest.strip_prefix(' ') else {
        return Err(format!(
            "`{text}`: a marker needs a space after `-->`: expected `--> {}`",
            rest.trim()
        ));
    };
    if what.is_empty() || what.trim() != what || what.contains("  ") {
        return Err(format!(
            "`{text}`: expected {FORMS}, with single spaces and none at the end"
        ));
    }
    let marker = match what.strip_prefix("each ") {
        Some(each) => {
            let (section, inner) = each
                .split_once(": ")
                .ok_or_else(|| format!("`{text}`: expected `--> each <section>: <what>`"))?;
            if !is_name(section) {
                return Err(format!("`{text}`: `{section}` is no section's name"));
            }
            let inner = inner
                .strip_prefix("each ")
                .map_or_else(|| what_of(inner), |_| None);
            let inner = inner.ok_or_else(|| {
                format!(
                    "`{text}`: after `each {section}: `, expected `<section>`, `<file>.<section>` or \
                     `part <name>`"
                )
            })?;
            Marker::Each(section, inner)
        }
        None => what_of(what)
            .map(Marker::from)
            .ok_or_else(|| format!("`{text}`: expected {FORMS}"))?,
    };
    Ok(Some((indent, marker)))
}

/// Reads `what` as any marker but `each`.
fn what_of(what: &str) -> Option<Inner<'_>> {
    if let Some(part) = what.strip_prefix("part ") {
        return is_name(part).then_some(Inner::Part(part));
    }
    match what.split_once('.') {
        Some((file, section)) => {
            (is_name(file) && is_name(section)).then_some(Inner::Kin(file, section))
        }
        None => is_name(what).then_some(Inner::Section(what)),
    }
}

/// Whether `name` can name a section, a part or a file: lowercase letters, digits and `_`.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl<'t> From<Inner<'t>> for Marker<'t> {
    fn from(inner: Inner<'t>) -> Self {
        match inner {
            Inner::Section(section) => Marker::Section(section),
            Inner::Kin(file, section) => Marker::Kin(file, section),
            Inner::Part(part) => Marker::Part(part),
        }
    }
}
