//! The values of `max`, `burst`, `lease` and the duration arguments' whole seconds, as their setters take them.
//!
//! A literal was checked as it was parsed. A constant expression (`max = MAX`, `window = HOUR`) can only be
//! checked where the compiler evaluates it, in the rules' `static`: the code generated here does that, with the
//! errors a literal gets, at the expression.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Expr, Ident};

use crate::attr::{Duration, Integer};
use crate::messages;

/// Expands a positive integer argument into the `u64` its setter takes.
pub(crate) fn integer(name: &'static str, value: &Integer) -> TokenStream {
    let expr = match value {
        Integer::Literal(number) => return quote!(#number),
        Integer::Const(expr) => expr,
    };
    let label = match name {
        "max" => "the admissions per window, e.g. `max = 100` or `max = MAX`".to_owned(),
        _ => format!(
            "e.g. `{name} = {}` or `{name} = {}`",
            messages::example(name),
            name.to_uppercase()
        ),
    };
    checked(
        expr,
        &Check {
            name,
            not_integer: format!("`{name}` takes an integer, not `{{Self}}`"),
            label,
            zero: messages::zero(name),
            too_large: messages::too_large(name),
            largest: u64::MAX,
        },
    )
}

/// Expands a duration argument into the `Duration` its setter takes.
pub(crate) fn duration(name: &'static str, value: &Duration) -> TokenStream {
    let expr = match value {
        Duration::Millis(millis) => return quote!(::core::time::Duration::from_millis(#millis)),
        Duration::Seconds(expr) => expr,
    };
    let seconds = checked(
        expr,
        &Check {
            name,
            not_integer: format!("`{name}` takes whole seconds as an integer, not `{{Self}}`"),
            label: format!(
                "whole seconds (`{name} = 10` or `{name} = SECONDS`) or a duration string literal \
                 (`{name} = \"1m30s\"`)"
            ),
            zero: messages::not_longer_than_zero(name),
            too_large: messages::too_long(name),
            // At most `u64::MAX` milliseconds, as a literal's check has it.
            largest: u64::MAX / 1000,
        },
    );
    quote!(::core::time::Duration::from_secs(#seconds))
}

/// What a constant given to an integer argument must be, and the errors it gets when it is not.
struct Check {
    /// The argument's name.
    name: &'static str,
    /// The message when the constant is not an integer; `{Self}` is its type.
    not_integer: String,
    /// What the argument takes, under the expression when it is not an integer.
    label: String,
    /// The message when the constant is zero.
    zero: String,
    /// The message when the constant is over `largest`.
    too_large: String,
    largest: u64,
}

/// Expands a constant expression of any integer type into a `u64` checked where the compiler evaluates it: an
/// error at the expression says that it is not an integer, or why its value is refused, in the words a
/// literal's error uses. Of every integer type, because a limit is often a `usize` or an `i64` elsewhere in a
/// program.
fn checked(expr: &Expr, check: &Check) -> TokenStream {
    let Check {
        name,
        not_integer,
        label,
        zero,
        too_large,
        largest,
    } = check;
    // The call that checks the expression's type, and each `panic!`, spans the expression whole, from its first
    // token to its last, as the expression itself does: its type is then checked once, there (a type that is
    // not an integer is one error, not two), and an error of its value points at it.
    let first = expr.span();
    let last = expr
        .to_token_stream()
        .into_iter()
        .last()
        .map_or(first, |token| token.span());
    let spanning = |callee: TokenStream, arguments: TokenStream| {
        let mut arguments = Group::new(Delimiter::Parenthesis, arguments);
        arguments.set_span(last);
        quote_spanned!(first=> #callee #arguments)
    };
    let integer = spanning(quote_spanned!(first=> __limiter_integer), quote!(#expr));
    let panic = |message: &str| spanning(quote_spanned!(first=> ::core::panic!), quote!(#message));
    let negative = panic(&messages::negative(name));
    let (zero, too_large) = (panic(zero), panic(too_large));
    let largest = proc_macro2::Literal::u128_suffixed(u128::from(*largest));
    let types = |names: [&str; 6]| names.map(|name| Ident::new(name, Span::call_site()));
    let unsigned = types(["u8", "u16", "u32", "u64", "u128", "usize"]);
    let signed = types(["i8", "i16", "i32", "i64", "i128", "isize"]);
    let value = Ident::new("value", Span::mixed_site());
    let wide = Ident::new("wide", Span::mixed_site());
    // The value passes through `__limiter_integer`, whose result is a projection of the trait: for a type that
    // is not an integer it is an error type, on which the casts below report nothing more.
    quote! {{
        #[diagnostic::on_unimplemented(message = #not_integer, label = #label)]
        trait __LimiterInteger {
            type Itself;
            const SIGNED: ::core::primitive::bool;
        }
        #(impl __LimiterInteger for ::core::primitive::#unsigned {
            type Itself = Self;
            const SIGNED: ::core::primitive::bool = false;
        })*
        #(impl __LimiterInteger for ::core::primitive::#signed {
            type Itself = Self;
            const SIGNED: ::core::primitive::bool = true;
        })*
        const fn __limiter_integer<T: __LimiterInteger<Itself = T>>(
            value: T,
        ) -> <T as __LimiterInteger>::Itself {
            value
        }
        const fn __limiter_signed<T: __LimiterInteger>(_: &T) -> ::core::primitive::bool {
            T::SIGNED
        }
        let #value = #integer;
        // Exact for every value of every integer type but a negative one, which lands above `i128::MAX`.
        let #wide = #value as ::core::primitive::u128;
        if __limiter_signed(&#value) && (#wide as ::core::primitive::i128) < 0 {
            #negative
        }
        if #wide > #largest {
            #too_large
        }
        if #wide == 0 {
            #zero
        }
        #wide as ::core::primitive::u64
    }}
}
