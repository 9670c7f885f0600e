//! A limits file that is not TOML: the parser's error, placed at its line and column and worded as a sentence
//! (a table or key written twice, a duplicate policy above all, says so in the file's terms).

use toml::de::Error as TomlError;

use super::error::{Kind, LimitsError, Source};

/// Returns the error of a text the TOML parser refused.
pub(crate) fn error(source: Source<'_>, error: &TomlError) -> LimitsError {
    let at = error.span().unwrap_or(0..0);
    let message = error.message().trim_end();
    let problem = match message {
        "duplicate key" => twice(source, &at),
        _ => format!("this is not TOML: {message}"),
    };
    source.error(&at, Kind::Syntax, problem)
}

/// Returns the sentence of a key or table written twice, at `at` (the second).
fn twice(source: Source<'_>, at: &std::ops::Range<usize>) -> String {
    let key = source
        .slice(at)
        .trim()
        .trim_matches(|c| c == '"' || c == '\'');
    // The line the second one is on: a table's header says whose key it is.
    let line_start = source.text[..at.start.min(source.text.len())]
        .rfind('\n')
        .map_or(0, |newline| newline + 1);
    let line = source.text[line_start..]
        .lines()
        .next()
        .unwrap_or("")
        .trim();
    let header: Vec<&str> = line
        .strip_prefix('[')
        .and_then(|line| line.split(']').next())
        .map(|path| {
            path.split('.')
                .map(|part| part.trim().trim_matches(|c| c == '"' || c == '\''))
                .collect()
        })
        .unwrap_or_default();
    match header.as_slice() {
        ["policies", policy] if policy == &key => format!(
            "the policy {key:?} is written twice: each policy is one table, `[policies.{key}]`, written once"
        ),
        ["policies", policy, "plans", plan] if plan == &key => format!(
            "the plan {key:?} of policy {policy:?} is written twice: each plan is one table, written once"
        ),
        ["defaults"] if key == "defaults" => "`[defaults]` is written twice: write it once".to_owned(),
        _ => format!("`{key}` is written twice: a TOML table takes each key once"),
    }
}
