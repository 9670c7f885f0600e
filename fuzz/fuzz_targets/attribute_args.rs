//! The attribute's argument parser on arbitrary token streams: it never panics, every error points at a
//! token of the input (never at nowhere), and arguments it accepts expand without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proc_macro2::TokenStream;

#[path = "../../limiter-macros/src/attr.rs"]
#[allow(dead_code)]
mod attr;
#[path = "../../limiter-macros/src/expand.rs"]
#[allow(dead_code)]
mod expand;
#[path = "../../limiter-macros/src/valid.rs"]
mod valid;

fuzz_target!(|text: &str| {
    check(text);
    // Spans keep their source text: forget it, or a long run fills the memory.
    proc_macro2::extra::invalidate_current_thread_spans();
});

fn check(text: &str) {
    let Ok(tokens) = text.parse::<TokenStream>() else {
        return;
    };
    let checked = syn::parse2::<attr::Args>(tokens).and_then(|args| {
        valid::validate(std::slice::from_ref(&args))?;
        Ok(args)
    });
    match checked {
        Ok(args) => {
            let function: syn::ItemFn = syn::parse_quote! {
                async fn f(id: &str, n: u32) -> Result<(), Error> { Ok(()) }
            };
            let _ = expand::expand(vec![args], function);
        }
        Err(error) => {
            for error in error {
                // A token's span covers its bytes (`bytes(7..8)`); `Span::call_site()`, none (`bytes(0..0)`).
                let place = format!("{:?}", error.span());
                assert!(
                    place != format!("{:?}", proc_macro2::Span::call_site()),
                    "an error without a place: {error} at {place} for {text:?}"
                );
            }
        }
    }
}
