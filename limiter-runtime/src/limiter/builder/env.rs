//! The settings the environment gives a builder (`LIMITER_*`), read variable by variable: each that cannot be
//! read is an error naming it, and changes nothing.

use std::time::Duration;

use super::{LimiterBuilder, Redis};
use crate::backend::redis::redacted;
use crate::parse::duration;
use crate::rule::{env, parse_env, set};
use crate::{Error, REDIS_URL_ENV};

/// The longest deadline `LIMITER_DEADLINE` sets: while Redis hangs, each call may wait its deadline (until the
/// breaker opens), so a minute or more is a mistake (a unit left out), not a bound.
const MAX_ENV_DEADLINE: Duration = Duration::from_secs(60);

impl LimiterBuilder {
    /// Reads settings from the environment, over what was set before this call:
    ///
    /// | variable | sets | example |
    /// |---|---|---|
    /// | `LIMITER_REDIS_URL` | [`redis`](LimiterBuilder::redis) | `rediss://user:password@10.0.0.5:6380/` |
    /// | `LIMITER_REDIS_CA` | `redis_ca` (feature `tls`), from a PEM file | `/etc/redis/ca.pem` |
    /// | `LIMITER_REDIS_CLIENT_CERT`, `LIMITER_REDIS_CLIENT_KEY` | `redis_client_certificate` (feature `tls`), from PEM files | `/etc/redis/client.pem` |
    /// | `LIMITER_PREFIX` | [`prefix`](LimiterBuilder::prefix) | `shop:` |
    /// | `LIMITER_WINDOW` | [`window`](LimiterBuilder::window), a duration as the attribute writes one | `10s`, `500ms`, `1m` |
    /// | `LIMITER_MAX` | [`max`](LimiterBuilder::max) | `100` |
    /// | `LIMITER_MESSAGE` | [`message`](LimiterBuilder::message) | `slow down` |
    /// | `LIMITER_ALGORITHM` | the default algorithm | `token_bucket` |
    /// | `LIMITER_ON_ERROR` | [`on_error`](LimiterBuilder::on_error) | `open`, `closed`, `local` |
    /// | `LIMITER_DEADLINE` | [`deadline`](LimiterBuilder::deadline), at most 60 s | `20ms` |
    /// | `LIMITER_LIMITS` | [`limits_file`](LimiterBuilder::limits_file): read (and checked) when the limiter is built | `/etc/my_service/limits.toml` |
    ///
    /// An unset or empty variable changes nothing; an unreadable one (or a file it names) is an error naming
    /// it. With `LIMITER_REDIS_URL` unset, the limiter counts in this process's memory, and says so at warn
    /// level when it is built: every process then enforces its own limits.
    pub fn env(self) -> Result<Self, Error> {
        let (builder, mut errors) = self.env_read();
        match errors.is_empty() {
            true => Ok(builder),
            false => Err(errors.remove(0)),
        }
    }

    /// Returns what [`env`](LimiterBuilder::env) reads, every variable that can be read applied, and an error for
    /// each that cannot (that one changes nothing; an unreadable `LIMITER_REDIS_URL` leaves a Redis that
    /// cannot be used, never memory).
    pub(crate) fn env_read(mut self) -> (Self, Vec<Error>) {
        let mut errors = Vec::new();
        self.env_read = true;
        if let Some(url) = env(REDIS_URL_ENV) {
            self.redis_from_env = true;
            self.redis = Some(match redis::parse_redis_url(&url) {
                Some(_) => Redis::Server(url),
                None => {
                    let error = Error::InvalidEnv {
                        name: REDIS_URL_ENV,
                        value: redacted(&url),
                        expected: "a Redis URL such as redis://127.0.0.1:6379/0 \
                                   (rediss://user:password@host:6380/ for TLS)",
                    };
                    let unusable = Redis::Unusable(error.to_string());
                    errors.push(error);
                    unusable
                }
            });
        }
        self.tls = std::mem::take(&mut self.tls).with_env(&mut errors);
        self.defaults.crate_wide =
            std::mem::take(&mut self.defaults.crate_wide).with_env(&mut errors);
        if let Some(path) = env("LIMITER_LIMITS") {
            self.limits_file = Some((path.into(), true));
        }
        if let Some(v) = env("LIMITER_DEADLINE") {
            let deadline = parse_env(
                "LIMITER_DEADLINE",
                &v,
                "a duration longer than zero and at most 60s (it bounds each decision), such as 20ms",
                |v| duration(v).filter(|d| !d.is_zero() && *d <= MAX_ENV_DEADLINE),
            );
            set(&mut self.deadline, deadline, &mut errors);
        }
        (self, errors)
    }

    /// Returns a builder whose Redis cannot be used, for `reason`: every decision meets a Redis that fails, decided
    /// by each limit's `on_error` as in an outage (never in memory instead).
    pub(crate) fn unusable_redis(mut self, reason: String) -> Self {
        self.redis = Some(Redis::Unusable(reason));
        self
    }
}
