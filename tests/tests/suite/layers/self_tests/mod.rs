//! The reader, tested on made-up sources: each form of import and call it must catch, and a good layout it
//! must accept. Sources are written indented, as Rust is; `dedent` takes the indentation off.

mod good;
mod imports;
mod order;
mod stores;

use self::good::GOOD;
use super::checks::{
    circle, layering, room_layering, steps_taken, store_named_above_the_backend,
    store_named_below_the_steps,
};
use super::krate::Crate;
use super::{Sources, ORDER, STEPS};

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
