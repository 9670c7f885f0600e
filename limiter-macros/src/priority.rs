//! `priority = ...` and `reserve = "..."`: how much each call matters, and the shares of a limit kept for the
//! calls that matter more (see the runtime's `Priority` and `Rule::reserve`), read from the attribute by the
//! grammar the runtime reads them with (`limiter_grammar::priority` and `limiter_grammar::reserve`), with the
//! attribute's errors for a value that is not one.

use limiter_grammar::reserve::{self, ReserveErrorKind};
use limiter_grammar::Priority;
use syn::{Expr, Ident, LitStr};

/// Returns the runtime's `Priority` variant of `priority`. A test holds them to the runtime's.
pub(crate) fn variant(priority: Priority) -> &'static str {
    match priority {
        Priority::Low => "Low",
        Priority::Normal => "Normal",
        Priority::High => "High",
        Priority::Critical => "Critical",
    }
}

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

/// Reads `priority = "critical"`: the runtime's variant of the priority the literal names, spanned at it.
pub(crate) fn named(lit: &LitStr) -> syn::Result<Ident> {
    let name = lit.value();
    match Priority::parse(&name) {
        Ok(priority) => Ok(Ident::new(variant(priority), lit.span())),
        Err(_) => Err(syn::Error::new(
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
/// separated by commas, each priority at most once; or `"none"`, which keeps no share even where the
/// environment keeps some for every limit (a share of 0% for `normal` and above, which the runtime takes as
/// none). Every error is spanned at the literal.
pub(crate) fn reserves(lit: &LitStr) -> syn::Result<Vec<Reserve>> {
    let text = lit.value();
    match reserve::parse(&text) {
        Ok(shares) if shares.is_empty() => Ok(vec![Reserve {
            priority: Ident::new(variant(Priority::Normal), lit.span()),
            percent: 0,
        }]),
        Ok(shares) => Ok(shares
            .into_iter()
            .map(|share| Reserve {
                priority: Ident::new(variant(share.priority), lit.span()),
                percent: share.percent,
            })
            .collect()),
        Err(error) => Err(syn::Error::new(lit.span(), message(&text, error.kind))),
    }
}

/// Words the grammar's refusal of the shares `text` for the attribute.
fn message(text: &str, error: ReserveErrorKind) -> String {
    let at = |range: std::ops::Range<usize>| &text[range];
    match error {
        ReserveErrorKind::Empty => format!(
            "`reserve = {text:?}` keeps nothing: write a priority and the share of the limit kept for it and \
             above, e.g. `reserve = \"critical 20%\"`, or leave `reserve` out"
        ),
        ReserveErrorKind::EmptyItem { .. } => format!(
            "`reserve = {text:?}` has a comma with no share on one side: separate the shares with commas, e.g. \
             `reserve = \"critical 10%, high 30%\"`"
        ),
        ReserveErrorKind::NoShare { item } => {
            let word = at(item);
            format!(
                "`{word}` has no share in `reserve`: write the percent of the limit kept for it and above, e.g. \
                 `{word} 20%`"
            )
        }
        ReserveErrorKind::NoPriority { item } => {
            let word = at(item);
            format!(
                "`{word}` names no priority in `reserve`: write the priority it is kept for (and above), e.g. \
                 `critical {word}`"
            )
        }
        ReserveErrorKind::NotAShare { item } => format!(
            "`{}` is not a share of `reserve`: write a priority and a whole percent, e.g. `critical 20%`, and \
             separate the shares with commas (`\"critical 10%, high 30%\"`)",
            at(item)
        ),
        ReserveErrorKind::UnknownPriority { name, .. } => format!(
            "unknown priority `{}` in `reserve`: the priorities are {NAMED}, e.g. `reserve = \"critical 20%\"`",
            at(name)
        ),
        ReserveErrorKind::KeptForLow { item, share } => format!(
            "`{}` keeps nothing: no call is below `low`, so a share kept for `low` calls and above is kept for \
             every call; keep it for `normal`, `high` or `critical` (`normal {}` keeps it from `low` calls)",
            at(item),
            at(share)
        ),
        ReserveErrorKind::OverWhole { item, name } => {
            let name = at(name);
            format!(
                "`{}` keeps more than the whole limit: a share is at most 100% (`{name} 100%` keeps all of it \
                 for `{name}` calls and above)",
                at(item)
            )
        }
        ReserveErrorKind::NoPercentSign { item, name, share } => format!(
            "the share in `{}` has no `%`: a share is a whole percent of the limit, `{} {}%`",
            at(item),
            at(name),
            at(share)
        ),
        ReserveErrorKind::NotAPercent { item, name } => format!(
            "the share in `{}` is not a whole percent: a share is a whole percent of the limit, from 0% to \
             100%, e.g. `{} 20%`",
            at(item),
            at(name)
        ),
        ReserveErrorKind::Twice {
            priority,
            first,
            item,
        } => format!(
            "`reserve` gives `{priority}` two shares, `{}` and `{}`: give each priority one",
            at(first),
            at(item)
        ),
    }
}

#[cfg(test)]
mod tests {
    use proc_macro2::Span;
    use syn::LitStr;

    use limiter_grammar::Priority;

    use super::{named, reserves, variant};

    /// Checks that the priorities the grammar names are the runtime's, in the same order, and that each is
    /// spelled as the runtime's variant.
    #[test]
    fn the_priorities_are_the_runtimes() {
        let runtime = limiter_runtime::Priority::ALL.map(limiter_runtime::Priority::as_str);
        assert_eq!(Priority::ALL.map(Priority::name), runtime);
        let variants = limiter_runtime::Priority::ALL.map(|priority| format!("{priority:?}"));
        assert_eq!(Priority::ALL.map(variant), variants);
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
        // `none` keeps no share, even one the environment keeps for every limit: 0% for `normal` and above.
        assert_eq!(shares("none"), owned(&[("Normal", 0)]));
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
