//! Which limiter annotated functions ask: the one [`scope`](Limiter::scope)d over the current task, else the
//! installed one, else one built from the environment on first use.

use std::future::Future;
use std::sync::OnceLock;

use crate::backend::Backend;
use crate::{Error, Limiter};

/// The environment variable naming the Redis server of the limiter built when none was installed.
pub const REDIS_URL_ENV: &str = "LIMITER_REDIS_URL";

static GLOBAL: OnceLock<Limiter> = OnceLock::new();

tokio::task_local! {
    static SCOPED: Limiter;
}

impl Limiter {
    /// Installs this limiter as the shared runtime every `#[rate_limit]` function uses.
    ///
    /// Install once, at start-up, before the first annotated call; a second install is an error.
    pub fn install(self) -> Result<(), Error> {
        GLOBAL.set(self).map_err(|_| Error::AlreadyInstalled)
    }

    /// The shared runtime: the installed limiter, or — if none was installed before the first use — one
    /// built from the environment ([`from_env`](Limiter::from_env)), announced once at warn level.
    pub fn global() -> &'static Limiter {
        GLOBAL.get_or_init(|| {
            let limiter = Limiter::from_env().unwrap_or_else(|error| {
                tracing::error!(%error, "rate limiter: the LIMITER_* environment is unusable; counting in memory instead");
                Limiter::in_memory()
            });
            match &limiter.inner.backend {
                Backend::Redis(redis) => tracing::warn!(
                    ?redis,
                    "rate limiter: no limiter was installed; using Redis from {REDIS_URL_ENV}"
                ),
                Backend::Memory(_) => tracing::warn!(
                    "rate limiter: no limiter was installed and {REDIS_URL_ENV} is not set; counting in \
                     memory, so every process enforces its own limits"
                ),
            }
            limiter
        })
    }

    /// The limiter annotated functions use here: the one [`scope`](Limiter::scope)d over the current task,
    /// else the [`global`](Limiter::global) one.
    pub fn current() -> Limiter {
        Limiter::with_current(Limiter::clone)
    }

    /// `f` of the limiter annotated functions use here (see [`current`](Limiter::current)), borrowed.
    #[inline]
    pub(crate) fn with_current<R>(f: impl Fn(&Limiter) -> R) -> R {
        SCOPED.try_with(&f).unwrap_or_else(|_| f(Limiter::global()))
    }

    /// Runs `future` with this limiter as the one its `#[rate_limit]` functions use, instead of the
    /// global one. Tests use it to give each case its own store.
    ///
    /// ```
    /// use limiter_runtime::{rate_limit, Limiter, RateLimited};
    ///
    /// #[rate_limit(max = 1)]
    /// async fn ping() -> Result<(), RateLimited> {
    ///     Ok(())
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let limiter = Limiter::in_memory();
    /// limiter.scope(async {
    ///     assert!(ping().await.is_ok());
    ///     assert!(ping().await.is_err());
    /// }).await;
    /// # }
    /// ```
    pub async fn scope<F: Future>(&self, future: F) -> F::Output {
        SCOPED.scope(self.clone(), future).await
    }
}
