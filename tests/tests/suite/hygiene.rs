//! Expansions name everything by absolute path and their own locals cannot collide with the user's.
#![allow(dead_code, non_upper_case_globals)]

// Shadow the names an unhygienic expansion would reach for.
mod core {}
mod limiter_runtime_shadow {}
struct Option;
struct Some;
struct None;
struct Err;
type Result<T> = ::std::result::Result<T, ::limiter_runtime::RateLimited>;
fn format_args() {}
fn concat() {}
fn module_path() {}
static SITE: u8 = 0;
static __LIMITER_SITE: u8 = 0;

#[::limiter_runtime::rate_limit(key = __limiter_call, max = 1, window = "1m")]
async fn shadowed(__limiter_call: &str, __limiter_rejection: u8) -> Result<u8> {
    let __limiter_site = __limiter_rejection + SITE;
    Ok(__limiter_site)
}

// Written to return an HTTP response (the alias `Result` of `Result<Response>`): the body holds the permit.
#[::limiter_runtime::rate_limit(key = __limiter_permit, in_flight = 1)]
async fn streamed(
    __limiter_permit: &str,
    __limiter_result: u8,
) -> Result<::axum::response::Response> {
    let __limiter_streamed = __limiter_result;
    let body = ::std::format!("{__limiter_permit}{__limiter_streamed}");
    ::std::result::Result::Ok(::axum::response::IntoResponse::into_response(body))
}

#[tokio::test]
async fn expansions_ignore_the_names_in_scope() {
    ::limiter_runtime::Limiter::in_memory()
        .scope(async {
            assert_eq!(shadowed("k", 4).await.unwrap(), 4);
            assert!(shadowed("k", 4).await.is_err());
            let held = streamed("k", 1).await.unwrap();
            assert!(streamed("k", 1).await.is_err(), "the body holds the permit");
            drop(held);
            assert!(streamed("k", 1).await.is_ok());
        })
        .await;
}
