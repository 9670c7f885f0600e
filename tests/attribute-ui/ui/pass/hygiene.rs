#![allow(
    dead_code,
    non_upper_case_globals,
    non_snake_case,
    unused_macros,
    unused_variables
)]

// The expansion must not depend on what the user's crate names `core`, `std`, `Result`, `Option`,
// `Some`, `None`, `Ok`, `Err`, `format_args`, `concat` or `module_path`, nor collide with its locals.
mod core {}
mod std {}

#[derive(Debug)]
struct AppError;

impl From<limiter_runtime::RateLimited> for AppError {
    fn from(_: limiter_runtime::RateLimited) -> Self {
        AppError
    }
}

type Result<T> = ::std::result::Result<T, AppError>;
struct Option;
struct Some;
struct None;
struct Ok;
struct Err;
macro_rules! format_args {
    ($($t:tt)*) => {
        compile_error!("the user's `format_args!` was used")
    };
}
macro_rules! concat {
    ($($t:tt)*) => {
        compile_error!("the user's `concat!` was used")
    };
}
macro_rules! module_path {
    ($($t:tt)*) => {
        compile_error!("the user's `module_path!` was used")
    };
}
static SITE: &str = "site";
static __LIMITER_SITE: &str = "limiter-site";

mod limiter_runtime_shadow {
    pub use limiter_runtime::rate_limit;
}

#[limiter_runtime_shadow::rate_limit(key = (__limiter_call, __limiter_rejection), max = 1)]
async fn locals(__limiter_call: u32, __limiter_rejection: &str) -> Result<u32> {
    let __limiter_site = __limiter_call + 1;
    let __limiter_call = __limiter_site;
    ::std::result::Result::Ok(__limiter_call)
}

// Items named like the expansion's are still the user's, in the key and in the body.
#[limiter_runtime::rate_limit(key = (SITE, __LIMITER_SITE, __limiter_site), max = 1)]
async fn items(__limiter_site: u8) -> Result<&'static str> {
    ::std::result::Result::Ok(if __limiter_site == 0 {
        SITE
    } else {
        __LIMITER_SITE
    })
}

#[limiter_runtime::rate_limit(key = __self, max = 1)]
async fn self_named(__self: u32) -> Result<u32> {
    ::std::result::Result::Ok(__self)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    assert_eq!(locals(1, "a").await.unwrap(), 2);
    assert!(locals(1, "a").await.is_err());
    assert_eq!(self_named(3).await.unwrap(), 3);
    assert_eq!(items(0).await.unwrap(), "site");
    assert_eq!(items(1).await.unwrap(), "limiter-site");
    assert!(items(1).await.is_err());
}
