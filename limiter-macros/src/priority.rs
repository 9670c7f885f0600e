//! `priority = ...` and `reserve = "..."`: how much each call matters, and the shares of a limit kept for the
//! calls that matter more (see the runtime's `Priority` and `Rule::reserve`), read from the attribute, with the
//! errors of a value that is not one.
//!
//! The names are the runtime's (`Priority::as_str`), read in any case, as the runtime reads them; a share is a
//! whole percent, at most 100%, as the runtime's `LIMITER_RESERVE` takes it.

use proc_macro2::Span;
use syn::{Expr, Ident, LitStr};

/// The priorities, from the lowest, as the attribute names them and as the runtime's `Priority` variants. A test
/// holds them to the runtime's.
pub(crate) const PRIORITIES: [(&str, &str); 4] = [
    ("low", "Low"),
    ("normal", "Normal"),
    ("high", "High"),
    ("critical", "Critical"),
];

/// The priorities, from the highest, for the errors that name them.
const NAMED: &str = "`critical`, `high`, `normal` and `low`";

/// Each call's priority (`priority = ...`).
#[derive(Clone)]
pub(crate) enum CallPriority {
    /// `priority = "critical"`: every call's, checked as it is parsed: the runtime's variant, spanned at the
    /// literal.
    Named(Ident),
    /// `priority = <expr>`: each call's, a `Priority` computed from its borrowed arguments.
    Call(Expr),
}

/// One share of `reserve = "..."`: the percent of the limit kept for the calls of a priority and above.
#[derive(Clone)]
pub(crate) struct Reserve {
    /// The runtime's `Priority` variant the share is kept for (`Normal`, `High` or `Critical`), spanned at the
    /// literal.
    pub(crate) priority: Ident,
    /// A whole percent, at most 100.
    pub(crate) percent: u8,
}

/// What `priority` is, for the error of a literal that is no priority's name.
pub(crate) const WHAT_PRIORITY_IS: &str =
    "`priority` takes a priority's name, every call's (`priority = \"critical\"`), or an expression over the \
     arguments whose value is a `Priority`, each call's (`priority = tier.priority()`)";

/// What `reserve` is, for the error of a value that is not a string literal.
pub(crate) const WHAT_RESERVE_IS: &str =
    "`reserve` keeps shares of the limit for the calls of a priority and above: a string of a priority and a \
     whole percent, e.g. `reserve = \"critical 20%\"`, or several, separated by commas (`\"critical 10%, high \
     30%\"`)";

/// Finds the runtime's variant of the priority `name`, in any case.
fn variant(name: &str) -> Option<&'static str> {
    PRIORITIES
        .iter()
        .find(|(known, _)| known.eq_ignore_ascii_case(name))
        .map(|&(_, variant)| variant)
}

/// Reads `priority = "critical"`: the runtime's variant of the priority the literal names, spanned at it.
pub(crate) fn named(lit: &LitStr) -> syn::Result<Ident> {
    let name = lit.value();
    match variant(name.trim()) {
        Some(variant) => Ok(Ident::new(variant, lit.span())),
        None => Err(syn::Error::new(
            lit.span(),
            format!(
                "unknown priority {name:?}: the priorities are {NAMED}, e.g. `priority = \"critical\"`; or give \
                 an expression over the arguments whose value is a `Priority`, each call's (`priority = \
                 tier.priority()`)"
            ),
        )),
    }
}

/// Reads `reserve = "critical 10%, high 30%"`: a priority above `low` and a whole percent up to 100% each,
/// separated by commas, each priority at most once. Every error is spanned at the literal.
pub(crate) fn reserves(lit: &LitStr) -> syn::Result<Vec<Reserve>> {
    let text = lit.value();
    let error = |message: String| syn::Error::new(lit.span(), message);
    if text.trim().is_empty() {
        return Err(error(format!(
            "`reserve = {text:?}` keeps nothing: write a priority and the share of the limit kept for it and \
             above, e.g. `reserve = \"critical 20%\"`, or leave `reserve` out"
        )));
    }
    let mut reserves: Vec<(Reserve, &str)> = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let reserve = share(item, lit.span()).map_err(|message| {
            error(match message {
                Problem::Empty => format!(
                    "`reserve = {text:?}` has a comma with no share on one side: separate the shares with \
                     commas, e.g. `reserve = \"critical 10%, high 30%\"`"
                ),
                Problem::Said(message) => message,
            })
        })?;
        if let Some((_, first)) = reserves
            .iter()
            .find(|(seen, _)| seen.priority == reserve.priority)
        {
            return Err(error(format!(
                "`reserve` gives `{}` two shares, `{first}` and `{item}`: give each priority one",
                reserve.priority.to_string().to_lowercase()
            )));
        }
        reserves.push((reserve, item));
    }
    Ok(reserves.into_iter().map(|(reserve, _)| reserve).collect())
}

/// Why an item of `reserve` is no share.
enum Problem {
    /// Nothing between two commas, or before or after one.
    Empty,
    /// Anything else, said whole.
    Said(String),
}

/// Reads one share, `critical 20%`, trimmed.
fn share(item: &str, span: Span) -> Result<Reserve, Problem> {
    let words: Vec<&str> = item.split_whitespace().collect();
    let is_share = |word: &str| word.ends_with('%');
    let (name, share) = match words.as_slice() {
        [] => return Err(Problem::Empty),
        [name, share] => (*name, *share),
        [word] if variant(word).is_some() => {
            return Err(Problem::Said(format!(
                "`{word}` has no share in `reserve`: write the percent of the limit kept for it and above, e.g. \
                 `{word} 20%`"
            )))
        }
        [word] if is_share(word) => {
            return Err(Problem::Said(format!(
                "`{word}` names no priority in `reserve`: write the priority it is kept for (and above), e.g. \
                 `critical {word}`"
            )))
        }
        _ => {
            return Err(Problem::Said(format!(
                "`{item}` is not a share of `reserve`: write a priority and a whole percent, e.g. `critical \
                 20%`, and separate the shares with commas (`\"critical 10%, high 30%\"`)"
            )))
        }
    };
    let Some(variant) = variant(name) else {
        return Err(Problem::Said(format!(
            "unknown priority `{name}` in `reserve`: the priorities are {NAMED}, e.g. `reserve = \"critical \
             20%\"`"
        )));
    };
    if variant == "Low" {
        return Err(Problem::Said(format!(
            "`{item}` keeps nothing: no call is below `low`, so a share kept for `low` calls and above is kept \
             for every call; keep it for `normal`, `high` or `critical` (`normal {share}` keeps it from `low` \
             calls)"
        )));
    }
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    let percent = match share.strip_suffix('%') {
        Some(number) if digits(number) => {
            // Past its leading zeros, a number of more than three digits is over 100 (and maybe over any integer).
            let significant = number.trim_start_matches('0');
            let percent = match significant.len() {
                0 => Some(0),
                1..=3 => significant.parse::<u8>().ok(),
                _ => None,
            };
            match percent.filter(|&percent| percent <= 100) {
                Some(percent) => percent,
                None => {
                    return Err(Problem::Said(format!(
                        "`{item}` keeps more than the whole limit: a share is at most 100% (`{name} 100%` keeps \
                         all of it for `{name}` calls and above)"
                    )))
                }
            }
        }
        None if digits(share) => {
            return Err(Problem::Said(format!(
                "the share in `{item}` has no `%`: a share is a whole percent of the limit, `{name} {share}%`"
            )))
        }
        _ => {
            return Err(Problem::Said(format!(
                "the share in `{item}` is not a whole percent: a share is a whole percent of the limit, from 0% \
                 to 100%, e.g. `{name} 20%`"
            )))
        }
    };
    Ok(Reserve {
        priority: Ident::new(variant, span),
        percent,
    })
}

#[cfg(test)]
mod tests {
    use proc_macro2::Span;
    use syn::LitStr;

    use super::{named, reserves, PRIORITIES};

    /// Checks that the priorities this crate names are the runtime's, in the same order.
    #[test]
    fn the_priorities_are_the_runtimes() {
        let runtime = limiter_runtime::Priority::ALL.map(limiter_runtime::Priority::as_str);
        assert_eq!(PRIORITIES.map(|(name, _)| name), runtime);
        let variants = limiter_runtime::Priority::ALL.map(|priority| format!("{priority:?}"));
        assert_eq!(PRIORITIES.map(|(_, variant)| variant), variants);
    }

    fn lit(text: &str) -> LitStr {
        LitStr::new(text, Span::call_site())
    }

    /// Checks that `priority = "..."` names a priority, in any case, as the runtime reads it.
    #[test]
    fn a_named_priority() {
        for (text, variant) in [("critical", "Critical"), ("Low", "Low"), ("HIGH", "High")] {
            assert_eq!(named(&lit(text)).unwrap().to_string(), variant);
            let runtime: limiter_runtime::Priority = text.parse().unwrap();
            assert_eq!(format!("{runtime:?}"), variant);
        }
        let error = named(&lit("urgent")).unwrap_err().to_string();
        assert!(error.contains("unknown priority \"urgent\""), "{error}");
    }

    /// Checks that the shares are read as the runtime reads them, and that text that is not one is refused,
    /// saying why.
    #[test]
    fn reserves_are_shares_of_priorities() {
        let shares = |text: &str| match reserves(&lit(text)) {
            Ok(reserves) => reserves
                .iter()
                .map(|reserve| (reserve.priority.to_string(), reserve.percent))
                .collect::<Vec<_>>(),
            Err(error) => panic!("{text}: {error}"),
        };
        let owned = |shares: &[(&str, u8)]| {
            shares
                .iter()
                .map(|&(priority, percent)| (priority.to_owned(), percent))
                .collect::<Vec<_>>()
        };
        assert_eq!(shares("critical 20%"), owned(&[("Critical", 20)]));
        assert_eq!(
            shares(" critical 10% ,high 30%, Normal 0%"),
            owned(&[("Critical", 10), ("High", 30), ("Normal", 0)])
        );
        assert_eq!(shares("high 100%"), owned(&[("High", 100)]));
        assert_eq!(shares("high 007%"), owned(&[("High", 7)]));
        // A higher priority may keep more than a lower one: the lower then adds nothing.
        assert_eq!(
            shares("critical 30%, high 10%"),
            owned(&[("Critical", 30), ("High", 10)])
        );
        for (text, refused) in [
            ("", "keeps nothing"),
            ("  ", "keeps nothing"),
            ("critical 120%", "keeps more than the whole limit"),
            (
                "critical 1000000000000000000000%",
                "more than the whole limit",
            ),
            (
                "critical 20",
                "has no `%`: a share is a whole percent of the limit, `critical 20%`",
            ),
            ("critical 2.5%", "is not a whole percent"),
            ("critical x%", "is not a whole percent"),
            ("critical -5%", "is not a whole percent"),
            ("critical %", "is not a whole percent"),
            ("urgent 20%", "unknown priority `urgent`"),
            ("low 20%", "no call is below `low`"),
            (
                "critical 20%, critical 5%",
                "two shares, `critical 20%` and `critical 5%`",
            ),
            ("critical 20%, Critical 5%", "two shares"),
            ("critical", "`critical` has no share"),
            ("20%", "names no priority"),
            ("critical 20% high", "is not a share of `reserve`"),
            ("critical 20%,", "a comma with no share"),
            (", critical 20%", "a comma with no share"),
        ] {
            match reserves(&lit(text)) {
                Err(error) => assert!(error.to_string().contains(refused), "{text}: {error}"),
                Ok(_) => panic!("{text:?} is not a reserve"),
            }
        }
    }
}
