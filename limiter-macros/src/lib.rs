//! The `#[rate_limit]` attribute of [`limiter-runtime`](https://docs.rs/limiter-runtime). Depend on
//! `limiter-runtime`, which re-exports it; this crate only generates code.

use proc_macro::TokenStream;

mod attr;
mod constant;
mod expand;
mod messages;
mod penalty;
mod priority;
#[cfg(test)]
mod samples;
mod valid;
mod zone;

/// Rate-limits an `async fn`: when its limit is reached the body does not run and the function returns
/// `Err(RateLimited.into())`.
///
/// ```
/// use limiter_runtime::{rate_limit, RateLimited};
///
/// # #[derive(Debug)] struct AppError;
/// # impl From<RateLimited> for AppError { fn from(_: RateLimited) -> Self { AppError } }
/// # struct Employee;
/// #[rate_limit(prefix = "rate_limit:emp:", key = id, window = 10, max = 5, message = "slow down")]
/// async fn get_by_id(id: &str) -> Result<Employee, AppError> {
///     Ok(Employee)
/// }
/// ```
///
/// The function must be `async` (also as a method, generic, or in an `#[async_trait]` impl) and return
/// `Result<T, E>` with `E: From<RateLimited>` (with the runtime's `axum` feature, an axum `Response` too: a
/// refused call returns `RateLimited`'s response). Its signature, attributes and doc comments are kept.
///
/// # Arguments
///
/// All are optional; one left out inherits the installed [`Limiter`]'s default.
///
/// - `key = <expr>` — any expression over the arguments (`self` and pattern bindings included), evaluated
///   once, before the body, by reference: it never moves an argument. Its value implements `Display`.
///   `key = (tenant, user.id)` joins the parts with `:`, each part's `:`, `|` and `%` escaped (`%3A`, `%7C`,
///   `%25`), so that distinct lists are distinct keys. Without a key, the function's path is the key: one bucket for every
///   call.
///
///   ```
///   # use limiter_runtime::{rate_limit, RateLimited};
///   # struct User { id: u64 }
///   #[rate_limit(key = (tenant, user.id), max = 10)]
///   async fn upload(tenant: &str, user: User) -> Result<(), RateLimited> {
///       drop(user); // the key borrowed `user`; the body still owns it
///       Ok(())
///   }
///   ```
/// - `prefix = "..."` — the key namespace; the store key is prefix + key, the key's `%`, `:` and `|` escaped
///   (`rate_limit:emp:1001`), so that no key reaches another prefix's keys. Default `"rate_limit:"`.
/// - `window = 10` or `window = "1m30s"` — the window: whole seconds, or a duration string. Default 60 s.
///   A duration string is whole numbers, each followed by a unit, `d`, `h`, `m`, `s` or `ms`, the largest
///   first and each at most once: `"500ms"`, `"10s"`, `"1m"`, `"1h30m"`, `"1d"`, `"1d12h"`, `"1s500ms"`
///   (`"30m1h"` and `"1m1m"` are refused as slips; so is `"10"`, without its unit). The environment's
///   `LIMITER_WINDOW` reads the same text, alike (one grammar, the `limiter-grammar` crate, reads both).
/// - `max = 100` — admissions per window, at least 1. Default 100.
///
///   `max`, `burst`, `lease`, and the duration arguments in whole seconds also take a constant: a `const`
///   item or a constant expression of any integer type (`u32`, `usize`, `i64`, ...), checked where the
///   compiler evaluates it, with the errors a literal gets (zero, negative, or over `u64::MAX`, is refused
///   at the expression). The limits are in a `static`, so the constant cannot name `Self`, a generic
///   parameter, or an argument: `Self::MAX` is written `MyType::MAX`.
///
///   ```
///   # use limiter_runtime::{rate_limit, RateLimited};
///   mod limits {
///       pub const LOGIN: usize = 5;
///       pub const HOUR: u32 = 3600;
///   }
///   const BURST: u64 = 20;
///
///   #[rate_limit(key = user, max = limits::LOGIN * 2, window = limits::HOUR)]
///   async fn login(user: &str) -> Result<(), RateLimited> {
///       Ok(())
///   }
///
///   #[rate_limit(algorithm = token_bucket, max = BURST / 2, burst = BURST, window = "1m30s")]
///   async fn search(query: &str) -> Result<(), RateLimited> {
///       Ok(())
///   }
///   ```
/// - `message = "..."` — the [`RateLimited`] error's message.
/// - `policy = "..."` — the policy's name, as the HTTP quota fields and `RateLimited::policy` call this
///   limit. Default: `limit-` and the first 8 hex digits of the SHA-1 of the prefix, which does not show it.
/// - `algorithm = sliding_log | fixed_window | sliding_window | token_bucket | leaky_bucket` — how calls are
///   counted (see [`Algorithm`]). Default `sliding_log`: exact, at most `max` in any `window`.
/// - `burst = 20` (or a constant) — with `algorithm = token_bucket`: the bucket's capacity. Default `max`.
/// - `cost = <expr>` — the weight of one call, an unsigned integer computed from the arguments like `key`.
///   Default 1. A cost above the limit is rejected.
///
///   ```
///   # use limiter_runtime::{rate_limit, RateLimited};
///   #[rate_limit(key = user, max = 1000, window = "1h", cost = rows.len())]
///   async fn import(user: &str, rows: Vec<String>) -> Result<usize, RateLimited> {
///       Ok(rows.len())
///   }
///   ```
/// - `mode = wait` — with `algorithm = leaky_bucket`: instead of rejecting a call that must wait for its slot,
///   sleep until the slot, then run (shaping). `mode = reject` (the default) rejects it.
/// - `max_wait = "2s"` (a duration, as `window` takes it) — with `mode = wait`: the longest wait; a call whose
///   slot is further away is rejected. Default: the window.
///
///   ```
///   # use limiter_runtime::{rate_limit, RateLimited};
///   // At most 10 calls a second reach the paid API, evenly spaced; callers queue for up to 2 s.
///   #[rate_limit(algorithm = leaky_bucket, max = 10, window = "1s", mode = wait, max_wait = "2s")]
///   async fn call_paid_api(request: &str) -> Result<(), RateLimited> {
///       Ok(())
///   }
///   ```
/// - `lease = 50` (or a constant) — with `algorithm = token_bucket` or `fixed_window`, on Redis: a node takes up
///   to 50 units in one call and spends them in memory, for one hot key that one Redis core cannot serve. What
///   is not spent goes back when the lease ends. The cost, exactly: a token bucket admits at most
///   `burst + max · (t + lease_ttl) / window` over any interval `t`; a fixed window never more than `max` per
///   window.
/// - `lease_ttl = "100ms"` (a duration, as `window` takes it) — with `lease`: how long a node may spend a lease.
///   Default 100 ms.
///
///   ```
///   # use limiter_runtime::{rate_limit, RateLimited};
///   // A million a second for the whole service, most decided in memory.
///   #[rate_limit(algorithm = token_bucket, max = 1_000_000, window = 1, lease = 1000)]
///   async fn ingest(event: &str) -> Result<(), RateLimited> {
///       Ok(())
///   }
///   ```
/// - `in_flight = 4` (or a constant) — at most 4 calls of a key running at once, across nodes: a permit is taken
///   before the body runs and given back when the function ends, however it ends. A function written to
///   return an HTTP response (`Response`, `http::Response<Body>`, or a `Result` of one; the runtime's `axum`
///   feature) hands the permit to the response's body instead, which gives it back when it ends or is dropped:
///   a streamed body holds it while it streams. Beside `max` or `window`, a second limit decided with the rate.
/// - `in_flight_ttl = "30s"` (a duration, as `window` takes it) — with `in_flight`, on Redis: how long a permit
///   lives unless its node renews it. Default 30 s.
/// - `on_error = open | closed | local` — what decides when Redis fails or is too slow: let the call through
///   (the default), reject it with [`RateLimited`] whose reason is `Unavailable`, or decide in this process
///   with this node's share of the limit. Default: the limiter's.
/// - `skip_if = <expr>` — a `bool` over the arguments; when true the call is not limited at all (nothing is
///   counted or asked), e.g. `skip_if = user.is_admin()`.
/// - `shadow = true` — count and report calls the limit would reject ("would have limited", at info level and
///   in the limiter's `Stats`), but never reject or delay one: for rolling out a new limit safely.
/// - `count = failures | successes` — charge only calls whose body returns `Err` (or `Ok`): a limiter of failed
///   logins. The check still comes first, and the unit is taken before the body runs (so concurrent attempts
///   cannot overshoot); once the body has returned, the unit is given back if the outcome does not count.
///   Default `all`.
///
///   ```
///   # use limiter_runtime::{rate_limit, RateLimited};
///   # #[derive(Debug)] enum LoginError { WrongPassword, Limited(RateLimited) }
///   # impl From<RateLimited> for LoginError { fn from(e: RateLimited) -> Self { LoginError::Limited(e) } }
///   #[rate_limit(prefix = "failed_logins:", key = user, max = 5, window = "15m", count = failures)]
///   async fn login(user: &str, password: &str) -> Result<(), LoginError> {
///       if password == "hunter2" { Ok(()) } else { Err(LoginError::WrongPassword) }
///   }
///   ```
/// - `period = day | week | month` — a calendar quota: at most `max` units (of `cost`) per day, week (from
///   Monday) or month of the calendar, counted again from each period's first instant (see [`Period`]). It
///   replaces the window: a period goes with no `window`, `burst`, `mode = wait`, `max_wait`, lease or
///   `in_flight`, and with no algorithm but `fixed_window` (a period is a fixed window of the calendar).
/// - `tz = "Europe/Berlin"` — with `period`: the time zone the periods are counted in, an IANA name checked
///   when compiled (an unknown name is a compile error). Default UTC. `tz = <expr>` is each call's own zone,
///   a [`Zone`] (or a reference to one) computed from the borrowed arguments like `key`.
/// - `anchor = 15` — with `period = month`: the billing day the month starts on, 1 to 31 (a shorter month
///   starts on its last day, so 31 is every month's last day). Default 1. `anchor = <expr>` is each call's
///   own billing day, an integer computed from the borrowed arguments.
///
///   ```
///   # use limiter_runtime::{rate_limit, RateLimited, Zone};
///   # struct Tenant { id: u64, zone: Zone, billing_day: u8 }
///   // 10,000 calls a day, counted again at midnight in Berlin.
///   #[rate_limit(prefix = "daily:", key = user, max = 10_000, period = day, tz = "Europe/Berlin")]
///   async fn search(user: &str) -> Result<(), RateLimited> {
///       Ok(())
///   }
///
///   // A million tokens a month from each tenant's billing day, at midnight in its own zone.
///   #[rate_limit(prefix = "monthly:", key = tenant.id, max = 1_000_000, period = month,
///                anchor = tenant.billing_day, tz = tenant.zone, cost = prompt.len())]
///   async fn complete(tenant: &Tenant, prompt: &str) -> Result<(), RateLimited> {
///       Ok(())
///   }
///   ```
/// - `penalty = "10m"` or `"1m..1h"` — a call the limit refuses blocks its key for that long (escalating: the
///   first length, doubled at each repeat offence up to the second, forgiven after a clean cap), on every
///   node: each call of the key is refused until the block ends, its `retry_after` what is left of it, and
///   counts nothing; see [`Penalty`]. The lengths are duration strings, as `window` takes them. Not with
///   `in_flight` or `lease`; with `shadow = true`, blocks are reported, never enforced.
///
///   ```
///   # use limiter_runtime::{rate_limit, RateLimited};
///   // Five attempts a minute; a user who tries a sixth is locked out for a minute, then 2, 4, ... up to an hour.
///   #[rate_limit(prefix = "login:", key = user, max = 5, window = "1m", penalty = "1m..1h")]
///   async fn login(user: &str, password: &str) -> Result<(), RateLimited> {
///       Ok(())
///   }
///   ```
/// - `priority = <expr>` — how much the call matters when the limit fills up: a [`Priority`] (`Low`, `Normal`,
///   `High` or `Critical`) computed from the borrowed arguments like `key`, once per call, e.g.
///   `priority = tenant.priority()` (an expression of another type is a type error at the expression).
///   `priority = "critical"` gives every call of the function one priority, a name checked when compiled:
///   `"low"`, `"normal"`, `"high"` or `"critical"`. Default `normal`. A call's priority matters where its limit
///   keeps a share for higher ones (`reserve`).
/// - `reserve = "critical 20%"` or `"critical 10%, high 30%"` — keep a share of the limit for the calls of a
///   priority and above: calls below it fill the rest, and one the share refuses has the verdict `Reserved`.
///   Shares nest: with `"critical 10%, high 30%"` and `max = 100`, `normal` and `low` calls fill 70, `high`
///   calls 90, `critical` calls all 100. Each share is a priority above `low` (a share kept for `low` and above
///   would be kept for every call) and a whole percent up to 100%, rounded up to whole units; each priority
///   once. `reserve = "none"` keeps no share, even where `LIMITER_RESERVE` keeps some for every limit. The text
///   is read as `LIMITER_RESERVE`, an override and the admin API read it. Needs `priority` (unless it keeps
///   nothing): without it every call is `normal` (write `priority = "normal"` for a function whose
///   calls are all `normal` and share their key with another function's of a higher priority). Beside
///   `in_flight`, the permits keep the same shares. See [`Rule::reserve`].
///
///   ```
///   # use limiter_runtime::{rate_limit, Priority, RateLimited};
///   # struct Tenant { id: u64, paying: bool }
///   # impl Tenant {
///   #     fn priority(&self) -> Priority { if self.paying { Priority::High } else { Priority::Normal } }
///   # }
///   // 100 searches a minute per tenant, the last 20 only for paying tenants'.
///   #[rate_limit(key = tenant.id, max = 100, window = "1m", priority = tenant.priority(), reserve = "high 20%")]
///   async fn search(tenant: &Tenant, query: &str) -> Result<(), RateLimited> {
///       Ok(())
///   }
///
///   // An export keeps no share, even one `LIMITER_RESERVE` keeps for every limit; it needs no priority.
///   #[rate_limit(prefix = "export:", max = 10, window = "1m", reserve = "none")]
///   async fn export() -> Result<(), RateLimited> {
///       Ok(())
///   }
///   ```
/// - `crate = "path"` — where `limiter_runtime` is, for crates that re-export it under another name (on the
///   first attribute of a stack).
///
/// # Several limits
///
/// Attributes stacked on one function are one decision: checked top first, the body runs only when every
/// limit admits the call, and a refused call is charged to none of them. Each needs its own `prefix`.
///
/// ```
/// # use limiter_runtime::{rate_limit, RateLimited};
/// #[rate_limit(prefix = "burst:", key = user, max = 10, window = 1)]
/// #[rate_limit(prefix = "quota:", key = user, max = 1000, window = "1h")]
/// async fn search(user: &str, query: &str) -> Result<Vec<String>, RateLimited> {
///     Ok(Vec::new())
/// }
/// ```
///
/// Every misuse is a compile error pointing at the offending token.
///
/// [`Limiter`]: https://docs.rs/limiter-runtime/latest/limiter_runtime/struct.Limiter.html
/// [`RateLimited`]: https://docs.rs/limiter-runtime/latest/limiter_runtime/struct.RateLimited.html
/// [`Algorithm`]: https://docs.rs/limiter-runtime/latest/limiter_runtime/enum.Algorithm.html
/// [`Period`]: https://docs.rs/limiter-runtime/latest/limiter_runtime/enum.Period.html
/// [`Zone`]: https://docs.rs/limiter-runtime/latest/limiter_runtime/struct.Zone.html
/// [`Penalty`]: https://docs.rs/limiter-runtime/latest/limiter_runtime/struct.Penalty.html
/// [`Priority`]: https://docs.rs/limiter-runtime/latest/limiter_runtime/enum.Priority.html
/// [`Rule::reserve`]: https://docs.rs/limiter-runtime/latest/limiter_runtime/struct.Rule.html#method.reserve
#[proc_macro_attribute]
pub fn rate_limit(args: TokenStream, item: TokenStream) -> TokenStream {
    let expanded = syn::parse::<attr::Args>(args).and_then(|args| {
        let mut function = parse_function(item.clone())?;
        let limits = stacked(args, &mut function)?;
        valid::validate(&limits)?;
        expand::expand(limits, function)
    });
    match expanded {
        Ok(tokens) => tokens.into(),
        Err(error) => with_error(item, error),
    }
}

/// Collects this attribute's limit and those of the `#[rate_limit]` attributes written below it, top first:
/// they are one decision, so the first expands them all (and takes them off the function).
fn stacked(first: attr::Args, function: &mut syn::ItemFn) -> syn::Result<Vec<attr::Args>> {
    let mut limits = vec![first];
    let mut kept = Vec::with_capacity(function.attrs.len());
    for attribute in std::mem::take(&mut function.attrs) {
        let is_ours = attribute
            .path()
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "rate_limit");
        if !is_ours {
            kept.push(attribute);
            continue;
        }
        limits.push(match &attribute.meta {
            syn::Meta::Path(_) => attr::Args::default(),
            _ => attribute.parse_args()?,
        });
    }
    function.attrs = kept;
    Ok(limits)
}

/// Parses the annotated item, which must be a function with a body. Anything else is refused at its first
/// token, a method declared in a trait at its `;`, instead of with syn's "expected `fn`" or "expected curly
/// braces".
fn parse_function(item: TokenStream) -> syn::Result<syn::ItemFn> {
    use syn::parse::{ParseStream, Parser};

    let parser = |input: ParseStream<'_>| {
        let fork = input.fork();
        fork.call(syn::Attribute::parse_outer)?;
        fork.parse::<syn::Visibility>()?;
        let starts_a_function = fork.peek(syn::Token![fn])
            || fork.peek(syn::Token![async])
            || fork.peek(syn::Token![const])
            || fork.peek(syn::Token![unsafe])
            || fork.peek(syn::Token![extern]);
        if !starts_a_function {
            return Err(fork.error("`#[rate_limit]` applies to an `async fn`"));
        }
        if let Ok(syn::TraitItemFn {
            default: None,
            semi_token: Some(semi),
            ..
        }) = input.fork().parse()
        {
            return Err(syn::Error::new(
                semi.span,
                "`#[rate_limit]` needs the function's body: put it on the method in the `impl`, not on its \
                 declaration in the trait",
            ));
        }
        input.parse::<syn::ItemFn>()
    };
    parser.parse(item)
}

/// Returns, on error, the user's function unchanged plus the one error, so the rest of the crate (and the IDE)
/// keeps working and the user sees no cascade of secondary errors. Nor a warning: an argument only the
/// rejected attribute read (in `key`, `cost`, `skip_if` or `priority`) is not unused, so `unused_variables` is
/// allowed on the function.
fn with_error(item: TokenStream, error: syn::Error) -> TokenStream {
    let mut tokens = quote::quote!(#[allow(unused_variables)]);
    tokens.extend(proc_macro2::TokenStream::from(item));
    tokens.extend(error.into_compile_error());
    tokens.into()
}
