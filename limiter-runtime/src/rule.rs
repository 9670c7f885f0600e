//! A limit as written by its user: every part optional, the rest inherited from the limiter's defaults.

use std::borrow::Cow;
use std::time::Duration;

use crate::algorithm::Request;
use crate::clock::as_micros;
use crate::{Algorithm, OnError};

/// What to limit: at most `max` calls per `window`, counted under `prefix` + key.
///
/// Every part left out is inherited from the [`Limiter`](crate::Limiter)'s crate-wide defaults (see
/// [`LimiterBuilder`](crate::LimiterBuilder)), exactly as for an attribute argument left out of
/// `#[rate_limit]`. Build it once (a `static` with [`LazyLock`](std::sync::LazyLock), say) and reuse it.
///
/// `max = 0` rejects every call; a `window` shorter than a microsecond counts as one microsecond.
///
/// # Example
///
/// ```
/// use limiter_runtime::Rule;
/// use std::sync::LazyLock;
/// use std::time::Duration;
///
/// static EMPLOYEES: LazyLock<Rule> = LazyLock::new(|| {
///     Rule::new()
///         .prefix("rate_limit:emp:")
///         .window(Duration::from_secs(10))
///         .max(5)
///         .message("slow down")
/// });
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub(crate) prefix: Option<Cow<'static, str>>,
    pub(crate) window: Option<Duration>,
    pub(crate) max: Option<u64>,
    pub(crate) message: Option<Cow<'static, str>>,
    pub(crate) algorithm: Option<Algorithm>,
    pub(crate) burst: Option<u64>,
    pub(crate) wait: Option<Wait>,
    pub(crate) on_error: Option<OnError>,
    pub(crate) shadow: Option<bool>,
}

/// How long a [`LeakyBucket`](Algorithm::LeakyBucket) call may wait for its slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Up to one window (the rule's window, whatever resolves it).
    Window,
    /// Up to this long.
    Up(Duration),
}

impl Rule {
    /// A rule that inherits everything from the limiter's defaults.
    pub const fn new() -> Self {
        Rule {
            prefix: None,
            window: None,
            max: None,
            message: None,
            algorithm: None,
            burst: None,
            wait: None,
            on_error: None,
            shadow: None,
        }
    }

    /// The key namespace: the store key is `prefix` followed by the key.
    pub fn prefix(mut self, prefix: impl Into<Cow<'static, str>>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// The window length.
    pub const fn window(mut self, window: Duration) -> Self {
        self.window = Some(window);
        self
    }

    /// Admissions per window.
    pub const fn max(mut self, max: u64) -> Self {
        self.max = Some(max);
        self
    }

    /// The message of the [`RateLimited`](crate::RateLimited) error when this rule rejects a call.
    pub fn message(mut self, message: impl Into<Cow<'static, str>>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// The counting algorithm.
    pub const fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = Some(algorithm);
        self
    }

    /// [`TokenBucket`](Algorithm::TokenBucket): the bucket's capacity, the most a burst can take at once
    /// (default `max`).
    pub const fn burst(mut self, burst: u64) -> Self {
        self.burst = Some(burst);
        self
    }

    /// [`LeakyBucket`](Algorithm::LeakyBucket): admit a call whose slot starts within `max_wait`, telling it
    /// to wait ([`Decision::delay`](crate::Decision::delay)); without it (or [`wait`](Rule::wait)) a call that
    /// would have to wait is rejected.
    pub const fn max_wait(mut self, max_wait: Duration) -> Self {
        self.wait = Some(Wait::Up(max_wait));
        self
    }

    /// [`LeakyBucket`](Algorithm::LeakyBucket): admit a call whose slot starts within one window, telling it
    /// to wait: `mode = wait` on the attribute.
    pub const fn wait(mut self) -> Self {
        self.wait = Some(Wait::Window);
        self
    }

    /// What decides this rule's calls when Redis fails or is too slow (default: the limiter's).
    pub const fn on_error(mut self, on_error: OnError) -> Self {
        self.on_error = Some(on_error);
        self
    }

    /// Shadow mode: count and report calls the rule would reject ("would have limited", at info level and in
    /// [`Stats::shadowed`](crate::Stats::shadowed)), but never reject or delay one. For rolling out a new limit
    /// safely.
    pub const fn shadow(mut self, shadow: bool) -> Self {
        self.shadow = Some(shadow);
        self
    }

    /// A rule from all its parts at once, in a constant (what `#[rate_limit]` expansions build).
    #[allow(clippy::too_many_arguments)]
    pub(crate) const fn from_parts(
        prefix: Option<&'static str>,
        window: Option<Duration>,
        max: Option<u64>,
        message: Option<&'static str>,
        algorithm: Option<Algorithm>,
        burst: Option<u64>,
        wait: Option<Wait>,
        on_error: Option<OnError>,
        shadow: Option<bool>,
    ) -> Self {
        Rule {
            prefix: match prefix {
                Some(prefix) => Some(Cow::Borrowed(prefix)),
                None => None,
            },
            window,
            max,
            message: match message {
                Some(message) => Some(Cow::Borrowed(message)),
                None => None,
            },
            algorithm,
            burst,
            wait,
            on_error,
            shadow,
        }
    }
}

/// A rule with every part resolved (overrides, then the rule, then module defaults, then crate defaults),
/// borrowing its text from them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) message: &'a Cow<'static, str>,
    pub(crate) parts: Parts,
}

/// The parts of a resolved rule that are plain values: what a [`Limit`](crate::Limit) keeps, resolved once.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Parts {
    pub(crate) window: Duration,
    pub(crate) max: u64,
    pub(crate) algorithm: Algorithm,
    /// `None`: the bucket holds `max`.
    pub(crate) burst: Option<u64>,
    pub(crate) wait: Option<Wait>,
    pub(crate) on_error: OnError,
    pub(crate) shadow: bool,
}

impl Resolved<'_> {
    /// This resolution as a rule that sets every part itself, so that resolving it again gives it back
    /// whatever the defaults say.
    pub(crate) fn to_rule(self) -> Rule {
        let Parts {
            window,
            max,
            algorithm,
            burst,
            wait,
            on_error,
            shadow,
        } = self.parts;
        Rule {
            prefix: Some(Cow::Owned(self.prefix.to_owned())),
            window: Some(window),
            max: Some(max),
            message: Some(self.message.clone()),
            algorithm: Some(algorithm),
            burst,
            wait,
            on_error: Some(on_error),
            shadow: Some(shadow),
        }
    }
}

impl Parts {
    /// The call to decide, in the integers the algorithms compute with.
    #[inline]
    pub(crate) fn request(&self, cost: u64) -> Request {
        let max_wait = match self.wait {
            None => Duration::ZERO,
            Some(Wait::Window) => self.window,
            Some(Wait::Up(max_wait)) => max_wait,
        };
        Request {
            window: as_micros(self.window).max(1),
            max: self.max,
            cost,
            burst: self.burst.unwrap_or(self.max),
            max_wait: as_micros(max_wait),
        }
    }
}
