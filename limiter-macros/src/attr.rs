//! Parsing and validating the attribute's arguments: every mistake is a `syn::Error` at the user's token.
//!
//! Each argument is a line of [`ARGUMENTS`] (its name and an example value) and an arm of [`Args::read`],
//! which reads its value with a small parser of its kind: a string, an expression, a positive integer, a
//! duration, or one of a few names. A positive integer or a duration is a literal, checked here, or a constant
//! expression, checked by the code `constant.rs` generates. The wording the two checks share is in
//! `messages.rs`, a zone's name is looked up in `zone.rs`, and the texts of `penalty` and of `priority` and
//! `reserve` are read by `penalty.rs` and `priority.rs`. A duration's text, a penalty's, a priority's name, the
//! shares of `reserve` and an algorithm's name are read by `limiter_grammar`, as the runtime reads them.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{discouraged::Speculative, Parse, ParseStream};
use syn::{Expr, Ident, Lit, LitInt, LitStr, Path, Token};

use limiter_grammar::algorithm::AlgorithmError;
use limiter_grammar::Algorithm;

use crate::messages::{self, ARGUMENTS};
use crate::penalty::{self, Penalty};
use crate::priority::{self, CallPriority, Reserve};
use crate::zone;

/// The calendar's periods `period = ...` names, as the runtime's `Period` variants.
const PERIODS: [(&str, &str); 3] = [("day", "Day"), ("week", "Week"), ("month", "Month")];

/// The arguments of one `#[rate_limit(...)]`, each present only if written.
#[derive(Default, Clone)]
pub(crate) struct Args {
    pub(crate) prefix: Option<LitStr>,
    /// The parts of the key: `key = a` has one, `key = (a, b.c)` two.
    pub(crate) key: Option<Vec<Expr>>,
    pub(crate) window: Option<Spanned<Duration>>,
    pub(crate) max: Option<Integer>,
    pub(crate) message: Option<LitStr>,
    /// The policy's name, for the HTTP quota fields.
    pub(crate) name: Option<LitStr>,
    /// The algorithm's name as written (one of the grammar's `Algorithm::RATES`).
    pub(crate) algorithm: Option<Ident>,
    pub(crate) burst: Option<Spanned<Integer>>,
    pub(crate) cost: Option<Expr>,
    /// `mode = wait` (true) or `mode = reject` (false), spanned at the mode.
    pub(crate) wait: Option<Spanned<bool>>,
    pub(crate) max_wait: Option<Spanned<Duration>>,
    /// Units a node takes from Redis at once, and how long it may spend them.
    pub(crate) lease: Option<Spanned<Integer>>,
    pub(crate) lease_ttl: Option<Spanned<Duration>>,
    /// The runtime's `OnError` variant: `Open`, `Closed` or `Local`.
    pub(crate) on_error: Option<Ident>,
    /// A `bool` expression over the arguments: when true, the call is not limited at all.
    pub(crate) skip_if: Option<Expr>,
    pub(crate) shadow: Option<bool>,
    /// The runtime's `Count` variant: `All`, `Failures` or `Successes`.
    pub(crate) count: Option<Ident>,
    /// Calls of a key running at once, and how long a permit lives in Redis unless renewed.
    pub(crate) in_flight: Option<Spanned<Integer>>,
    pub(crate) in_flight_ttl: Option<Spanned<Duration>>,
    /// A calendar quota's period: the runtime's `Period` variant (`Day`, `Week` or `Month`), spanned at the
    /// value.
    pub(crate) period: Option<Spanned<Ident>>,
    /// The time zone the periods are counted in: a name checked here, or each call's own.
    pub(crate) tz: Option<Spanned<Tz>>,
    /// The billing day a month starts on, 1 to 31.
    pub(crate) anchor: Option<Spanned<Anchor>>,
    /// How long a key the limit refuses is blocked, spanned at the argument's name.
    pub(crate) penalty: Option<Spanned<Penalty>>,
    /// Each call's priority: a name checked here (every call's), or each call's own, spanned at the argument's
    /// name.
    pub(crate) priority: Option<Spanned<CallPriority>>,
    /// The shares of the limit kept for the calls of a priority and above, in the order written, spanned at the
    /// argument's name.
    pub(crate) reserve: Option<Spanned<Vec<Reserve>>>,
    /// Each call's plan: an expression over the arguments naming one of the policy's plans (a `str`, a
    /// `String`, an `Option` of one).
    pub(crate) plan: Option<Expr>,
    pub(crate) krate: Option<Path>,
    /// Not an argument: this is the limit of calls in flight an attribute's `in_flight` adds beside its rate
    /// (the limit before it), skipped when that one is.
    pub(crate) beside_rate: bool,
}

/// A positive integer argument (`max`, `burst`, `lease`, `in_flight`).
#[derive(Clone)]
pub(crate) enum Integer {
    /// A literal, checked as it is parsed.
    Literal(u64),
    /// A constant expression of any integer type (`max = MAX`, `max = limits::LOGIN * 2`), checked by the
    /// code the expansion generates, where the compiler evaluates it.
    Const(Expr),
}

/// A duration argument longer than zero (`window`, `max_wait`, `lease_ttl`, `in_flight_ttl`).
#[derive(Clone)]
pub(crate) enum Duration {
    /// A literal, checked as it is parsed: whole seconds, or a duration string.
    Millis(u64),
    /// A constant expression of any integer type, whole seconds (`window = HOUR`), checked by the code the
    /// expansion generates.
    Seconds(Expr),
}

/// The time zone of a calendar quota (`tz = ...`).
#[derive(Clone)]
pub(crate) enum Tz {
    /// `tz = "Europe/Berlin"`: a zone's name, checked as it is parsed, as the zone data spells it (spanned at
    /// the literal).
    Named(LitStr),
    /// `tz = <expr>`: each call's zone, from its borrowed arguments (a `Zone`, or a reference to one).
    Call(Expr),
}

/// The billing day of a month (`anchor = ...`).
#[derive(Clone)]
pub(crate) enum Anchor {
    /// `anchor = 15`: a day, checked as it is parsed.
    Day(u8),
    /// `anchor = <expr>`: each call's billing day, from its borrowed arguments (a tenant's own).
    Call(Expr),
}

/// A value and the span of the token it came from (validation errors point there).
#[derive(Clone)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

impl Args {
    /// Reads one argument's value into its field, with the parser of its kind.
    fn read(&mut self, value: &Value<'_>) -> syn::Result<()> {
        match value.name {
            "prefix" => value.once(&mut self.prefix, string),
            "key" => value.once(&mut self.key, key),
            "window" => value.once(&mut self.window, |v| v.spanned(duration(v))),
            "max" => value.once(&mut self.max, max),
            "message" => value.once(&mut self.message, string),
            "policy" => value.once(&mut self.name, string),
            "algorithm" => value.once(&mut self.algorithm, algorithm),
            "burst" => value.once(&mut self.burst, |v| v.spanned(positive(v, "`burst = 20`"))),
            "cost" => value.once(&mut self.cost, expression),
            "mode" => value.once(&mut self.wait, mode),
            "max_wait" => value.once(&mut self.max_wait, |v| v.spanned(duration(v))),
            "lease" => value.once(&mut self.lease, |v| v.spanned(positive(v, "`lease = 50`"))),
            "lease_ttl" => value.once(&mut self.lease_ttl, |v| v.spanned(duration(v))),
            "on_error" => value.once(&mut self.on_error, on_error),
            "skip_if" => value.once(&mut self.skip_if, expression),
            "shadow" => value.once(&mut self.shadow, shadow),
            "count" => value.once(&mut self.count, counting),
            "in_flight" => value.once(&mut self.in_flight, |v| {
                v.spanned(positive(
                    v,
                    "the calls running at once, e.g. `in_flight = 4`",
                ))
            }),
            "in_flight_ttl" => value.once(&mut self.in_flight_ttl, |v| v.spanned(duration(v))),
            "period" => value.once(&mut self.period, |v| v.spanned(period(v))),
            "tz" => value.once(&mut self.tz, |v| v.spanned(tz(v))),
            "anchor" => value.once(&mut self.anchor, |v| v.spanned(anchor(v))),
            "penalty" => value.once(&mut self.penalty, |v| {
                v.spanned(text(v, penalty::WHAT_IT_IS).and_then(|lit| penalty::parse(&lit)))
            }),
            "priority" => value.once(&mut self.priority, |v| v.spanned(call_priority(v))),
            "reserve" => value.once(&mut self.reserve, |v| {
                v.spanned(
                    text(v, priority::WHAT_RESERVE_IS).and_then(|lit| priority::reserves(&lit)),
                )
            }),
            "plan" => value.once(&mut self.plan, expression),
            "crate" => value.once(&mut self.krate, krate),
            other => unreachable!("`{other}` is in ARGUMENTS but has no parser"),
        }
    }
}

impl Parse for Args {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut args = Args::default();
        while !input.is_empty() {
            if !input.peek(Ident::peek_any) {
                return Err(input.error(messages::expected_arguments()));
            }
            let name = input.call(Ident::parse_any)?;
            let Some(argument) = ARGUMENTS.iter().find(|(known, _)| name == known) else {
                return Err(syn::Error::new(
                    name.span(),
                    format!(
                        "unknown argument `{name}`; {}",
                        messages::expected_arguments()
                    ),
                ));
            };
            args.read(&Value::after_equals(input, *argument, name.span())?)?;
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(args)
    }
}

/// An argument's value, still to read: the input after the `=`, with the argument's name and its span (errors
/// that concern the argument as a whole point at its name).
struct Value<'a> {
    input: ParseStream<'a>,
    name: &'static str,
    span: Span,
}

impl<'a> Value<'a> {
    /// Consumes the `=` after an argument's name and makes sure a value follows. A missing `=` or value is
    /// reported at the name: the end of the arguments has no span of its own, so syn's own error would point
    /// at the whole attribute.
    fn after_equals(
        input: ParseStream<'a>,
        (name, example): (&'static str, &str),
        span: Span,
    ) -> syn::Result<Self> {
        let missing = || {
            syn::Error::new(
                span,
                format!("`{name}` needs a value, e.g. `{name} = {example}`"),
            )
        };
        if !input.peek(Token![=]) {
            return Err(missing());
        }
        input.parse::<Token![=]>()?;
        if input.is_empty() || input.peek(Token![,]) {
            return Err(missing());
        }
        Ok(Value { input, name, span })
    }

    /// Reads the value with `parse` into `slot`, refusing a second occurrence of the argument (the error
    /// points at the second one's name).
    fn once<T>(
        &self,
        slot: &mut Option<T>,
        parse: impl FnOnce(&Self) -> syn::Result<T>,
    ) -> syn::Result<()> {
        if slot.is_some() {
            return Err(syn::Error::new(
                self.span,
                format!("`{}` is given more than once", self.name),
            ));
        }
        *slot = Some(parse(self)?);
        Ok(())
    }

    /// Spans a value at the argument's name (for validation errors about the argument).
    fn spanned<T>(&self, value: syn::Result<T>) -> syn::Result<Spanned<T>> {
        Ok(Spanned {
            value: value?,
            span: self.span,
        })
    }
}

/// Parses an expression argument's value. One cut short by the end of the arguments is reported at the
/// argument's name (syn would point at the whole attribute): `key = user.` says "`key`'s expression is
/// incomplete".
fn expression(value: &Value<'_>) -> syn::Result<Expr> {
    let fork = value.input.fork();
    match fork.parse::<Expr>() {
        Ok(expr) => {
            value.input.advance_to(&fork);
            Ok(expr)
        }
        Err(error) if fork.is_empty() => Err(syn::Error::new(
            value.span,
            format!("`{}`'s expression is incomplete: {error}", value.name),
        )),
        Err(error) => Err(error),
    }
}

fn string(value: &Value<'_>) -> syn::Result<LitStr> {
    let (input, name) = (value.input, value.name);
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

fn key(value: &Value<'_>) -> syn::Result<Vec<Expr>> {
    key_parts(expression(value)?)
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

fn max(value: &Value<'_>) -> syn::Result<Integer> {
    positive(value, "the admissions per window, e.g. `max = 100`")
}

/// Tells whether the value is a literal alone, which is checked as it is parsed; any other value is an
/// expression, which must be constant (the rules are in a `static`) and is checked when the compiler evaluates
/// it.
fn is_literal(value: &Value<'_>) -> bool {
    let fork = value.input.fork();
    fork.parse::<Lit>().is_ok() && (fork.is_empty() || fork.peek(Token![,]))
}

/// Parses a positive integer: `max`, `burst`, `lease`.
fn positive(value: &Value<'_>, example: &str) -> syn::Result<Integer> {
    let name = value.name;
    if !is_literal(value) {
        return Ok(Integer::Const(expression(value)?));
    }
    let lit = match value.input.parse::<Lit>()? {
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
    let number = unsigned(&lit, name)?;
    if number == 0 {
        return Err(syn::Error::new(lit.span(), messages::zero(name)));
    }
    Ok(Integer::Literal(number))
}

/// Parses one of the names `choices` pairs with what they mean. A value that is not a name is refused with
/// `expected`, another name with `unknown(name)`; both at the value.
fn one_of<T: Copy>(
    value: &Value<'_>,
    choices: &[(&str, T)],
    expected: &str,
    unknown: impl FnOnce(&Ident) -> String,
) -> syn::Result<(Ident, T)> {
    if !value.input.peek(Ident::peek_any) {
        return Err(value.input.error(expected));
    }
    let name = value.input.call(Ident::parse_any)?;
    match choices.iter().find(|(known, _)| name == known) {
        Some(&(_, meaning)) => Ok((name, meaning)),
        None => Err(syn::Error::new(name.span(), unknown(&name))),
    }
}

/// Parses a rate's algorithm by its name, as the grammar reads it (`Algorithm::parse`), spanned at the name.
fn algorithm(value: &Value<'_>) -> syn::Result<Ident> {
    let names: Vec<String> = Algorithm::RATES
        .iter()
        .map(|algorithm| format!("`{algorithm}`"))
        .collect();
    let names = names.join(", ");
    if !value.input.peek(Ident::peek_any) {
        return Err(value
            .input
            .error(format!("`algorithm` takes one of: {names}")));
    }
    let name = value.input.call(Ident::parse_any)?;
    match Algorithm::parse(&name.to_string()) {
        Ok(_) => Ok(name),
        Err(AlgorithmError::Unknown(_)) => Err(syn::Error::new(
            name.span(),
            format!("unknown algorithm `{name}`; expected one of: {names}"),
        )),
        Err(error @ AlgorithmError::NotARate(_)) => Err(syn::Error::new(name.span(), error)),
    }
}

/// Parses `wait` (true) or `reject` (false), spanned at the value.
fn mode(value: &Value<'_>) -> syn::Result<Spanned<bool>> {
    let expected = "`mode` is `wait` (sleep until the call's slot) or `reject` (the default)";
    let unknown = |mode: &Ident| format!("unknown mode `{mode}`: {expected}");
    let (mode, wait) = one_of(
        value,
        &[("wait", true), ("reject", false)],
        expected,
        unknown,
    )?;
    Ok(Spanned {
        value: wait,
        span: mode.span(),
    })
}

/// Parses `all`, `failures` or `successes`, as the runtime's `Count` variant (spanned at the value).
fn counting(value: &Value<'_>) -> syn::Result<Ident> {
    let expected = "`count` is `failures` (charge only calls whose body returns `Err`), `successes` (only `Ok` \
                    ones) or `all` (the default)";
    let choices = [
        ("all", "All"),
        ("failures", "Failures"),
        ("successes", "Successes"),
    ];
    let unknown = |count: &Ident| format!("unknown `count = {count}`: {expected}");
    let (count, variant) = one_of(value, &choices, expected, unknown)?;
    Ok(Ident::new(variant, count.span()))
}

/// Parses `open`, `closed` or `local`, as the runtime's `OnError` variant (spanned at the value).
fn on_error(value: &Value<'_>) -> syn::Result<Ident> {
    let expected = "`on_error` is `open` (let the call through), `closed` (reject it) or `local` (decide in this \
                    process) when Redis fails";
    let choices = [("open", "Open"), ("closed", "Closed"), ("local", "Local")];
    let unknown = |on_error: &Ident| format!("unknown `on_error = {on_error}`: {expected}");
    let (on_error, variant) = one_of(value, &choices, expected, unknown)?;
    Ok(Ident::new(variant, on_error.span()))
}

/// Parses `day`, `week` or `month`, as the runtime's `Period` variant (spanned at the value).
fn period(value: &Value<'_>) -> syn::Result<Ident> {
    let names: Vec<String> = PERIODS
        .iter()
        .map(|(name, _)| format!("`{name}`"))
        .collect();
    let names = names.join(", ");
    let expected = format!("`period` takes one of: {names}");
    let unknown = |period: &Ident| format!("unknown period `{period}`; expected one of: {names}");
    let (period, variant) = one_of(value, &PERIODS, &expected, unknown)?;
    Ok(Ident::new(variant, period.span()))
}

/// Parses a zone's name, checked against the zone data the runtime bundles, or any other expression: each
/// call's zone.
fn tz(value: &Value<'_>) -> syn::Result<Tz> {
    if !is_literal(value) {
        return Ok(Tz::Call(expression(value)?));
    }
    let lit = match value.input.parse::<Lit>()? {
        Lit::Str(lit) => lit,
        other => {
            return Err(syn::Error::new(
                other.span(),
                "`tz` takes a time zone's name, e.g. `tz = \"Europe/Berlin\"`, or an expression over the \
                 arguments whose value is a `Zone` (each call's zone), e.g. `tz = tenant.zone`",
            ))
        }
    };
    zone::resolve(&lit).map(Tz::Named)
}

/// Parses the billing day of a month: an integer literal, 1 to 31, or any other expression: each call's.
fn anchor(value: &Value<'_>) -> syn::Result<Anchor> {
    if !is_literal(value) {
        return Ok(Anchor::Call(expression(value)?));
    }
    let lit = match value.input.parse::<Lit>()? {
        Lit::Int(int) if int.suffix().is_empty() => int,
        other => {
            return Err(syn::Error::new(
                other.span(),
                "`anchor` takes the billing day of a month, an integer from 1 to 31 (e.g. `anchor = 15`), or \
                 an expression over the arguments (each call's, e.g. `anchor = tenant.billing_day`)",
            ))
        }
    };
    let day = lit.base10_digits();
    match day.parse::<u8>() {
        Ok(day @ 1..=31) => Ok(Anchor::Day(day)),
        _ => Err(syn::Error::new(
            lit.span(),
            format!(
                "`anchor = {day}` is not a day of a month: the billing day is 1 to 31 (31 is the last day of \
                 every month)"
            ),
        )),
    }
}

fn shadow(value: &Value<'_>) -> syn::Result<bool> {
    match value.input.parse::<Lit>()? {
        Lit::Bool(shadow) => Ok(shadow.value),
        other => Err(syn::Error::new(
            other.span(),
            "`shadow` is `true` (count and report, never reject) or `false`",
        )),
    }
}

/// Parses whole seconds or a duration string, longer than zero: `window`, `max_wait`, `lease_ttl`.
fn duration(value: &Value<'_>) -> syn::Result<Duration> {
    let name = value.name;
    if !is_literal(value) {
        return Ok(Duration::Seconds(expression(value)?));
    }
    let (millis, span) = match value.input.parse::<Lit>()? {
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
        Lit::Str(text) => (duration_text(&text, name)?, text.span()),
        other => {
            return Err(syn::Error::new(
                other.span(),
                format!(
                    "`{name}` takes whole seconds (`{name} = 10`) or a duration string (`\"500ms\"`, `\"10s\"`, \
                     `\"1m30s\"`, `\"1h\"`, `\"1d\"`)"
                ),
            ))
        }
    };
    if millis == 0 {
        return Err(syn::Error::new(span, messages::not_longer_than_zero(name)));
    }
    Ok(Duration::Millis(millis))
}

fn seconds(lit: &LitInt, name: &str) -> syn::Result<u64> {
    unsigned(lit, name)?
        .checked_mul(1000)
        .ok_or_else(|| syn::Error::new(lit.span(), messages::too_long(name)))
}

/// Reads an integer literal's value as a `u64`, with an error that names the argument.
fn unsigned(lit: &LitInt, name: &str) -> syn::Result<u64> {
    if lit.base10_digits().starts_with('-') {
        return Err(syn::Error::new(lit.span(), messages::negative(name)));
    }
    lit.base10_parse()
        .map_err(|_| syn::Error::new(lit.span(), messages::too_large(name)))
}

/// Reads a duration string's length in milliseconds (see `limiter_grammar::duration` for its grammar).
fn duration_text(lit: &LitStr, name: &str) -> syn::Result<u64> {
    let text = lit.value();
    limiter_grammar::duration::millis(&text).map_err(|refused| {
        syn::Error::new(lit.span(), messages::refused_duration(&text, name, refused))
    })
}

/// Parses the string literal of an argument whose text is read as it is parsed (`penalty = "..."`,
/// `reserve = "..."`); any other value is refused with `what_it_is`, spanning it whole.
fn text(value: &Value<'_>, what_it_is: &str) -> syn::Result<LitStr> {
    let input = value.input;
    if input.peek(LitStr) {
        return input.parse();
    }
    let fork = input.fork();
    let Ok(expr) = fork.parse::<Expr>() else {
        let found: proc_macro2::TokenTree = input.parse()?;
        return Err(syn::Error::new(found.span(), what_it_is));
    };
    Err(syn::Error::new_spanned(expr, what_it_is))
}

/// Parses a priority's name, checked here (every call's), or any other expression: each call's, whose type the
/// compiler checks.
fn call_priority(value: &Value<'_>) -> syn::Result<CallPriority> {
    if !is_literal(value) {
        return Ok(CallPriority::Call(expression(value)?));
    }
    match value.input.parse::<Lit>()? {
        Lit::Str(lit) => priority::named(&lit).map(CallPriority::Named),
        other => Err(syn::Error::new(other.span(), priority::WHAT_PRIORITY_IS)),
    }
}

fn krate(value: &Value<'_>) -> syn::Result<Path> {
    let lit = string(value)?;
    lit.parse::<Path>().map_err(|_| {
        syn::Error::new(
            lit.span(),
            format!("`crate` takes the path of the runtime crate, e.g. `crate = \"my_app::limiter\"`, not {:?}", lit.value()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::{Args, Penalty, ARGUMENTS};

    /// Checks that each argument has a parser, and that the example its "needs a value" error shows is a value
    /// it takes.
    #[test]
    fn every_argument_takes_its_example() {
        for (name, example) in ARGUMENTS {
            let written = format!("{name} = {example}");
            if let Err(error) = syn::parse_str::<Args>(&written) {
                panic!("`{written}`: {error}");
            }
        }
    }

    /// Checks that the periods this crate names are the runtime's, in the same order.
    #[test]
    fn the_periods_are_the_runtimes() {
        let runtime = limiter_runtime::Period::ALL.map(|period| period.name());
        assert_eq!(super::PERIODS.map(|(name, _)| name), runtime);
        let variants = limiter_runtime::Period::ALL.map(|period| format!("{period:?}"));
        assert_eq!(super::PERIODS.map(|(_, variant)| variant), variants);
    }

    /// Checks that `penalty` takes a string literal, read as `penalty.rs` reads it, and that any other value
    /// is refused with what a penalty is.
    #[test]
    fn a_penalty_is_a_string() {
        let penalty = |value: &str| {
            syn::parse_str::<Args>(&format!("penalty = {value}"))
                .map(|args| args.penalty.map(|penalty| penalty.value))
                .map_err(|error| error.to_string())
        };
        assert!(matches!(
            penalty("\"1m..1h\""),
            Ok(Some(Penalty::Escalating {
                first: 60_000,
                cap: 3_600_000
            }))
        ));
        for value in ["600", "TEN_MINUTES"] {
            match penalty(value) {
                Err(error) => assert!(error.contains("`penalty` is how long"), "{value}: {error}"),
                Ok(_) => panic!("{value} is not a penalty"),
            }
        }
    }

    /// Checks that the names this crate accepts are the runtime's, in the same order (its error messages list
    /// them), and that `in_flight` and `calendar` are refused, saying how to ask for them.
    #[test]
    fn the_algorithms_are_the_runtimes() {
        let runtime = limiter_runtime::Algorithm::ALL.map(|algorithm| algorithm.name());
        assert_eq!(limiter_grammar::Algorithm::RATES.map(|a| a.name()), runtime);
        for (name, says) in [
            ("in_flight", "`in_flight = <calls>`"),
            ("calendar", "`period = month`"),
        ] {
            match syn::parse_str::<Args>(&format!("algorithm = {name}")) {
                Err(error) => assert!(error.to_string().contains(says), "{name}: {error}"),
                Ok(_) => panic!("`algorithm = {name}` is refused"),
            }
        }
    }
}
