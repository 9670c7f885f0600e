//! Which limiter annotated functions ask: the one [`scope`](crate::Limiter::scope)d over the current task,
//! else the installed one, else one built from the environment on first use.

use std::future::Future;
use std::sync::OnceLock;

use crate::{Error, Limiter};

/// The environment variable naming the Redis server of the limiter built when none was installed.
pub const REDIS_URL_ENV: &str = "LIMITER_REDIS_URL";

static GLOBAL: OnceLock<Limiter> = OnceLock::new();

/// The first limiter a tower layer was given while none was installed: the one the global limiter, built from
/// the environment later, would count apart from.
#[cfg(feature = "tower")]
static LAYERED: OnceLock<String> = OnceLock::new();

tokio::task_local! {
    static SCOPED: Limiter;
}

/// Installs `limiter` as the shared runtime; a second install is an error.
pub(crate) fn install(limiter: Limiter) -> Result<(), Error> {
    GLOBAL.set(limiter).map_err(|_| Error::AlreadyInstalled)
}

/// Returns the installed limiter, or one built from the environment on first use (announced once at warn
/// level).
///
/// A variable that cannot be read is told of at error level, naming it, and changes nothing: it never throws
/// away a usable `LIMITER_REDIS_URL`. An unusable `LIMITER_REDIS_URL` leaves a limiter whose Redis fails
/// every call, decided by each limit's `on_error` as in an outage: never counting in memory, per process,
/// instead.
pub(crate) fn global() -> &'static Limiter {
    GLOBAL.get_or_init(|| {
        let (builder, errors) = Limiter::builder().env_read();
        let mut usable = true;
        for error in &errors {
            usable &= !matches!(error, Error::InvalidEnv { name, .. } if *name == REDIS_URL_ENV);
            tracing::error!(%error, "rate limiter: a LIMITER_* variable cannot be used; it is ignored");
        }
        let limiter = builder.build().or_else(|error| match error {
            Error::Limits(error) => {
                tracing::error!(
                    %error,
                    "rate limiter: the limits file LIMITER_LIMITS names cannot be used; the limits written in \
                     the code apply"
                );
                Limiter::builder().env_read().0.without_limits_file().build()
            }
            error => Err(error),
        });
        let limiter = limiter.unwrap_or_else(|error| {
            usable = false;
            tracing::error!(
                %error,
                "rate limiter: the Redis that the LIMITER_* variables set up cannot be used; every call is \
                 decided by its on_error, as in an outage"
            );
            let unusable = Limiter::builder().unusable_redis(error.to_string());
            unusable.build().expect("a Redis that cannot be used is built without one")
        });
        #[cfg(feature = "tower")]
        if let Some(layered) = LAYERED.get() {
            tracing::warn!(
                "rate limiter: annotated functions outside a RateLimitLayer's requests decide in {}, built \
                 from the environment, while the layer decides in {layered}: they count apart; install the \
                 layer's limiter at start-up (`limiter.clone().install()`) to count them together",
                limiter.describe(),
            );
        }
        // In memory, building it said so; an unusable Redis was told of above.
        if limiter.pipeline.backend.is_shared() && usable {
            tracing::warn!(
                limiter = %limiter.describe(),
                "rate limiter: no limiter was installed; using Redis from {REDIS_URL_ENV}"
            );
        }
        limiter
    })
}

/// Applies `f` to the limiter annotated functions use here (see [`Limiter::current`]), borrowed.
#[inline]
pub(crate) fn with_current<R>(f: impl Fn(&Limiter) -> R) -> R {
    SCOPED.try_with(&f).unwrap_or_else(|_| f(global()))
}

/// Runs `future` with `limiter` as the one its `#[rate_limit]` functions use.
pub(crate) async fn scope<F: Future>(limiter: Limiter, future: F) -> F::Output {
    SCOPED.scope(limiter, future).await
}

/// Notes that a tower layer decides in `limiter` (the layer calls this): says so once if the installed
/// limiter is another (the layer's requests then count apart from the rest of the program), and remembers it
/// if none is installed yet (see [`global`]).
#[cfg(feature = "tower")]
pub(crate) fn layered(limiter: &Limiter) {
    match GLOBAL.get() {
        Some(installed) if installed.pipeline.id != limiter.pipeline.id => tracing::warn!(
            "rate limiter: a RateLimitLayer decides in {}, but the installed limiter is {}: the layer's \
             requests (and the annotated handlers behind it) count in the layer's, the rest of the program \
             in the installed one; give the layer the installed limiter (`Limiter::current()`) to count \
             them together",
            limiter.describe(),
            installed.describe(),
        ),
        Some(_) => {}
        None => {
            let _ = LAYERED.set(limiter.describe());
        }
    }
}
