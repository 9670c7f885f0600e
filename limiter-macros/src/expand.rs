//! Code generation: the user's function, unchanged but for a check that runs before its body.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{Block, Expr, ExprAsync, ExprCall, Ident, ItemFn, Local, Pat, ReturnType, Stmt, Type};

use crate::attr::Args;

/// Rewrites `item` so that its body runs only when the limit admits the call.
pub(crate) fn expand(args: Args, mut item: ItemFn) -> syn::Result<TokenStream> {
    if item.sig.asyncness.is_some() {
        let ret = result_type(&item)?;
        let check = check(&args, &item.sig.ident, &ret);
        let body = &item.block;
        item.block = Box::new(syn::parse_quote!({ #check #body }));
        return Ok(item.into_token_stream());
    }
    // `#[async_trait]` ran first: the method is no longer `async` but returns
    // `Box::pin(async move { ...; let __ret: R = { body }; __ret })`. Check inside that block.
    let has_receiver = item.sig.receiver().is_some();
    let name = item.sig.ident.clone();
    if let Some((ret, body)) = async_trait_body(&mut item.block) {
        let mut args = args;
        if has_receiver {
            // async-trait moved `self` into `__self` before the body.
            for part in args.key.iter_mut().flatten() {
                SelfToAsyncTraitSelf.visit_expr_mut(part);
            }
        }
        let check = check(&args, &name, &ret);
        let original = body.clone();
        *body = syn::parse_quote!({ #check #original });
        return Ok(item.into_token_stream());
    }
    Err(syn::Error::new(
        item.sig.fn_token.span(),
        "`#[rate_limit]` applies to an `async fn`",
    ))
}

/// The declared return type: the check returns the rejection through it.
fn result_type(item: &ItemFn) -> syn::Result<Type> {
    match &item.sig.output {
        ReturnType::Type(_, ty) => Ok((**ty).clone()),
        ReturnType::Default => Err(syn::Error::new(
            item.sig.paren_token.span.close(),
            "`#[rate_limit]` functions must return `Result<T, E>` where `E: From<RateLimited>`, \
             so a rejected call can return `Err`",
        )),
    }
}

/// The statements that run before the body: build the key from borrowed arguments, ask the runtime, and
/// return the rejection if the call is limited.
fn check(args: &Args, name: &Ident, ret: &Type) -> TokenStream {
    let krate = match &args.krate {
        Some(path) => path.to_token_stream(),
        None => quote!(::limiter_runtime),
    };
    // Locals are hidden from the user's code by `mixed_site`; items are not, so the static lives in a block of
    // its own and only a reference to it, in a hidden local, reaches the statements the user's code can see.
    let site = Ident::new("__limiter_site", Span::mixed_site());
    let call = Ident::new("__limiter_call", Span::mixed_site());
    let error = Ident::new("__limiter_rejection", Span::mixed_site());

    let some = |tokens: Option<TokenStream>| match tokens {
        Some(tokens) => quote!(::core::option::Option::Some(#tokens)),
        None => quote!(::core::option::Option::None),
    };
    let prefix = some(args.prefix.as_ref().map(ToTokens::to_token_stream));
    let window = some(args.window.as_ref().map(|w| {
        let millis = w.0;
        quote!(#millis)
    }));
    let max = some(args.max.map(|m| quote!(#m)));
    let message = some(args.message.as_ref().map(ToTokens::to_token_stream));
    let function = name.to_string();

    let new_call = match &args.key {
        Some(parts) => {
            let format = vec!["{}"; parts.len()].join(":");
            quote!(#krate::__private::Call::keyed(#site, ::core::format_args!(#format, #(#parts),*)))
        }
        None => quote!(#krate::__private::Call::unkeyed(#site)),
    };
    let rejected = quote_spanned! {ret.span()=>
        return #krate::__private::rejected(#error);
    };

    quote! {
        let #site: &'static #krate::__private::Site = {
            static SITE: #krate::__private::Site = #krate::__private::Site::new(
                ::core::concat!(::core::module_path!(), "::", #function),
                #prefix,
                #window,
                #max,
                #message,
                ::core::option::Option::None,
            );
            &SITE
        };
        // The key is formatted here, by reference, so the arguments are neither moved nor held across `.await`.
        let #call = #new_call;
        if let ::core::result::Result::Err(#error) = #call.check().await {
            #rejected
        }
    }
}

/// Finds, in an `#[async_trait]` method, the user's body and the declared return type.
fn async_trait_body(block: &mut Block) -> Option<(Type, &mut Block)> {
    let Some(Stmt::Expr(Expr::Call(ExprCall { func, args, .. }), None)) = block.stmts.last_mut()
    else {
        return None;
    };
    let Expr::Path(path) = &**func else {
        return None;
    };
    let segments: Vec<String> = path
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    if !segments.ends_with(&["Box".into(), "pin".into()]) || args.len() != 1 {
        return None;
    }
    let Some(Expr::Async(ExprAsync { block: inner, .. })) = args.first_mut() else {
        return None;
    };
    inner.stmts.iter_mut().find_map(|stmt| match stmt {
        Stmt::Local(Local {
            pat: Pat::Type(typed),
            init: Some(init),
            ..
        }) if matches!(&*typed.pat, Pat::Ident(p) if p.ident == "__ret") => match &mut *init.expr {
            Expr::Block(body) => Some(((*typed.ty).clone(), &mut body.block)),
            _ => None,
        },
        _ => None,
    })
}

/// Renames `self` to async-trait's `__self` in the key expression.
struct SelfToAsyncTraitSelf;

impl VisitMut for SelfToAsyncTraitSelf {
    fn visit_expr_path_mut(&mut self, path: &mut syn::ExprPath) {
        if path.qself.is_none() && path.path.is_ident("self") {
            let span = path.path.segments[0].ident.span();
            path.path.segments[0].ident = Ident::new("__self", span);
        }
    }
}
