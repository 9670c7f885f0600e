//! Overrides shared through Redis: a change is written to the hash, counted in its version and announced on
//! the channel with that version, in one script. Every runtime applies each announced change to its own
//! table; it reloads the whole hash only when it subscribes and when a version shows it missed a change (a
//! message lost while its connection was down). Every few seconds it reads the version alone, a backstop
//! that costs one field whatever the number of overrides.

use std::sync::{LazyLock, Weak};
use std::time::Duration;

use crate::backend::redis::wire::LuaScript;
use crate::backend::redis::RedisBackend;
use crate::error::{BackendError, Error};
use crate::overrides::{
    parse_switch, Change, MissedChanges, Override, Overrides, LIMITS, OVERRIDES, SWITCH,
};

/// How often a runtime reads the version even without being told of a change: a backstop for a lost message.
pub(in crate::backend::redis) const BACKSTOP: Duration = Duration::from_secs(5);
/// The bound on an operator's change (an override) reaching Redis.
const CHANGE_DEADLINE: Duration = Duration::from_secs(5);
/// The hash's field that counts the changes made to it.
const VERSION: &str = "version";

static CHANGE: LazyLock<LuaScript> =
    LazyLock::new(|| LuaScript::new(include_str!("../../../../scripts/overrides.lua")));

/// Makes `change` in Redis and announces it, within [`CHANGE_DEADLINE`]; returns the version Redis gave it.
pub(crate) async fn publish(redis: &RedisBackend, change: &Change) -> Result<u64, Error> {
    let mut connection = redis.connection().map_err(change_failed)?;
    let args = (change.op(), change.field(), change.value(), OVERRIDES);
    tokio::time::timeout(
        CHANGE_DEADLINE,
        CHANGE.invoke::<u64>(&mut connection, OVERRIDES, args),
    )
    .await
    .map_err(|_| Error::Timeout(CHANGE_DEADLINE))?
    .map_err(Error::Redis)
}

fn change_failed(error: BackendError) -> Error {
    match error {
        BackendError::Redis(error) => Error::Redis(error),
        BackendError::Timeout(deadline) => Error::Timeout(deadline),
        other => Error::Redis(redis::RedisError::from((
            redis::ErrorKind::UnexpectedReturnType,
            "unexpected reply",
            other.to_string(),
        ))),
    }
}

/// A change as the script announces it: `<version>\n<set|clear>\n<value>\n<field>`.
#[derive(Debug, PartialEq)]
struct Announcement {
    version: u64,
    change: Change,
}

impl Announcement {
    /// Parses `message`; `None` for a message this version cannot read (one from an older runtime, which names only the
    /// field).
    fn parse(message: &str) -> Option<Announcement> {
        let mut parts = message.splitn(4, '\n');
        let version = parts.next()?.parse().ok()?;
        let (op, value) = (parts.next()?, parts.next()?);
        let change = Change::parse(op, parts.next()?, value)?;
        Some(Announcement { version, change })
    }
}

/// What woke the sync up.
pub(in crate::backend::redis) enum Event {
    /// A message on the channel.
    Message(redis::Msg),
    /// Nothing for [`BACKSTOP`]: time to read the version.
    Quiet,
}

/// Brings `overrides` up to date after `event`; `false` once the limiter is gone.
pub(in crate::backend::redis) async fn follow(
    overrides: &Weak<Overrides>,
    redis: &Weak<RedisBackend>,
    event: Event,
) -> bool {
    let (Some(table), Some(backend)) = (overrides.upgrade(), redis.upgrade()) else {
        return false;
    };
    let up_to_date = match event {
        Event::Message(message) if paused(&message).is_some() => {
            // A key an upstream paused: every call of it waiting here waits for the pause's end.
            if let Some((length, (learned, from, at), key)) = paused(&message) {
                table
                    .pauses
                    .note(&key, Duration::from_micros(length), learned);
                table.pauses.note_cut(&key, at, from, learned);
            }
            backend.forget_denials();
            true
        }
        Event::Message(message) if reask(&message) => {
            // A key banned or unbanned: what Redis said of it may no longer hold.
            backend.forget_denials();
            true
        }
        Event::Message(message) => {
            let announcement = message
                .get_payload::<String>()
                .ok()
                .and_then(|payload| Announcement::parse(&payload));
            match announcement {
                Some(Announcement { version, change }) => match table.announced(&change, version) {
                    Ok(new) => {
                        if new {
                            if let Change::Set(o) | Change::Clear(o) = &change {
                                backend.forget_denials_of(o.target_prefix(), o.single_key());
                            }
                        }
                        true
                    }
                    Err(MissedChanges) => false,
                },
                None => false,
            }
        }
        Event::Quiet => read_version(&table, &backend).await,
    };
    drop((table, backend));
    up_to_date || reload(overrides, redis).await
}

/// Returns whether `message` announces a key banned or unbanned.
fn reask(message: &redis::Msg) -> bool {
    message
        .get_payload_bytes()
        .starts_with(super::bans::REASK.as_bytes())
}

/// Returns the length (µs), the rate learned and the one before (thousandths of the limit) with when it
/// moved (the store's µs), and the store key, of a pause `message` announces
/// (`<length>:<rate>:<from>:<at>\n<key>`), if it announces one.
fn paused(message: &redis::Msg) -> Option<(u64, (u32, u32, u64), String)> {
    let payload = message.get_payload::<String>().ok()?;
    let rest = payload.strip_prefix(super::bans::PAUSE)?;
    let (lesson, key) = rest.split_once('\n')?;
    let mut fields = lesson.split(':');
    let length = fields.next()?.parse().ok()?;
    let learned = fields.next()?.parse().ok()?;
    let from = fields.next()?.parse().ok()?;
    let at = fields.next()?.parse().ok()?;
    Some((length, (learned, from, at), key.to_owned()))
}

/// Returns whether the hash's version is the table's (also when Redis cannot say: the next look will tell).
async fn read_version(overrides: &Overrides, redis: &RedisBackend) -> bool {
    if redis.breaker_open() || !overrides.is_enabled_here() {
        return true;
    }
    let Ok(mut connection) = redis.connection() else {
        return true;
    };
    let mut read = redis::cmd("HGET");
    read.arg(OVERRIDES).arg(VERSION);
    let version = read.query_async::<Option<u64>>(&mut connection);
    match tokio::time::timeout(CHANGE_DEADLINE, version).await {
        Ok(Ok(version)) => version.unwrap_or(0) == overrides.version(),
        _ => true,
    }
}

/// How many times a reload reads the hash again when a change of this node's landed during its read.
const READS: usize = 3;

/// Loads every override from Redis, and the version they are at; `false` once the limiter is gone.
pub(in crate::backend::redis) async fn reload(
    overrides: &Weak<Overrides>,
    redis: &Weak<RedisBackend>,
) -> bool {
    let (Some(overrides), Some(redis)) = (overrides.upgrade(), redis.upgrade()) else {
        return false;
    };
    if redis.breaker_open() || !overrides.is_enabled_here() {
        return true;
    }
    let Ok(mut connection) = redis.connection() else {
        return true;
    };
    // A read that a change of this node's overtook is older than the table: read again (the next look would
    // be the backstop's, seconds away).
    for _ in 0..READS {
        if !read_whole(&overrides, &redis, &mut connection).await {
            break;
        }
    }
    true
}

/// Reads the whole hash and installs it; says whether a change applied here meanwhile made the read stale.
async fn read_whole(
    overrides: &Overrides,
    redis: &RedisBackend,
    connection: &mut crate::backend::redis::wire::connection::Connection,
) -> bool {
    let mark = overrides.mark();
    let mut read = redis::cmd("HGETALL");
    read.arg(OVERRIDES);
    let fields = read.query_async::<Vec<(String, String)>>(connection);
    match tokio::time::timeout(CHANGE_DEADLINE, fields).await {
        Ok(Ok(fields)) => {
            let (mut version, mut on_everywhere, mut limits) = (0, true, None);
            let mut all = Vec::with_capacity(fields.len());
            let mut banning = Vec::new();
            for (field, value) in &fields {
                if field == VERSION {
                    version = value.parse().unwrap_or(0);
                } else if field == SWITCH {
                    on_everywhere = parse_switch(value).unwrap_or(true);
                } else if field == LIMITS {
                    limits = Some(value.clone());
                } else if let Some(Change::Banning { prefix, until }) =
                    Change::parse("set", field, value)
                {
                    banning.push((prefix, until));
                } else {
                    match Override::parse(field, value) {
                        Some(o) => match o.invalid() {
                            None => all.push(o),
                            Some(reason) => tracing::warn!(
                                field,
                                value,
                                "rate limiter: ignoring an override no runtime takes: {reason}"
                            ),
                        },
                        None => tracing::warn!(
                            field,
                            value,
                            "rate limiter: ignoring an override this version cannot read"
                        ),
                    }
                }
            }
            match overrides.install(mark, all, on_everywhere, banning, (version, limits)) {
                Some(true) => redis.forget_denials(),
                Some(false) => {}
                None => return true,
            }
        }
        Ok(Err(error)) => tracing::debug!(%error, "rate limiter: could not load the overrides"),
        Err(_) => tracing::debug!("rate limiter: loading the overrides timed out"),
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announcement_reads_back_whatever_its_field_holds() {
        let o = Override::key("p:", "a\nb:c").max(3);
        let message = format!("7\nset\n{}\n{}", o.value(), o.field());
        assert_eq!(
            Announcement::parse(&message),
            Some(Announcement {
                version: 7,
                change: Change::Set(o.clone()),
            })
        );
        let message = format!("8\nclear\n\n{}", o.field());
        assert!(Announcement::parse(&message)
            .is_some_and(|a| a.change == Change::Clear(Override::key("p:", "a\nb:c"))));
        assert_eq!(
            Announcement::parse("9\nset\noff\nswitch").map(|a| a.change),
            Some(Change::Switch(false))
        );
        // An older runtime's announcement (the field alone) is not read as a change.
        assert_eq!(Announcement::parse(&o.field()), None);
        assert_eq!(Announcement::parse("x\nset\n\np:1:a"), None);
    }
}
