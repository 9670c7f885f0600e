//! Parsing and validating the attribute's arguments: every mistake is a `syn::Error` at the user's token.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{discouraged::Speculative, Parse, ParseStream};
use syn::{Expr, Ident, Lit, LitInt, LitStr, Path, Token};

mod kw {
    syn::custom_keyword!(prefix);
    syn::custom_keyword!(name);
    syn::custom_keyword!(key);
    syn::custom_keyword!(window);
    syn::custom_keyword!(max);
    syn::custom_keyword!(message);
    syn::custom_keyword!(algorithm);
    syn::custom_keyword!(burst);
    syn::custom_keyword!(cost);
    syn::custom_keyword!(mode);
    syn::custom_keyword!(max_wait);
    syn::custom_keyword!(on_error);
    syn::custom_keyword!(skip_if);
    syn::custom_keyword!(shadow);
    syn::custom_keyword!(count);
    syn::custom_keyword!(lease);
    syn::custom_keyword!(lease_ttl);
}

const EXPECTED: &str =
    "expected one of: `prefix`, `key`, `window`, `max`, `message`, `name`, `algorithm`, `burst`, \
                        `cost`, `mode`, `max_wait`, `lease`, `lease_ttl`, `on_error`, `skip_if`, `shadow`, \
                        `count`, `crate`";

/// The algorithms `algorithm = ...` names: the runtime's `Algorithm::ALL`, by name, which this crate cannot
/// see (it generates code for the runtime, and cannot depend on it). A test holds the two lists together.
pub(crate) const ALGORITHMS: [&str; 5] = [
    "sliding_log",
    "fixed_window",
    "sliding_window",
    "token_bucket",
    "leaky_bucket",
];

/// The arguments of one `#[rate_limit(...)]`, each present only if written.
#[derive(Default)]
pub(crate) struct Args {
    pub(crate) prefix: Option<LitStr>,
    /// The parts of the key: `key = a` has one, `key = (a, b.c)` two.
    pub(crate) key: Option<Vec<Expr>>,
    pub(crate) window: Option<Millis>,
    pub(crate) max: Option<u64>,
    pub(crate) message: Option<LitStr>,
    /// The policy's name, for the HTTP quota fields.
    pub(crate) name: Option<LitStr>,
    /// The algorithm's name as written (one of [`ALGORITHMS`]).
    pub(crate) algorithm: Option<Ident>,
    pub(crate) burst: Option<Spanned<u64>>,
    pub(crate) cost: Option<Expr>,
    /// `mode = wait` (true) or `mode = reject` (false), spanned at the mode.
    pub(crate) wait: Option<Spanned<bool>>,
    pub(crate) max_wait: Option<Spanned<Millis>>,
    /// Units a node takes from Redis at once, and how long it may spend them.
    pub(crate) lease: Option<Spanned<u64>>,
    pub(crate) lease_ttl: Option<Spanned<Millis>>,
    /// The runtime's `OnError` variant: `Open`, `Closed` or `Local`.
    pub(crate) on_error: Option<Ident>,
    /// A `bool` expression over the arguments: when true, the call is not limited at all.
    pub(crate) skip_if: Option<Expr>,
    pub(crate) shadow: Option<bool>,
    /// The runtime's `Count` variant, `Failures` or `Successes` (`All` is as if left out), spanned at the
    /// argument's name.
    pub(crate) count: Option<Spanned<Ident>>,
    /// Whether `count` was written (`count = all` leaves `count` empty).
    pub(crate) counted: bool,
    pub(crate) krate: Option<Path>,
}

/// A window length in milliseconds, checked at compile time.
pub(crate) struct Millis(pub(crate) u64);

/// A value and the span of the token it came from (validation errors point there).
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

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
                let key = key_parts(expression(input, "key", name.span)?)?;
                set(&mut args.key, "key", name.span, key)?;
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
            } else if lookahead.peek(kw::name) {
                let name = input.parse::<kw::name>()?;
                assign(input, "name", name.span, "name = \"employees\"")?;
                set(&mut args.name, "name", name.span, string(input, "name")?)?;
            } else if lookahead.peek(kw::algorithm) {
                let name = input.parse::<kw::algorithm>()?;
                assign(input, "algorithm", name.span, "algorithm = token_bucket")?;
                set(
                    &mut args.algorithm,
                    "algorithm",
                    name.span,
                    algorithm(input)?,
                )?;
            } else if lookahead.peek(kw::burst) {
                let name = input.parse::<kw::burst>()?;
                assign(input, "burst", name.span, "burst = 20")?;
                let value = count(input, "burst", "`burst = 20`")?;
                set(
                    &mut args.burst,
                    "burst",
                    name.span,
                    Spanned {
                        value,
                        span: name.span,
                    },
                )?;
            } else if lookahead.peek(kw::cost) {
                let name = input.parse::<kw::cost>()?;
                assign(input, "cost", name.span, "cost = items.len()")?;
                let cost = expression(input, "cost", name.span)?;
                set(&mut args.cost, "cost", name.span, cost)?;
            } else if lookahead.peek(kw::mode) {
                let name = input.parse::<kw::mode>()?;
                assign(input, "mode", name.span, "mode = wait")?;
                set(&mut args.wait, "mode", name.span, mode(input)?)?;
            } else if lookahead.peek(kw::max_wait) {
                let name = input.parse::<kw::max_wait>()?;
                assign(input, "max_wait", name.span, "max_wait = \"2s\"")?;
                let value = duration_arg(input, "max_wait")?;
                set(
                    &mut args.max_wait,
                    "max_wait",
                    name.span,
                    Spanned {
                        value,
                        span: name.span,
                    },
                )?;
            } else if lookahead.peek(kw::lease) {
                let name = input.parse::<kw::lease>()?;
                assign(input, "lease", name.span, "lease = 50")?;
                let value = count(input, "lease", "`lease = 50`")?;
                set(
                    &mut args.lease,
                    "lease",
                    name.span,
                    Spanned {
                        value,
                        span: name.span,
                    },
                )?;
            } else if lookahead.peek(kw::lease_ttl) {
                let name = input.parse::<kw::lease_ttl>()?;
                assign(input, "lease_ttl", name.span, "lease_ttl = \"100ms\"")?;
                let value = duration_arg(input, "lease_ttl")?;
                set(
                    &mut args.lease_ttl,
                    "lease_ttl",
                    name.span,
                    Spanned {
                        value,
                        span: name.span,
                    },
                )?;
            } else if lookahead.peek(kw::on_error) {
                let name = input.parse::<kw::on_error>()?;
                assign(input, "on_error", name.span, "on_error = closed")?;
                set(&mut args.on_error, "on_error", name.span, on_error(input)?)?;
            } else if lookahead.peek(kw::skip_if) {
                let name = input.parse::<kw::skip_if>()?;
                assign(input, "skip_if", name.span, "skip_if = user.is_admin()")?;
                let skip = expression(input, "skip_if", name.span)?;
                set(&mut args.skip_if, "skip_if", name.span, skip)?;
            } else if lookahead.peek(kw::shadow) {
                let name = input.parse::<kw::shadow>()?;
                assign(input, "shadow", name.span, "shadow = true")?;
                let value = match input.parse::<Lit>()? {
                    Lit::Bool(value) => value.value,
                    other => {
                        return Err(syn::Error::new(
                            other.span(),
                            "`shadow` is `true` (count and report, never reject) or `false`",
                        ))
                    }
                };
                set(&mut args.shadow, "shadow", name.span, value)?;
            } else if lookahead.peek(kw::count) {
                let name = input.parse::<kw::count>()?;
                assign(input, "count", name.span, "count = failures")?;
                let value = counting(input)?;
                let spanned = value.map(|value| Spanned {
                    value,
                    span: name.span,
                });
                if args.counted {
                    return Err(syn::Error::new(
                        name.span,
                        "`count` is given more than once",
                    ));
                }
                args.counted = true;
                args.count = spanned;
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

/// An expression argument's value. One cut short by the end of the arguments is reported at the argument's
/// name (syn would point at the whole attribute): `key = user.` says "`key`'s expression is incomplete".
fn expression(input: ParseStream<'_>, name: &str, span: Span) -> syn::Result<Expr> {
    let fork = input.fork();
    match fork.parse::<Expr>() {
        Ok(expr) => {
            input.advance_to(&fork);
            Ok(expr)
        }
        Err(error) if fork.is_empty() => Err(syn::Error::new(
            span,
            format!("`{name}`'s expression is incomplete: {error}"),
        )),
        Err(error) => Err(error),
    }
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
    if !input.peek(Lit) {
        let found: proc_macro2::TokenTree = input.parse()?;
        return Err(syn::Error::new(
            found.span(),
            format!("`{name}` takes a string literal, e.g. `{name} = \"...\"`"),
        ));
    }
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
    count(input, "max", "the admissions per window, e.g. `max = 100`")
}

/// A positive integer literal: `max`, `burst`.
fn count(input: ParseStream<'_>, name: &str, example: &str) -> syn::Result<u64> {
    let lit = match input.parse::<Lit>()? {
        Lit::Int(int) if int.suffix().is_empty() => int,
        Lit::Int(int) => {
            return Err(syn::Error::new(
                int.span(),
                format!(
                "`{name}` takes a plain integer, e.g. `{name} = 100`, not one with the suffix `{}`",
                int.suffix()
            ),
            ))
        }
        other => {
            return Err(syn::Error::new(
                other.span(),
                format!("`{name}` takes an integer: {example}"),
            ))
        }
    };
    let value = unsigned(&lit, name)?;
    if value == 0 {
        return Err(syn::Error::new(
            lit.span(),
            match name {
                "lease" => {
                    "`lease` must be at least 1: a lease of zero units spares no call".to_owned()
                }
                _ => {
                    format!("`{name}` must be at least 1: a limit of zero would reject every call")
                }
            },
        ));
    }
    Ok(value)
}

fn algorithm(input: ParseStream<'_>) -> syn::Result<Ident> {
    let expected = || {
        ALGORITHMS
            .iter()
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !input.peek(Ident::peek_any) {
        return Err(input.error(format!("`algorithm` takes one of: {}", expected())));
    }
    let name = input.call(Ident::parse_any)?;
    if !ALGORITHMS.iter().any(|known| name == known) {
        return Err(syn::Error::new(
            name.span(),
            format!(
                "unknown algorithm `{name}`; expected one of: {}",
                expected()
            ),
        ));
    }
    Ok(name)
}

fn mode(input: ParseStream<'_>) -> syn::Result<Spanned<bool>> {
    let expected = "`mode` is `wait` (sleep until the call's slot) or `reject` (the default)";
    if !input.peek(Ident::peek_any) {
        return Err(input.error(expected));
    }
    let mode = input.call(Ident::parse_any)?;
    let wait = match mode.to_string().as_str() {
        "wait" => true,
        "reject" => false,
        _ => {
            return Err(syn::Error::new(
                mode.span(),
                format!("unknown mode `{mode}`: {expected}"),
            ))
        }
    };
    Ok(Spanned {
        value: wait,
        span: mode.span(),
    })
}

/// `all`, `failures` or `successes`: the runtime's `Count` variant, none for `all` (spanned at the value).
fn counting(input: ParseStream<'_>) -> syn::Result<Option<Ident>> {
    let expected = "`count` is `failures` (charge only calls whose body returns `Err`), `successes` (only `Ok` \
                    ones) or `all` (the default)";
    if !input.peek(Ident::peek_any) {
        return Err(input.error(expected));
    }
    let value = input.call(Ident::parse_any)?;
    let variant = match value.to_string().as_str() {
        "all" => return Ok(None),
        "failures" => "Failures",
        "successes" => "Successes",
        _ => {
            return Err(syn::Error::new(
                value.span(),
                format!("unknown `count = {value}`: {expected}"),
            ))
        }
    };
    Ok(Some(Ident::new(variant, value.span())))
}

/// `open`, `closed` or `local`, as the runtime's `OnError` variant (spanned at the value).
fn on_error(input: ParseStream<'_>) -> syn::Result<Ident> {
    let expected = "`on_error` is `open` (let the call through), `closed` (reject it) or `local` (decide in this \
                    process) when Redis fails";
    if !input.peek(Ident::peek_any) {
        return Err(input.error(expected));
    }
    let value = input.call(Ident::parse_any)?;
    let variant = match value.to_string().as_str() {
        "open" => "Open",
        "closed" => "Closed",
        "local" => "Local",
        _ => {
            return Err(syn::Error::new(
                value.span(),
                format!("unknown `on_error = {value}`: {expected}"),
            ))
        }
    };
    Ok(Ident::new(variant, value.span()))
}

fn window(input: ParseStream<'_>) -> syn::Result<Millis> {
    duration_arg(input, "window")
}

/// Whole seconds or a duration string, longer than zero: `window`, `max_wait`.
fn duration_arg(input: ParseStream<'_>, name: &str) -> syn::Result<Millis> {
    let (millis, span) = match input.parse::<Lit>()? {
        Lit::Int(secs) if !secs.suffix().is_empty() => {
            // `window = 500ms` lexes as the integer 500 with a suffix; never read it as 500 seconds.
            return Err(syn::Error::new(
                secs.span(),
                format!(
                    "`{name}` takes whole seconds (`{name} = 10`) or a duration string: write `{name} = \"{}{}\"`",
                    secs.base10_digits(),
                    secs.suffix()
                ),
            ));
        }
        Lit::Int(secs) => (seconds(&secs, name)?, secs.span()),
        Lit::Str(text) => (duration(&text, name)?, text.span()),
        other => {
            return Err(syn::Error::new(
                other.span(),
                format!(
                    "`{name}` takes whole seconds (`{name} = 10`) or a duration string (`\"500ms\"`, `\"10s\"`, \
                     `\"1m\"`, `\"1h\"`)"
                ),
            ))
        }
    };
    if millis == 0 {
        return Err(syn::Error::new(
            span,
            format!("`{name}` must be longer than zero"),
        ));
    }
    Ok(Millis(millis))
}

fn seconds(lit: &LitInt, name: &str) -> syn::Result<u64> {
    unsigned(lit, name)?
        .checked_mul(1000)
        .ok_or_else(|| syn::Error::new(lit.span(), format!("`{name}` is too long")))
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
fn duration(lit: &LitStr, name: &str) -> syn::Result<u64> {
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
                "duration {text:?} has no unit: write `{name} = \"{number}s\"` (or `{name} = {number}`) for seconds, \
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
        .ok_or_else(|| syn::Error::new(lit.span(), format!("`{name}` is too long")))
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

#[cfg(test)]
mod tests {
    /// The names this crate accepts are the runtime's, in the same order (its error messages list them).
    #[test]
    fn the_algorithms_are_the_runtimes() {
        let runtime = limiter_runtime::Algorithm::ALL.map(|algorithm| algorithm.name());
        assert_eq!(super::ALGORITHMS, runtime);
    }
}
