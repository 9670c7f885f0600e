//! Validation between parsing and expansion: arguments that parse on their own but do not fit together.

use crate::attr::Args;

/// Each limit's arguments fit together, and stacked limits count in buckets of their own.
pub(crate) fn validate(limits: &[Args]) -> syn::Result<()> {
    for (i, args) in limits.iter().enumerate() {
        validate_one(args)?;
        if i == 0 {
            continue;
        }
        if let Some(krate) = &args.krate {
            return Err(syn::Error::new_spanned(
                krate,
                "`crate` goes on the first `#[rate_limit]` of a function: it applies to all of them",
            ));
        }
        let prefix = |args: &Args| args.prefix.as_ref().map(|prefix| prefix.value());
        if limits[..i]
            .iter()
            .any(|above| prefix(above) == prefix(args))
        {
            let message = "stacked limits need a prefix each: this `#[rate_limit]` has the same prefix as one \
                           above it, so both would count in one bucket; give each its own `prefix`";
            return Err(match &args.prefix {
                Some(prefix) => syn::Error::new(prefix.span(), message),
                None => syn::Error::new(proc_macro2::Span::call_site(), message),
            });
        }
    }
    Ok(())
}

fn validate_one(args: &Args) -> syn::Result<()> {
    let algorithm = args.algorithm.as_ref().map(ToString::to_string);
    // "add `algorithm = x`" when none is written, "not `algorithm = y`" when another one is.
    let fix = |needed: &str| match &algorithm {
        Some(other) => format!("it applies to `algorithm = {needed}`, not `algorithm = {other}`"),
        None => format!("add `algorithm = {needed}`"),
    };
    if let Some(burst) = &args.burst {
        if algorithm.as_deref() != Some("token_bucket") {
            return Err(syn::Error::new(
                burst.span,
                format!(
                    "`burst` is the capacity of a token bucket: {}",
                    fix("token_bucket")
                ),
            ));
        }
    }
    let waits = args.wait.as_ref().is_some_and(|mode| mode.value);
    if let Some(mode) = args.wait.as_ref().filter(|mode| mode.value) {
        if algorithm.as_deref() != Some("leaky_bucket") {
            return Err(syn::Error::new(
                mode.span,
                format!(
                    "`mode = wait` waits for a slot of the leaky bucket, the one algorithm that hands out slots: {}",
                    fix("leaky_bucket")
                ),
            ));
        }
    }
    if let Some(max_wait) = &args.max_wait {
        if !waits {
            return Err(syn::Error::new(
                max_wait.span,
                "`max_wait` bounds how long `mode = wait` sleeps: add `mode = wait` (with `algorithm = leaky_bucket`)",
            ));
        }
    }
    if let Some(lease) = &args.lease {
        if !matches!(algorithm.as_deref(), Some("token_bucket" | "fixed_window")) {
            let message = match &algorithm {
                Some(other) => format!(
                    "a lease takes units of a token bucket or a fixed window, which count units a node can \
                     spend alone; `algorithm = {other}` cannot be leased"
                ),
                None => "a lease takes units of a token bucket or a fixed window: add `algorithm = \
                         token_bucket` or `algorithm = fixed_window`"
                    .to_owned(),
            };
            return Err(syn::Error::new(lease.span, message));
        }
    }
    if let (Some(ttl), None) = (&args.lease_ttl, &args.lease) {
        return Err(syn::Error::new(
            ttl.span,
            "`lease_ttl` bounds how long a lease is spent: add `lease = <units>`",
        ));
    }
    Ok(())
}
