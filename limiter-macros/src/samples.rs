//! The attribute reads the grammar's samples (`limiter_grammar::samples`) as they say, through its own
//! reader (`Args`, as `#[rate_limit(...)]` parses its arguments): the runtime's tests hold its readers (the
//! environment's, `FromStr`) to the same samples, so the attribute and the runtime take the same texts, as
//! the same values.

use limiter_grammar::samples::{ALGORITHMS, DURATIONS, PENALTIES, PRIORITIES, RESERVES};
use limiter_grammar::Priority;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::LitStr;

use crate::attr::{Args, Duration};
use crate::penalty::Penalty;
use crate::priority::{variant, CallPriority};

/// Reads `#[rate_limit(<arguments>)]`'s arguments as the attribute does, if it takes them.
fn read(arguments: TokenStream) -> Option<Args> {
    syn::parse2::<Args>(arguments).ok()
}

/// Returns `text` as a string literal.
fn lit(text: &str) -> LitStr {
    LitStr::new(text, Span::call_site())
}

/// Returns the shares a rule keeps, as the runtime folds them: the percent kept for `normal`, `high` and
/// `critical` and above, the last written for each (`none` and 0% keep nothing).
fn kept(shares: impl IntoIterator<Item = (String, u8)>) -> [u8; 3] {
    let mut kept = [0; 3];
    for (priority, percent) in shares {
        let place = Priority::ALL
            .iter()
            .position(|&known| variant(known) == priority)
            .expect("a runtime variant");
        kept[place - 1] = percent;
    }
    kept
}

/// Checks that `window = "<text>"` reads each duration as the samples say, refusing zero, as a window must be
/// longer than zero.
#[test]
fn durations() {
    for &(text, expected) in DURATIONS {
        let lit = lit(text);
        let read = read(quote!(window = #lit)).map(|args| match args.window.map(|w| w.value) {
            Some(Duration::Millis(millis)) => millis,
            _ => panic!("{text:?}: a literal window is read as it is parsed"),
        });
        let expected = expected.filter(|&millis| millis > 0);
        assert_eq!(read, expected, "window = {text:?}");
    }
}

/// Checks that `penalty = "<text>"` reads each penalty as the samples say.
#[test]
fn penalties() {
    for &(text, expected) in PENALTIES {
        let lit = lit(text);
        let read = read(quote!(penalty = #lit)).map(|args| match args.penalty.map(|p| p.value) {
            Some(Penalty::Fixed(length)) => (length, length),
            Some(Penalty::Escalating { first, cap }) => (first, cap),
            None => panic!("{text:?}: no penalty read"),
        });
        assert_eq!(read, expected, "penalty = {text:?}");
    }
}

/// Checks that `reserve = "<text>"` keeps the shares the samples say (`none` keeps none).
#[test]
fn reserves() {
    for &(text, expected) in RESERVES {
        let lit = lit(text);
        let read = read(quote!(reserve = #lit)).map(|args| {
            let shares = args.reserve.expect("reserve is read").value;
            kept(
                shares
                    .into_iter()
                    .map(|share| (share.priority.to_string(), share.percent)),
            )
        });
        let expected = expected.map(|shares| {
            kept(
                shares
                    .iter()
                    .map(|&(priority, percent)| (variant(priority).to_owned(), percent)),
            )
        });
        assert_eq!(read, expected, "reserve = {text:?}");
    }
}

/// Checks that `priority = "<text>"` names the priority the samples say.
#[test]
fn priorities() {
    for &(text, expected) in PRIORITIES {
        let lit = lit(text);
        let read = read(quote!(priority = #lit)).map(|args| match args.priority.map(|p| p.value) {
            Some(CallPriority::Named(variant)) => variant.to_string(),
            _ => panic!("{text:?}: a literal priority is a name"),
        });
        assert_eq!(
            read.as_deref(),
            expected.map(variant),
            "priority = {text:?}"
        );
    }
}

/// Checks that `algorithm = <text>` names the algorithm the samples say (a text that is no identifier is
/// refused: the attribute takes a name, not a string).
#[test]
fn algorithms() {
    for &(text, expected) in ALGORITHMS {
        let arguments = format!("algorithm = {text}");
        let read = syn::parse_str::<TokenStream>(&arguments)
            .ok()
            .and_then(read)
            .map(|args| args.algorithm.expect("algorithm is read").to_string());
        let expected = expected.map(|algorithm| algorithm.name());
        assert_eq!(read.as_deref(), expected, "algorithm = {text}");
    }
}
