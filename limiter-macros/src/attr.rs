//! Parsing and validating the attribute's arguments: every mistake is a `syn::Error` at the user's token.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::{Expr, Lit, LitInt, LitStr, Path, Token};

mod kw {
    syn::custom_keyword!(prefix);
    syn::custom_keyword!(key);
    syn::custom_keyword!(window);
    syn::custom_keyword!(max);
    syn::custom_keyword!(message);
}

const EXPECTED: &str = "expected one of: `prefix`, `key`, `window`, `max`, `message`, `crate`";

/// The arguments of one `#[rate_limit(...)]`, each present only if written.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) prefix: Option<LitStr>,
    /// The parts of the key: `key = a` has one, `key = (a, b.c)` two.
    pub(crate) key: Option<Vec<Expr>>,
    pub(crate) window: Option<Millis>,
    pub(crate) max: Option<u64>,
    pub(crate) message: Option<LitStr>,
    pub(crate) krate: Option<Path>,
}

/// A window length in milliseconds, checked at compile time.
pub(crate) struct Millis(pub(crate) u64);

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = Args::default();
        while !input.is_empty() {
            let lookahead = input.lookahead1();
            if lookahead.peek(kw::prefix) {
                let name = input.parse::<kw::prefix>()?;
                assign(input, "prefix", name.span, "prefix = \"rate_limit:emp:\"")?;
                set(
                    &mut args.prefix,
                    "prefix",
                    name.span,
                    string(input, "prefix")?,
                )?;
            } else if lookahead.peek(kw::key) {
                let name = input.parse::<kw::key>()?;
                assign(input, "key", name.span, "key = id")?;
                set(&mut args.key, "key", name.span, key_parts(input.parse()?)?)?;
            } else if lookahead.peek(kw::window) {
                let name = input.parse::<kw::window>()?;
                assign(input, "window", name.span, "window = 10")?;
                set(&mut args.window, "window", name.span, window(input)?)?;
            } else if lookahead.peek(kw::max) {
                let name = input.parse::<kw::max>()?;
                assign(input, "max", name.span, "max = 100")?;
                set(&mut args.max, "max", name.span, max(input)?)?;
            } else if lookahead.peek(kw::message) {
                let name = input.parse::<kw::message>()?;
                assign(input, "message", name.span, "message = \"slow down\"")?;
                set(
                    &mut args.message,
                    "message",
                    name.span,
                    string(input, "message")?,
                )?;
            } else if lookahead.peek(Token![crate]) {
                let name = input.parse::<Token![crate]>()?;
                assign(input, "crate", name.span, "crate = \"my_app::limiter\"")?;
                set(&mut args.krate, "crate", name.span, krate(input)?)?;
            } else if input.peek(syn::Ident::peek_any) {
                let unknown = input.call(syn::Ident::parse_any)?;
                return Err(syn::Error::new(
                    unknown.span(),
                    format!("unknown argument `{unknown}`; {EXPECTED}"),
                ));
            } else {
                return Err(lookahead.error());
            }
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(args)
    }
}

/// Consumes the `=` after an argument's name and makes sure a value follows. A missing `=` or value is
/// reported at the name: the end of the arguments has no span of its own, so syn's own error would point at
/// the whole attribute.
fn assign(input: ParseStream<'_>, name: &str, span: Span, example: &str) -> syn::Result<()> {
    let missing = || syn::Error::new(span, format!("`{name}` needs a value, e.g. `{example}`"));
    if !input.peek(Token![=]) {
        return Err(missing());
    }
    input.parse::<Token![=]>()?;
    if input.is_empty() || input.peek(Token![,]) {
        return Err(missing());
    }
    Ok(())
}

/// Stores an argument, refusing a second occurrence (the error points at the second one).
fn set<T>(slot: &mut Option<T>, name: &str, span: Span, value: T) -> syn::Result<()> {
    if slot.is_some() {
        return Err(syn::Error::new(
            span,
            format!("`{name}` is given more than once"),
        ));
    }
    *slot = Some(value);
    Ok(())
}

fn string(input: ParseStream<'_>, name: &str) -> syn::Result<LitStr> {
    match input.parse::<Lit>()? {
        Lit::Str(s) => Ok(s),
        other => Err(syn::Error::new(
            other.span(),
            format!("`{name}` takes a string literal, e.g. `{name} = \"...\"`"),
        )),
    }
}

fn key_parts(expr: Expr) -> syn::Result<Vec<Expr>> {
    match expr {
        Expr::Tuple(tuple) if tuple.elems.is_empty() => Err(syn::Error::new(
            tuple.paren_token.span.join(),
            "`key = ()` has no parts: name at least one, e.g. `key = id`, or leave `key` out to count every \
             call in one bucket",
        )),
        Expr::Tuple(tuple) => Ok(tuple.elems.into_iter().collect()),
        expr => Ok(vec![expr]),
    }
}

fn max(input: ParseStream<'_>) -> syn::Result<u64> {
    let lit = match input.parse::<Lit>()? {
        Lit::Int(int) if int.suffix().is_empty() => int,
        Lit::Int(int) => {
            return Err(syn::Error::new(
                int.span(),
                format!(
                    "`max` takes a plain integer, e.g. `max = 100`, not one with the suffix `{}`",
                    int.suffix()
                ),
            ))
        }
        other => {
            return Err(syn::Error::new(
                other.span(),
                "`max` takes an integer: the admissions per window, e.g. `max = 100`",
            ))
        }
    };
    let max = unsigned(&lit, "max")?;
    if max == 0 {
        return Err(syn::Error::new(
            lit.span(),
            "`max` must be at least 1: a limit of zero would reject every call",
        ));
    }
    Ok(max)
}

fn window(input: ParseStream<'_>) -> syn::Result<Millis> {
    let (millis, span) = match input.parse::<Lit>()? {
        Lit::Int(secs) if !secs.suffix().is_empty() => {
            // `window = 500ms` lexes as the integer 500 with a suffix; never read it as 500 seconds.
            return Err(syn::Error::new(
                secs.span(),
                format!(
                    "`window` takes whole seconds (`window = 10`) or a duration string: write `window = \"{}{}\"`",
                    secs.base10_digits(),
                    secs.suffix()
                ),
            ));
        }
        Lit::Int(secs) => (seconds(&secs)?, secs.span()),
        Lit::Str(text) => (duration(&text)?, text.span()),
        other => {
            return Err(syn::Error::new(
                other.span(),
                "`window` takes whole seconds (`window = 10`) or a duration string (`\"500ms\"`, `\"10s\"`, \
                 `\"1m\"`, `\"1h\"`)",
            ))
        }
    };
    if millis == 0 {
        return Err(syn::Error::new(span, "`window` must be longer than zero"));
    }
    Ok(Millis(millis))
}

fn seconds(lit: &LitInt) -> syn::Result<u64> {
    unsigned(lit, "window")?
        .checked_mul(1000)
        .ok_or_else(|| syn::Error::new(lit.span(), "`window` is too long"))
}

/// An integer literal's value as a `u64`, with an error that names the argument.
fn unsigned(lit: &LitInt, name: &str) -> syn::Result<u64> {
    if lit.base10_digits().starts_with('-') {
        return Err(syn::Error::new(
            lit.span(),
            format!("`{name}` cannot be negative"),
        ));
    }
    lit.base10_parse().map_err(|_| {
        syn::Error::new(
            lit.span(),
            format!("`{name}` is too large: at most {}", u64::MAX),
        )
    })
}

/// `"500ms"`, `"10s"`, `"1m"`, `"1h"`: one whole number and one unit.
fn duration(lit: &LitStr) -> syn::Result<u64> {
    let text = lit.value();
    let malformed = || {
        syn::Error::new(
            lit.span(),
            format!(
                "invalid duration {text:?}: expected a whole number and a unit, one of `ms`, `s`, `m`, `h` \
                 (e.g. \"500ms\", \"10s\", \"1m\", \"1h\")"
            ),
        )
    };
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let (number, unit) = text.split_at(digits);
    let number: u64 = number.parse().map_err(|_| malformed())?;
    if unit.is_empty() {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "duration {text:?} has no unit: write `window = \"{number}s\"` (or `window = {number}`) for seconds, \
                 or use `ms`, `m` or `h`"
            ),
        ));
    }
    let unit_millis = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(malformed()),
    };
    number
        .checked_mul(unit_millis)
        .ok_or_else(|| syn::Error::new(lit.span(), "`window` is too long"))
}

fn krate(input: ParseStream<'_>) -> syn::Result<Path> {
    let lit = string(input, "crate")?;
    lit.parse::<Path>().map_err(|_| {
        syn::Error::new(
            lit.span(),
            format!("`crate` takes the path of the runtime crate, e.g. `crate = \"my_app::limiter\"`, not {:?}", lit.value()),
        )
    })
}
