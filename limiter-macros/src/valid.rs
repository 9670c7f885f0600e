//! Validation between parsing and expansion: arguments that parse on their own but do not fit together.

use crate::attr::{Args, Spanned};
use crate::priority::Reserve;

/// Checks that each limit's arguments fit together, and that stacked limits count in buckets of their own.
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
    // First: what a rate needs (`burst`, `mode = wait`, a lease) is wrong beside a period whatever the
    // algorithm, and saying which algorithm it needs would send the user the wrong way.
    validate_calendar(args)?;
    let waits = args.wait.as_ref().is_some_and(|mode| mode.value);
    let written = args.algorithm.as_ref().map(ToString::to_string);
    // `mode = wait` without an algorithm is the leaky bucket's, the one algorithm that hands out slots.
    let algorithm = written
        .clone()
        .or_else(|| waits.then(|| "leaky_bucket".to_owned()));
    // "add `algorithm = x`" when none is written, "not `algorithm = y`" when another one is.
    let fix = |needed: &str| match &written {
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
    validate_in_flight(args)?;
    validate_penalty(args)?;
    validate_reserve(args)
}

/// Checks that a limit that keeps shares for calls of a higher priority has calls of more than one priority, and
/// room to keep them in (a leaky bucket that does not wait has one slot). Shares that keep nothing
/// (`reserve = "none"`, or 0% each) need neither.
fn validate_reserve(args: &Args) -> syn::Result<()> {
    let keeps =
        |reserve: &&Spanned<Vec<Reserve>>| reserve.value.iter().any(|share| share.percent > 0);
    let Some(reserve) = args.reserve.as_ref().filter(keeps) else {
        return Ok(());
    };
    let waits = args.wait.as_ref().is_some_and(|mode| mode.value);
    let leaky = match &args.algorithm {
        Some(algorithm) => algorithm == "leaky_bucket",
        None => waits,
    };
    if leaky && !waits {
        return Err(syn::Error::new(
            reserve.span,
            "`reserve` keeps a share of a leaky bucket's slots within its wait, but this one does not wait: \
             it has one slot, and a share of it would keep it from every call below that priority; add \
             `mode = wait` (and `max_wait`), or leave `reserve` out",
        ));
    }
    match &args.priority {
        None => Err(syn::Error::new(
            reserve.span,
            "`reserve` keeps a share of this limit for calls of a higher priority, but every call of this \
             function is `normal` (it has no `priority`): give each call its priority with `priority = <expr>`, \
             e.g. `priority = tier.priority()`; or, when other functions' calls of this limit are the higher \
             ones, say so with `priority = \"normal\"`; or leave `reserve` out",
        )),
        _ => Ok(()),
    }
}

/// Checks what a penalty goes with: it blocks a key that abused a rate, and each call must read the block in
/// the store.
fn validate_penalty(args: &Args) -> syn::Result<()> {
    let Some(penalty) = &args.penalty else {
        return Ok(());
    };
    if args.in_flight.is_some() {
        return Err(syn::Error::new(
            penalty.span,
            "`penalty` cannot go with `in_flight`: a call refused for want of a permit came while others ran, \
             it did not abuse a rate; give the rate a `#[rate_limit]` of its own with the penalty",
        ));
    }
    if args.lease.is_some() {
        return Err(syn::Error::new(
            penalty.span,
            "`penalty` cannot go with `lease`: each call of a rate with a penalty reads its key's block in the \
             store, so none can be spent from a lease; leave `lease` out",
        ));
    }
    if args.wait.as_ref().is_some_and(|mode| mode.value) {
        return Err(syn::Error::new(
            penalty.span,
            "`penalty` cannot go with `mode = wait`: a call refused because its slot is further than it may \
             wait queued behind others, it did not abuse a rate, and its block would refuse every call of its \
             key (of everyone, without a key); give the penalty a `#[rate_limit]` of its own",
        ));
    }
    Ok(())
}

/// Checks `in_flight` (calls running at once) beside a rate, or alone: what applies only to a rate needs one.
fn validate_in_flight(args: &Args) -> syn::Result<()> {
    if args.in_flight.is_none() {
        if let Some(ttl) = &args.in_flight_ttl {
            return Err(syn::Error::new(
                ttl.span,
                "`in_flight_ttl` is how long a permit in flight lives unless renewed: add `in_flight = <calls>`",
            ));
        }
        return Ok(());
    }
    if let Some(mode) = args.wait.as_ref().filter(|mode| mode.value) {
        return Err(syn::Error::new(
            mode.span,
            "`mode = wait` cannot go with `in_flight`: a call waits for no permit, it is refused when \
             `in_flight` calls are running; give the leaky bucket a `#[rate_limit]` of its own",
        ));
    }
    if let Some(lease) = &args.lease {
        return Err(syn::Error::new(
            lease.span,
            "a lease cannot go with `in_flight`: a permit in flight is held by the call that took it, never \
             spent by a node alone; give the leased rate a `#[rate_limit]` of its own",
        ));
    }
    if args.max.is_some() || args.window.is_some() {
        return Ok(());
    }
    // `in_flight` alone limits calls running at once: what weighs or shapes a rate has none to apply to.
    let rate_only = [
        ("algorithm", args.algorithm.as_ref().map(|a| a.span())),
        ("burst", args.burst.as_ref().map(|b| b.span)),
        ("max_wait", args.max_wait.as_ref().map(|m| m.span)),
        ("cost", args.cost.as_ref().map(syn::spanned::Spanned::span)),
        ("count", args.count.as_ref().map(|c| c.span())),
    ];
    if let Some((name, Some(span))) = rate_only.into_iter().find(|(_, span)| span.is_some()) {
        return Err(syn::Error::new(
            span,
            format!(
                "`{name}` applies to a rate, and `in_flight = ..` alone limits only calls running at once (each \
             holds one permit): add `max` and `window` for a rate beside it, or leave `{name}` out"
            ),
        ));
    }
    Ok(())
}

/// Checks a calendar quota (`period`), which counts like a fixed window whose windows are the calendar's
/// periods: what shapes another algorithm's rate has nothing to apply to, and `tz` and `anchor` apply only to a
/// period.
fn validate_calendar(args: &Args) -> syn::Result<()> {
    let Some(period) = &args.period else {
        if let Some(anchor) = &args.anchor {
            return Err(syn::Error::new(
                anchor.span,
                "`anchor` is the billing day of a month: it needs `period = month`",
            ));
        }
        if let Some(tz) = &args.tz {
            return Err(syn::Error::new(
                tz.span,
                "`tz` is the time zone a calendar quota counts its periods in: it needs `period = day`, \
                 `period = week` or `period = month`",
            ));
        }
        return Ok(());
    };
    let written = period.value.to_string().to_lowercase();
    if let Some(anchor) = args.anchor.as_ref().filter(|_| written != "month") {
        return Err(syn::Error::new(
            anchor.span,
            format!(
                "`anchor` is the billing day of a month: it needs `period = month`, not `period = {written}`"
            ),
        ));
    }
    if let Some(algorithm) = args.algorithm.as_ref().filter(|a| *a != "fixed_window") {
        return Err(syn::Error::new(
            algorithm.span(),
            format!(
                "`period` counts by the calendar's periods: `algorithm = {algorithm}` cannot be used with it (a \
                 period is a fixed window of the calendar); leave `algorithm` out"
            ),
        ));
    }
    const NO_SLOTS: &str =
        "a period hands out no slots to wait for, and a call over `max` is refused until the period ends";
    const NO_LEASE: &str =
        "a period's count is decided by the store, on its own clock, and no node can spend part of it alone";
    let wait = args.wait.as_ref().filter(|mode| mode.value);
    // Each argument a period leaves nothing to apply to, and why.
    let rate_only = [
        (
            "window",
            args.window.as_ref().map(|w| w.span),
            "the period is the window (a day, a week or a month of the calendar, from its first instant in \
             `tz`)",
        ),
        (
            "burst",
            args.burst.as_ref().map(|b| b.span),
            "a period counts like a fixed window, with no token bucket to fill",
        ),
        (
            "mode = wait",
            wait.map(|mode| mode.span),
            NO_SLOTS,
        ),
        (
            "max_wait",
            args.max_wait.as_ref().map(|m| m.span),
            NO_SLOTS,
        ),
        (
            "lease",
            args.lease.as_ref().map(|l| l.span),
            NO_LEASE,
        ),
        (
            "lease_ttl",
            args.lease_ttl.as_ref().map(|l| l.span),
            NO_LEASE,
        ),
        (
            "in_flight",
            args.in_flight.as_ref().map(|i| i.span),
            "it limits calls running at once, not calls per period; give it a `#[rate_limit]` of its own",
        ),
        (
            "in_flight_ttl",
            args.in_flight_ttl.as_ref().map(|i| i.span),
            "it is how long a permit of `in_flight` lives, and `in_flight` limits calls running at once, not \
             calls per period",
        ),
    ];
    if let Some((name, Some(span), why)) = rate_only.into_iter().find(|(_, span, _)| span.is_some())
    {
        return Err(syn::Error::new(
            span,
            format!("`{name}` cannot be used with `period`: {why}"),
        ));
    }
    Ok(())
}
