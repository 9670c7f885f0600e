//! Which limiter annotated functions ask: the one [`scope`](Limiter::scope)d over the current task, else the
//! installed one, else one built from the environment on first use.

use std::future::Future;
use std::sync::OnceLock;

use crate::backend::Backend;
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
            #[cfg(feature = "tower")]
            if let Some(layered) = LAYERED.get() {
                tracing::warn!(
                    "rate limiter: annotated functions outside a RateLimitLayer's requests decide in {}, built \
                     from the environment, while the layer decides in {layered}: they count apart; install the \
                     layer's limiter at start-up (`limiter.clone().install()`) to count them together",
                    limiter.describe(),
                );
            }
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

    /// Called by a tower layer deciding in this limiter: says so once if the installed limiter is another
    /// (the layer's requests then count apart from the rest of the program), and remembers it if none is
    /// installed yet (see [`global`](Limiter::global)).
    #[cfg(feature = "tower")]
    pub(crate) fn layered(&self) {
        match GLOBAL.get() {
            Some(installed) if installed.inner.id != self.inner.id => tracing::warn!(
                "rate limiter: a RateLimitLayer decides in {}, but the installed limiter is {}: the layer's \
                 requests (and the annotated handlers behind it) count in the layer's, the rest of the program \
                 in the installed one; give the layer the installed limiter (`Limiter::current()`) to count \
                 them together",
                self.describe(),
                installed.describe(),
            ),
            Some(_) => {}
            None => {
                let _ = LAYERED.set(self.describe());
            }
        }
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
