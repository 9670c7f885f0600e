//! Code generation: the user's function, unchanged but for a check that runs before its body.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;
use syn::{
    Block, Expr, ExprAsync, ExprCall, Ident, ItemFn, LitStr, Local, Pat, ReturnType, Signature,
    Stmt, Type,
};

use crate::attr::{Anchor, Args, Duration, Tz};
use crate::constant;
use crate::penalty::Penalty;
use crate::priority::{CallPriority, Reserve};

/// Rewrites `item` so that its body runs only when its limits (top first) admit the call.
pub(crate) fn expand(attributes: Vec<Args>, mut item: ItemFn) -> syn::Result<TokenStream> {
    let mut limits = limits_of(attributes);
    if item.sig.asyncness.is_some() {
        let ret = result_type(&item)?;
        let body = &item.block;
        item.block = Box::new(guarded(&limits, &item.sig.ident, &ret, body));
        return Ok(item.into_token_stream());
    }
    // `#[async_trait]` ran first: the method is no longer `async` but returns
    // `Box::pin(async move { ...; let __ret: R = { body }; __ret })`. Guard inside that block.
    let has_receiver = item.sig.receiver().is_some();
    let name = item.sig.ident.clone();
    if let Some(inner) = async_trait_block(&mut item.block) {
        if returns_unit(inner) {
            // async-trait wrote `let _: () = { body };`: the user's method declares no return type.
            return Err(no_result_type(&item.sig));
        }
        if let Some((ret, body)) = async_trait_body(inner) {
            if has_receiver {
                // async-trait moved `self` into `__self` before the body.
                for args in &mut limits {
                    let expressions = args.key.iter_mut().flatten();
                    let zone = args.tz.as_mut().and_then(|tz| match &mut tz.value {
                        Tz::Call(expr) => Some(expr),
                        Tz::Named(_) => None,
                    });
                    let anchor = args
                        .anchor
                        .as_mut()
                        .and_then(|anchor| match &mut anchor.value {
                            Anchor::Call(expr) => Some(expr),
                            Anchor::Day(_) => None,
                        });
                    let priority = args
                        .priority
                        .as_mut()
                        .and_then(|priority| match &mut priority.value {
                            CallPriority::Call(expr) => Some(expr),
                            CallPriority::Named(_) => None,
                        });
                    let expressions = expressions
                        .chain(&mut args.cost)
                        .chain(&mut args.skip_if)
                        .chain(&mut args.plan);
                    for expr in expressions.chain(zone).chain(anchor).chain(priority) {
                        SelfToAsyncTraitSelf.visit_expr_mut(expr);
                    }
                }
            }
            *body = guarded(&limits, &name, &ret, body);
            return Ok(item.into_token_stream());
        }
    }
    Err(syn::Error::new(
        item.sig.fn_token.span(),
        "`#[rate_limit]` applies to an `async fn`",
    ))
}

/// Lists the limits of the attributes, top first: each attribute's one limit, or, for `in_flight = ..` beside a
/// rate (`max`, `window`), the rate and then the limit of calls in flight on the same key (under the rate's
/// prefix followed by `in_flight:`, named after the rate's name, keeping the rate's shares for higher
/// priorities; each call's priority is the rate's, see [`guarded`]).
fn limits_of(attributes: Vec<Args>) -> Vec<Args> {
    let mut limits = Vec::with_capacity(attributes.len());
    for args in attributes {
        if args.in_flight.is_none() || (args.max.is_none() && args.window.is_none()) {
            limits.push(args);
            continue;
        }
        let name = args
            .name
            .as_ref()
            .map(|name| LitStr::new(&format!("{}-in-flight", name.value()), name.span()));
        let in_flight = Args {
            prefix: args.prefix.clone(),
            key: args.key.clone(),
            message: args.message.clone(),
            name,
            on_error: args.on_error.clone(),
            shadow: args.shadow,
            in_flight: args.in_flight.clone(),
            in_flight_ttl: args.in_flight_ttl.clone(),
            reserve: args.reserve.clone(),
            beside_rate: true,
            ..Args::default()
        };
        limits.push(Args {
            in_flight: None,
            in_flight_ttl: None,
            ..args
        });
        limits.push(in_flight);
    }
    limits
}

/// Reads the declared return type: the check returns the rejection through it.
fn result_type(item: &ItemFn) -> syn::Result<Type> {
    match &item.sig.output {
        ReturnType::Type(_, ty) => Ok((**ty).clone()),
        ReturnType::Default => Err(no_result_type(&item.sig)),
    }
}

/// Builds the error of a function that declares no return type, reported after its parameters, where
/// `-> Result<..>` belongs.
fn no_result_type(sig: &Signature) -> syn::Error {
    syn::Error::new(
        sig.paren_token.span.close(),
        "`#[rate_limit]` functions must return `Result<T, E>` where `E: From<RateLimited>`, \
         so a rejected call can return `Err`",
    )
}

/// Guards the body: each limit's key and cost computed from the borrowed arguments, the runtime asked, and the
/// rejection returned when the call is limited; then the body. When a limit counts by outcome, the body runs as
/// a future of its own, and what its outcome does not count is given back once it has returned.
fn guarded(limits: &[Args], name: &Ident, ret: &Type, body: &Block) -> Block {
    let krate = match limits.iter().find_map(|args| args.krate.as_ref()) {
        Some(path) => path.to_token_stream(),
        None => quote!(::limiter_runtime),
    };
    // Locals are hidden from the user's code by `mixed_site`; items are not, so the static lives in a block of
    // its own and only a reference to it, in a hidden local, reaches the statements the user's code can see.
    let site = Ident::new("__limiter_site", Span::mixed_site());
    let checked = Ident::new("__limiter_checked", Span::mixed_site());
    let error = Ident::new("__limiter_rejection", Span::mixed_site());
    let result = Ident::new("__limiter_result", Span::mixed_site());
    let function = name.to_string();
    let count = limits.len();
    let rules = limits.iter().map(|args| rule(args, &krate));
    // Each limit as the registry lists it: its policy's name and its prefix, as written, whether it is the
    // limit of calls in flight beside a rate, and the plan every call names, when a literal names it.
    let registered: Vec<TokenStream> = limits
        .iter()
        .map(|args| {
            let text = |text: &Option<LitStr>| match text {
                Some(text) => quote!(::core::option::Option::Some(#text)),
                None => quote!(::core::option::Option::None),
            };
            let (policy, prefix, beside) = (text(&args.name), text(&args.prefix), args.beside_rate);
            let plan = match &args.plan {
                Some(syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(plan),
                    ..
                })) => quote!(::core::option::Option::Some(#plan)),
                _ => quote!(::core::option::Option::None),
            };
            quote!((#policy, #prefix, #beside, #plan))
        })
        .collect();

    // `skip_if`: a `bool` over the arguments (a type error points at the expression); when true, that limit is
    // not counted, and its key not written out or asked.
    let skip = |i: usize| Ident::new(&format!("__limiter_skip_{i}"), Span::mixed_site());
    let skips: Vec<TokenStream> = limits
        .iter()
        .enumerate()
        .filter_map(|(i, args)| {
            let (skip, expr) = (skip(i), args.skip_if.as_ref()?);
            Some(quote_spanned!(expr.span()=> let #skip: bool = #expr;))
        })
        .collect();
    // `priority = <expr>`: each call's priority, a `Priority` (a type error points at the expression), evaluated
    // once, from the borrowed arguments like the key, and handed to each limit of its attribute: the limit of calls
    // in flight beside a rate takes the rate's. `priority = "critical"` is every call's; without it, `Normal`.
    let priority_local =
        |i: usize| Ident::new(&format!("__limiter_priority_{i}"), Span::mixed_site());
    let priorities: Vec<TokenStream> = limits
        .iter()
        .enumerate()
        .filter_map(|(i, args)| match &args.priority.as_ref()?.value {
            CallPriority::Call(expr) => {
                let local = priority_local(i);
                // The type spans the expression too: a type error is reported there alone, not also at the
                // whole attribute ("expected due to this").
                let ty = respanned(quote!(#krate::Priority), expr.span());
                Some(quote_spanned!(expr.span()=> let #local: #ty = #expr;))
            }
            CallPriority::Named(_) => None,
        })
        .collect();
    let priority = |i: usize| {
        let owner = if limits[i].beside_rate { i - 1 } else { i };
        match limits[owner]
            .priority
            .as_ref()
            .map(|priority| &priority.value)
        {
            Some(CallPriority::Call(_)) => priority_local(owner).into_token_stream(),
            Some(CallPriority::Named(variant)) => quote!(#krate::Priority::#variant),
            None => quote!(#krate::Priority::Normal),
        }
    };
    let keys = limits.iter().enumerate().map(|(i, args)| {
        // The cost, like the key, is computed from borrowed arguments; a type that is not an unsigned integer
        // is reported at the expression.
        let cost = match &args.cost {
            Some(cost) => quote_spanned!(cost.span()=> #krate::__private::Cost::units(&(#cost))),
            None => quote!(1),
        };
        let key = match &args.key {
            Some(parts) if parts.len() == 1 => quote!(::core::format_args!("{}", #(#parts)*)),
            Some(parts) => {
                // Each part escaped, so that distinct lists are always distinct keys.
                let format = vec!["{}"; parts.len()].join(":");
                quote!(::core::format_args!(#format, #(#krate::__private::Part(&(#parts))),*))
            }
            None => quote!(::core::format_args!("{}", #site.path())),
        };
        // A single limit with `skip_if` is not even reached when skipped (see below); the limit of calls in
        // flight beside a rate is skipped when the rate is.
        let skipped = match &args.skip_if {
            Some(_) if count > 1 => skip(i).into_token_stream(),
            None if args.beside_rate && limits[i - 1].skip_if.is_some() => {
                skip(i - 1).into_token_stream()
            }
            _ => quote!(false),
        };
        // Each call's own zone (`tz = <expr>`), borrowed like the key and the cost (its temporaries, like
        // theirs, live to the end of the statement that hands them over); a type that is not a `Zone` is
        // reported at the expression.
        let zone = match args.tz.as_ref().map(|tz| &tz.value) {
            Some(Tz::Call(zone)) => quote_spanned!(zone.span()=>
                ::core::option::Option::Some(#krate::__private::CallZone::zone(&(#zone)))
            ),
            _ => quote!(::core::option::Option::None),
        };
        // And its own billing day (`anchor = <expr>`), an integer read as one.
        let anchor = match args.anchor.as_ref().map(|anchor| &anchor.value) {
            Some(Anchor::Call(day)) => quote_spanned!(day.span()=>
                ::core::option::Option::Some(#krate::__private::BillingDay::day(&(#day)))
            ),
            _ => quote!(::core::option::Option::None),
        };
        let priority = priority(i);
        // The call's plan (`plan = <expr>`), borrowed like the key: the limit of calls in flight beside a rate
        // is on the rate's.
        let owner = if args.beside_rate {
            &limits[i - 1]
        } else {
            args
        };
        let plan = match &owner.plan {
            Some(plan) => quote_spanned!(plan.span()=>
                #krate::__private::CallPlan::plan(&(#plan))
            ),
            None => quote!(::core::option::Option::None),
        };
        quote!(#krate::__private::KeyArgs {
            skip: #skipped,
            key: #key,
            cost: #cost,
            zone: #zone,
            anchor: #anchor,
            priority: #priority,
            plan: #plan,
        })
    });
    // The call that turns the rejection into the declared return type carries that type's span, so a return type
    // that cannot carry it is reported there, not at the attribute. It calls a name imported on a line of its own,
    // so a wrong `crate = "..."` is still reported once, at the path.
    let rejected_fn = Ident::new("__limiter_rejected", Span::mixed_site());
    let rejected_call = Ident::new("__limiter_rejected", ret.span());
    let rejected = quote_spanned! {ret.span()=>
        return #rejected_call(#error);
    };
    let counting: Vec<_> = limits
        .iter()
        .map(|args| args.count.as_ref().filter(|variant| *variant != "All"))
        .collect();
    // A permit in flight is held while the body runs, and given back when it ends however it ends; or, for a
    // function written to return an HTTP response, until the response's body ends.
    let in_flight = limits.iter().any(|args| args.in_flight.is_some());
    let by_outcome = in_flight || counting.iter().any(Option::is_some);
    let enforce = if by_outcome {
        quote!(charge)
    } else {
        quote!(check)
    };

    let site_and_call = quote! {
        let #site: &'static #krate::__private::Site<#count> = {
            static SITE: #krate::__private::Site<#count> = #krate::__private::Site::new(
                ::core::module_path!(),
                ::core::concat!(::core::module_path!(), "::", #function),
                [#(#rules),*],
            );
            // Every annotated function is known before its first call: its policies are checked against the
            // limits file at start, and listed to operators. (Written from the literals, not from `SITE`: a
            // constant that fails to evaluate is then reported once.)
            #krate::__private::inventory::submit! {
                #krate::__private::Registered::new(
                    ::core::module_path!(),
                    ::core::concat!(::core::module_path!(), "::", #function),
                    &[#(#registered),*],
                )
            }
            &SITE
        };
        #(#priorities)*
        // The keys are formatted here, by reference, so the arguments are neither moved nor held across
        // `.await`; switched off, nothing is formatted, counted or asked. (A `let` of its own: the formatting's
        // temporaries, `!Send`, end with it, before the `.await`.)
        let #checked = #site.#enforce([#(#keys),*]);
    };
    if by_outcome {
        // A limit that counts every outcome reads none of it (the return type need not be a `Result`).
        let counts = counting.iter().map(|count| match count {
            Some(variant) => {
                quote!(#krate::__private::counts(&#result, #krate::__private::Count::#variant))
            }
            None => quote!(true),
        });
        // Settled as the rest, but for the permits, which the response's body holds until it ends. The call
        // carries the return type's span, as the rejection's does: a type that cannot hold them is reported
        // there.
        let settled = if in_flight && answers_http(ret) {
            let permit = Ident::new("__limiter_permit", Span::mixed_site());
            let streamed_fn = Ident::new("__limiter_streamed", Span::mixed_site());
            let streamed_call = Ident::new("__limiter_streamed", ret.span());
            let streamed = quote_spanned! {ret.span()=>
                #streamed_call::<#ret>(&mut #result, #permit)
            };
            quote! {
                let #permit = #checked.settle_keeping_permits([#(#counts),*]).await;
                let mut #result = #result;
                use #krate::__private::streamed as #streamed_fn;
                #krate::__private::release(#streamed).await;
                #result
            }
        } else {
            quote! {
                #checked.settle([#(#counts),*]).await;
                #result
            }
        };
        return syn::parse_quote!({
            #(#skips)*
            #site_and_call
            let #checked = match #checked.await {
                ::core::result::Result::Ok(admission) => admission,
                ::core::result::Result::Err(#error) => {
                    use #krate::__private::rejected as #rejected_fn;
                    #rejected
                }
            };
            // The body runs as a future of its own, typed as the function returns, so that its `return` and `?`
            // mean what they meant; then what its outcome does not count is given back.
            let #result: #ret = #krate::__private::body::<#ret, _>(async move #body).await;
            #settled
        });
    }
    let body = spliced(body);
    let check = quote! {
        #site_and_call
        if let ::core::result::Result::Err(#error) = #checked.await {
            use #krate::__private::rejected as #rejected_fn;
            #rejected
        }
    };
    match limits {
        [Args {
            skip_if: Some(_), ..
        }] => {
            let skip = skip(0);
            syn::parse_quote!({
                #(#skips)*
                if !#skip {
                    #check
                }
                #body
            })
        }
        _ => syn::parse_quote!({ #(#skips)* #check #body }),
    }
}

/// Gives every token of `tokens` the span `span` (a path's resolution does not change: spans in the user's code
/// resolve where the attribute is written, as the attribute's own tokens do).
fn respanned(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respanned(group.stream(), span));
                inner.set_span(span);
                token = proc_macro2::TokenTree::Group(inner);
            }
            token.set_span(span);
            token
        })
        .collect()
}

/// Checks whether the written return type is an HTTP response, whose body holds the permits in flight: a path
/// ending in `Response` (`Response`, `axum::response::Response`, `http::Response<Body>`), or a `Result` of one
/// (`Result<Response, E>`, `axum::response::Result<Response>`). Read from the tokens, as written: an alias
/// named otherwise is not one.
fn answers_http(ret: &Type) -> bool {
    fn last(ty: &Type) -> Option<&syn::PathSegment> {
        match ty {
            Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
            Type::Group(group) => last(&group.elem),
            Type::Paren(paren) => last(&paren.elem),
            _ => None,
        }
    }
    let Some(segment) = last(ret) else {
        return false;
    };
    if segment.ident == "Response" {
        return true;
    }
    if segment.ident != "Result" {
        return false;
    }
    let syn::PathArguments::AngleBracketed(arguments) = &segment.arguments else {
        return false;
    };
    let ok = arguments.args.iter().find_map(|argument| match argument {
        syn::GenericArgument::Type(ty) => Some(ty),
        _ => None,
    });
    ok.and_then(last)
        .is_some_and(|segment| segment.ident == "Response")
}

/// Returns the body as the guarded block ends with it. A body of one expression is that expression: left in
/// braces of its own, `{ Ok(()) }` on one line would warn of unnecessary braces (`unused_braces`) in the user's
/// crate. Any other body keeps its block, so that its items and `let`s stay scoped as written (the lint only
/// looks at blocks of one expression).
fn spliced(body: &Block) -> TokenStream {
    match body.stmts.as_slice() {
        [Stmt::Expr(tail, None)] => tail.to_token_stream(),
        _ => body.to_token_stream(),
    }
}

/// Expands one attribute's arguments into a rule: its text, then a chain of constant setters, one per argument
/// written.
fn rule(args: &Args, krate: &TokenStream) -> TokenStream {
    let text = |text: &Option<LitStr>| match text {
        Some(text) => quote!(::core::option::Option::Some(#text)),
        None => quote!(::core::option::Option::None),
    };
    let (prefix, message, policy) = (text(&args.prefix), text(&args.message), text(&args.name));
    let mut rule = quote!(#krate::Rule::from_attribute(#prefix, #message, #policy));
    if let Some(window) = &args.window {
        let window = constant::duration("window", &window.value);
        rule = quote!(#rule.window(#window));
    }
    if let Some(max) = &args.max {
        let max = constant::integer("max", max);
        rule = quote!(#rule.max(#max));
    }
    if let Some(name) = &args.algorithm {
        let variant = Ident::new(&camel_case(&name.to_string()), name.span());
        rule = quote!(#rule.algorithm(#krate::Algorithm::#variant));
    } else if args.wait.as_ref().is_some_and(|mode| mode.value) {
        // `mode = wait` is the leaky bucket's: the one algorithm that hands out slots.
        rule = quote!(#rule.algorithm(#krate::Algorithm::LeakyBucket));
    }
    // After the algorithm: a period is the calendar's (`algorithm = fixed_window` beside it says as much).
    if let Some(period) = &args.period {
        let variant = &period.value;
        rule = quote!(#rule.period(#krate::Period::#variant));
    }
    if let Some(Tz::Named(name)) = args.tz.as_ref().map(|tz| &tz.value) {
        rule = quote!(#rule.tz_checked(#name));
    }
    if let Some(Anchor::Day(day)) = args.anchor.as_ref().map(|anchor| &anchor.value) {
        rule = quote!(#rule.anchor(#day));
    }
    if let Some(burst) = &args.burst {
        let burst = constant::integer("burst", &burst.value);
        rule = quote!(#rule.burst(#burst));
    }
    if let Some(lease) = &args.lease {
        let units = constant::integer("lease", &lease.value);
        rule = quote!(#rule.lease(#units));
    }
    if let Some(ttl) = &args.lease_ttl {
        let ttl = constant::duration("lease_ttl", &ttl.value);
        rule = quote!(#rule.lease_ttl(#ttl));
    }
    if let Some(penalty) = &args.penalty {
        let length = |millis: u64| constant::duration("penalty", &Duration::Millis(millis));
        let penalty = match penalty.value {
            Penalty::Fixed(length_ms) => {
                let length = length(length_ms);
                quote!(#krate::Penalty::fixed(#length))
            }
            Penalty::Escalating { first, cap } => {
                let (first, cap) = (length(first), length(cap));
                quote!(#krate::Penalty::escalating(#first, #cap))
            }
        };
        rule = quote!(#rule.penalty(#penalty));
    }
    if let Some(reserve) = &args.reserve {
        for Reserve { priority, percent } in &reserve.value {
            rule = quote!(#rule.reserve(#krate::Priority::#priority, #percent));
        }
    }
    if let Some(shadow) = args.shadow {
        rule = quote!(#rule.shadow(#shadow));
    }
    if let Some(variant) = &args.on_error {
        rule = quote!(#rule.on_error(#krate::OnError::#variant));
    }
    if let Some(in_flight) = &args.in_flight {
        let permits = constant::integer("in_flight", &in_flight.value);
        rule = quote!(#rule.in_flight(#permits));
    }
    if let Some(ttl) = &args.in_flight_ttl {
        let ttl = constant::duration("in_flight_ttl", &ttl.value);
        rule = quote!(#rule.in_flight_ttl(#ttl));
    }
    if args.beside_rate {
        rule = quote!(#rule.beside_rate());
    }
    if args.wait.as_ref().is_some_and(|mode| mode.value) {
        rule = match &args.max_wait {
            Some(max_wait) => {
                let max_wait = constant::duration("max_wait", &max_wait.value);
                quote!(#rule.max_wait(#max_wait))
            }
            None => quote!(#rule.wait()),
        };
    }
    rule
}

/// Spells a name as the runtime's variant: `sliding_log` as `SlidingLog`.
fn camel_case(name: &str) -> String {
    name.split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_ascii_uppercase())
                .into_iter()
                .chain(chars)
        })
        .collect()
}

/// Finds the `async move` block of an `#[async_trait]` method: its body is `Box::pin(async move { ... })`.
fn async_trait_block(block: &mut Block) -> Option<&mut Block> {
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
    Some(inner)
}

/// Finds, in an `#[async_trait]` method's `async move` block, the user's body (`let __ret: R = { body };`) and
/// the declared return type.
fn async_trait_body(inner: &mut Block) -> Option<(Type, &mut Block)> {
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

/// Checks whether an `#[async_trait]` method's `async move` block is `let _: () = { body };`, as async-trait
/// writes it for a method without a return type.
fn returns_unit(inner: &Block) -> bool {
    inner.stmts.iter().any(|stmt| {
        matches!(stmt, Stmt::Local(Local { pat: Pat::Type(typed), init: Some(_), .. })
            if matches!(&*typed.pat, Pat::Wild(_))
                && matches!(&*typed.ty, Type::Tuple(unit) if unit.elems.is_empty()))
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

#[cfg(test)]
mod tests {
    use super::answers_http;

    fn answers(ty: &str) -> bool {
        answers_http(&syn::parse_str(ty).unwrap())
    }

    /// Checks that a response as written, or a `Result` of one, is an HTTP response, and that nothing else is,
    /// whatever it names.
    #[test]
    fn a_response_or_a_result_of_one_is_an_http_response() {
        for ty in [
            "Response",
            "axum::response::Response",
            "::http::Response<Body>",
            "Result<Response, AppError>",
            "std::result::Result<axum::response::Response, RateLimited>",
            "axum::response::Result<Response>",
        ] {
            assert!(answers(ty), "{ty}");
        }
        for ty in [
            "Result<String, RateLimited>",
            "Result<Json<Response>, E>",
            "AppResult<Response>",
            "Option<Response>",
            "impl IntoResponse",
            "Result<impl IntoResponse, E>",
            "Responses",
            "<T as Trait>::Response",
            "(Response, u8)",
        ] {
            assert!(!answers(ty), "{ty}");
        }
    }
}
