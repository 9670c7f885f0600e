//! What every script of `scripts/` may do, checked on its text: only commands of the oldest Redis the crate
//! supports (7.0: `inspect.lua`'s `#!lua flags=` line needs it), and only keys that come in `KEYS[]`
//! (Redis Cluster routes a script by them; Dragonfly, Garnet and some managed services refuse any other).

use std::collections::BTreeMap;

/// Every script, by name.
const SCRIPTS: [(&str, &str); 13] = [
    ("calendar", include_str!("../../../../scripts/calendar.lua")),
    (
        "fixed_window",
        include_str!("../../../../scripts/fixed_window.lua"),
    ),
    (
        "in_flight",
        include_str!("../../../../scripts/in_flight.lua"),
    ),
    ("inspect", include_str!("../../../../scripts/inspect.lua")),
    (
        "instances",
        include_str!("../../../../scripts/instances.lua"),
    ),
    (
        "leaky_bucket",
        include_str!("../../../../scripts/leaky_bucket.lua"),
    ),
    ("limiter", include_str!("../../../../scripts/limiter.lua")),
    (
        "overrides",
        include_str!("../../../../scripts/overrides.lua"),
    ),
    ("renew", include_str!("../../../../scripts/renew.lua")),
    ("reports", include_str!("../../../../scripts/reports.lua")),
    (
        "sliding_log",
        include_str!("../../../../scripts/sliding_log.lua"),
    ),
    (
        "sliding_window",
        include_str!("../../../../scripts/sliding_window.lua"),
    ),
    (
        "token_bucket",
        include_str!("../../../../scripts/token_bucket.lua"),
    ),
];

/// The oldest Redis the scripts run on.
const OLDEST: (u32, u32) = (7, 0);

/// The commands the scripts may call, with the Redis version that brought each (and each option they use),
/// and whether its first argument is a key.
const COMMANDS: [(&str, (u32, u32), bool); 20] = [
    ("DEL", (1, 0), true),
    ("EXISTS", (1, 0), true),
    ("GET", (1, 0), true),
    ("HDEL", (2, 0), true),
    ("HINCRBY", (2, 0), true),
    ("HMGET", (2, 0), true),
    // Several fields at once: 4.0.
    ("HSET", (4, 0), true),
    ("PEXPIRE", (2, 6), true),
    ("PUBLISH", (2, 0), false),
    // KEEPTTL: 6.0.
    ("SET", (6, 0), true),
    ("TIME", (2, 6), false),
    // XX and CH: 3.0.2.
    ("ZADD", (3, 0), true),
    ("ZCARD", (1, 2), true),
    ("ZCOUNT", (2, 0), true),
    ("ZRANGE", (1, 2), true),
    ("ZRANGEBYSCORE", (2, 2), true),
    ("ZREM", (1, 2), true),
    ("ZREMRANGEBYSCORE", (1, 2), true),
    ("ZSCORE", (1, 2), true),
    // A script's `#!lua flags=` line.
    ("#!lua", (7, 0), false),
];

/// Each `redis.call(...)` and `redis.pcall(...)` of `source`: the command named and its first argument's
/// text.
fn calls(source: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (at, _) in source.match_indices("redis.") {
        let rest = &source[at + "redis.".len()..];
        let Some(args) = rest
            .strip_prefix("call(")
            .or_else(|| rest.strip_prefix("pcall("))
        else {
            continue;
        };
        let mut parts = args.splitn(3, [',', ')']);
        let command = parts.next().unwrap_or_default().trim().to_owned();
        let first = parts.next().unwrap_or_default().trim().to_owned();
        found.push((command, first));
    }
    found
}

/// What `name` is set to in `source`: the expression each assignment to it (or, for a parameter, each call
/// of the function it is a parameter of) gives it.
fn assignments(source: &str, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in source
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("--"))
    {
        let line = line.strip_prefix("local ").unwrap_or(line);
        let Some((targets, values)) = line.split_once(" = ") else {
            continue;
        };
        let targets: Vec<&str> = targets.split(',').map(str::trim).collect();
        if let Some(position) = targets.iter().position(|t| *t == name) {
            // The values, split at top-level commas.
            let (mut depth, mut value, mut values_found) = (0, String::new(), Vec::new());
            for c in values.chars() {
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => depth -= 1,
                    ',' if depth == 0 => {
                        values_found.push(std::mem::take(&mut value));
                        continue;
                    }
                    _ => {}
                }
                value.push(c);
            }
            values_found.push(value);
            let value = values_found.get(position).map(|v| v.trim().to_owned());
            found.push(value.unwrap_or_default());
        }
    }
    found
}

/// A key a script touches comes in `KEYS[]`: it is `KEYS[...]` itself, or a name only ever set to such (a
/// function's parameter by each of its calls).
fn from_keys(source: &str, expression: &str) -> bool {
    if expression.starts_with("KEYS[") {
        return true;
    }
    let given: Vec<String> = assignments(source, expression)
        .into_iter()
        .chain(parameters(source, expression))
        .collect();
    !given.is_empty()
        && given
            .iter()
            .all(|value| value.starts_with("KEYS[") || value == expression)
}

/// What each call gives the parameter `name` of a function defined as `f = function(name, ...)`.
fn parameters(source: &str, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in source.match_indices(" = function(") {
        let function = source[..at].rsplit([' ', '\n']).next().unwrap_or_default();
        let params = &source[at + " = function(".len()..];
        let params = &params[..params.find(')').unwrap_or(0)];
        let Some(position) = params.split(',').map(str::trim).position(|p| p == name) else {
            continue;
        };
        let call = format!("{function}(");
        for (at, _) in source.match_indices(&call) {
            let args = &source[at + call.len()..];
            found.push(
                args.split(',')
                    .nth(position)
                    .unwrap_or_default()
                    .trim()
                    .to_owned(),
            );
        }
    }
    found
}

#[test]
fn every_script_calls_only_commands_of_the_oldest_redis_on_keys_it_is_given() {
    let commands: BTreeMap<&str, ((u32, u32), bool)> = COMMANDS
        .iter()
        .map(|&(name, since, keyed)| (name, (since, keyed)))
        .collect();
    let mut seen = 0;
    for (script, source) in SCRIPTS {
        if source.starts_with("#!lua") {
            assert!(commands["#!lua"].0 <= OLDEST);
        }
        for (command, first) in calls(source) {
            seen += 1;
            let name = command.trim_matches('\'');
            assert!(
                command.starts_with('\'') && command.ends_with('\''),
                "{script}.lua calls a command it names at run time: {command}"
            );
            let Some(&(since, keyed)) = commands.get(name) else {
                panic!("{script}.lua calls {name}, which is not among the commands checked");
            };
            assert!(
                since <= OLDEST,
                "{script}.lua calls {name}: Redis {since:?}"
            );
            assert!(
                !keyed || from_keys(source, &first),
                "{script}.lua calls {name} on {first}, a key that does not come in KEYS[]"
            );
        }
    }
    assert!(seen > 80, "{seen} calls read");
}

/// The check finds what it is to find: a key made inside a script, a command named at run time, a command
/// of a later Redis.
#[test]
fn the_check_finds_a_key_made_inside_a_script() {
    let made = "local key = KEYS[1]\nlocal other = ARGV[1] .. 'x'\nredis.call('GET', other)\n";
    let calls = calls(made);
    assert_eq!(calls, [("'GET'".to_owned(), "other".to_owned())]);
    assert!(!from_keys(made, "other"));
    assert!(from_keys(made, "key"));
    let passed =
        "local f = function(key, n) redis.call('DEL', key) end\nf(KEYS[2], 1)\nf(ARGV[1], 2)\n";
    assert!(!from_keys(passed, "key"));
    assert!(from_keys(
        "local f = function(key) end\nf(KEYS[1])\n",
        "key"
    ));
    assert!(
        !COMMANDS.iter().any(|(name, _, _)| *name == "LMPOP"),
        "a 7.0 command, unused"
    );
}
