//! What every script of `scripts/` may do, checked on its text: only commands of the oldest Redis the crate
//! supports (7.0: `inspect.lua`'s `#!lua flags=` line needs it), and only keys that come in `KEYS[]`
//! (Redis Cluster routes a script by them; Dragonfly, Garnet and some managed services refuse any other).

use std::collections::BTreeMap;
use std::path::Path;

/// Returns every script of `scripts/`, by name, read from the directory when the check runs (a script added there is
/// checked without being listed anywhere), then each script assembled from them (`build.rs`), as Redis runs it.
fn scripts() -> Vec<(String, String)> {
    let mut scripts = scripts_in(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts"));
    let assembled = super::assembled().into_iter();
    scripts
        .extend(assembled.map(|(name, source)| (format!("{name} (assembled)"), source.to_owned())));
    scripts
}

/// Reads every `.lua` file of `directory`, by name (without `.lua`), in the order of their names.
fn scripts_in(directory: &Path) -> Vec<(String, String)> {
    let mut scripts: Vec<(String, String)> = std::fs::read_dir(directory)
        .unwrap_or_else(|error| panic!("{}: {error}", directory.display()))
        .map(|entry| entry.expect("an entry of the scripts' directory").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "lua"))
        .map(|path| {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let source = std::fs::read_to_string(&path)
                .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
            (name, source)
        })
        .collect();
    scripts.sort();
    scripts
}

/// The oldest Redis the scripts run on.
const OLDEST: (u32, u32) = (7, 0);

/// Which arguments of a command are keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keys {
    /// None: `TIME`, `PUBLISH` (a channel is not a key).
    None,
    /// The first argument only.
    First,
    /// Every argument: `DEL key [key ...]`, `EXISTS key [key ...]`.
    All,
}

impl Keys {
    /// Returns whether argument `position` (from 0, the command's name not counted) is a key.
    fn at(self, position: usize) -> bool {
        match self {
            Keys::None => false,
            Keys::First => position == 0,
            Keys::All => true,
        }
    }
}

/// The commands the scripts may call, with the Redis version that brought each (and each option they use),
/// and which of its arguments are keys (as `COMMAND INFO` gives its key specs).
const COMMANDS: [(&str, (u32, u32), Keys); 21] = [
    ("DEL", (1, 0), Keys::All),
    ("EXISTS", (1, 0), Keys::All),
    ("GET", (1, 0), Keys::First),
    ("HDEL", (2, 0), Keys::First),
    ("HINCRBY", (2, 0), Keys::First),
    ("HMGET", (2, 0), Keys::First),
    // Several fields at once: 4.0.
    ("HSET", (4, 0), Keys::First),
    ("PEXPIRE", (2, 6), Keys::First),
    ("PUBLISH", (2, 0), Keys::None),
    // KEEPTTL: 6.0.
    ("SET", (6, 0), Keys::First),
    ("TIME", (2, 6), Keys::None),
    // What a key of another type holds (`scripts/algorithms/other.lua`).
    ("TYPE", (1, 0), Keys::First),
    // XX and CH: 3.0.2.
    ("ZADD", (3, 0), Keys::First),
    ("ZCARD", (1, 2), Keys::First),
    ("ZCOUNT", (2, 0), Keys::First),
    ("ZRANGE", (1, 2), Keys::First),
    ("ZRANGEBYSCORE", (2, 2), Keys::First),
    ("ZREM", (1, 2), Keys::First),
    ("ZREMRANGEBYSCORE", (1, 2), Keys::First),
    ("ZSCORE", (1, 2), Keys::First),
    // A script's `#!lua flags=` line.
    ("#!lua", (7, 0), Keys::None),
];

/// Returns the arguments of a call whose text follows its opening parenthesis, each trimmed: split at the commas
/// outside parentheses, brackets, braces, string literals and comments, up to the parenthesis that closes the
/// call.
fn arguments(text: &str) -> Vec<String> {
    let (mut depth, mut quote, mut escaped) = (0usize, None, false);
    let (mut argument, mut found) = (String::new(), Vec::new());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(open) = quote {
            argument.push(c);
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                _ if c == open => quote = None,
                _ => {}
            }
            continue;
        }
        match c {
            '-' if chars.peek() == Some(&'-') => {
                // A comment, to the end of its line.
                chars.by_ref().find(|&c| c == '\n');
                argument.push('\n');
                continue;
            }
            '\'' | '"' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' if depth == 0 => break,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                found.push(std::mem::take(&mut argument).trim().to_owned());
                continue;
            }
            _ => {}
        }
        argument.push(c);
    }
    let last = argument.trim();
    if !last.is_empty() || !found.is_empty() {
        found.push(last.to_owned());
    }
    found
}

/// Finds each `redis.call(...)` and `redis.pcall(...)` of `source`: the command named (as written, quoted) and the
/// text of each of its arguments.
fn calls(source: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for (at, _) in source.match_indices("redis.") {
        let rest = &source[at + "redis.".len()..];
        let Some(args) = rest
            .strip_prefix("call(")
            .or_else(|| rest.strip_prefix("pcall("))
        else {
            continue;
        };
        let mut args = arguments(args).into_iter();
        let command = args.next().unwrap_or_default();
        found.push((command, args.collect()));
    }
    found
}

/// Returns whether `c` may be part of a Lua name.
fn is_name(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Finds what `name` is set to in `source`: the expression each assignment to it gives it, wherever the assignment
/// is (`local name = ...`, `a, name = ...`, `if ... then name = ... end`); a `for` loop's variable is set
/// to what the loop gives it, which is never an entry of `KEYS` as written.
fn assignments(source: &str, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    let code: String = source
        .lines()
        .map(|line| line.split_once("--").map_or(line, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    for (at, _) in code.match_indices(name) {
        let (before, after) = (&code[..at], &code[at + name.len()..]);
        if before.ends_with(is_name) || after.starts_with(is_name) || before.ends_with('.') {
            continue;
        }
        // The targets before it (`a, b, name`), and after it up to `=` (`name, c =`).
        let mut position = 0;
        let mut head = before.trim_end();
        while let Some(rest) = head.strip_suffix(',') {
            let rest = rest.trim_end();
            let target = rest.trim_end_matches(is_name);
            if target.len() == rest.len() {
                break;
            }
            position += 1;
            head = target.trim_end();
        }
        let word = head.trim_end();
        if word
            .strip_suffix("for")
            .is_some_and(|rest| !rest.ends_with(is_name))
        {
            found.push(format!("(a `for` loop's {name})"));
            continue;
        }
        let mut tail = after.trim_start();
        while let Some(rest) = tail.strip_prefix(',') {
            let rest = rest.trim_start();
            let target = rest.trim_start_matches(is_name);
            if target.len() == rest.len() {
                break;
            }
            tail = target.trim_start();
        }
        if tail.starts_with(" in ") || tail.starts_with("in ") {
            found.push(format!("(a `for` loop's {name})"));
            continue;
        }
        let Some(values) = tail.strip_prefix('=').filter(|v| !v.starts_with('=')) else {
            continue;
        };
        let line = values.split('\n').next().unwrap_or_default();
        let value = arguments(line).into_iter().nth(position);
        found.push(value.unwrap_or_default());
    }
    found
}

/// Returns whether `expression` is exactly an entry of `KEYS`: `KEYS[...]`, and nothing made of one (`KEYS[1] ..
/// 'x'` is another key, not declared).
fn is_keys_entry(expression: &str) -> bool {
    let Some(index) = expression.strip_prefix("KEYS[") else {
        return false;
    };
    let mut depth = 1usize;
    for (at, c) in index.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    return at + 1 == index.len() && at > 0;
                }
            }
            _ => {}
        }
    }
    false
}

/// Returns whether a key a script touches comes in `KEYS[]`: it is exactly `KEYS[...]`, or a name only ever set to such
/// (a function's parameter by each of its calls, or passed on as the same name).
fn from_keys(source: &str, expression: &str) -> bool {
    if is_keys_entry(expression) {
        return true;
    }
    if expression.is_empty() || !expression.chars().all(is_name) {
        return false;
    }
    let given: Vec<String> = assignments(source, expression)
        .into_iter()
        .chain(parameters(source, expression))
        .collect();
    !given.is_empty()
        && given
            .iter()
            .all(|value| is_keys_entry(value) || value == expression)
}

/// Finds what each call gives the parameter `name` of a function defined as `f = function(name, ...)`.
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
            if source[..at].ends_with(is_name) {
                continue;
            }
            let args = arguments(&source[at + call.len()..]);
            found.push(args.into_iter().nth(position).unwrap_or_default());
        }
    }
    found
}

/// Finds the faults of `script`'s calls (named `name`): a command named at run time, one not among those checked
/// or of a later Redis than the oldest, a key argument that does not come in `KEYS[]`.
fn faults(name: &str, source: &str) -> Vec<String> {
    let commands: BTreeMap<&str, ((u32, u32), Keys)> = COMMANDS
        .iter()
        .map(|&(name, since, keys)| (name, (since, keys)))
        .collect();
    let mut faults = Vec::new();
    if source.starts_with("#!lua") && commands["#!lua"].0 > OLDEST {
        faults.push(format!("{name}.lua has a `#!lua` line"));
    }
    for (command, args) in calls(source) {
        let called = command.trim_matches('\'');
        if !(command.starts_with('\'') && command.ends_with('\'')) {
            faults.push(format!(
                "{name}.lua calls a command it names at run time: {command}"
            ));
            continue;
        }
        let Some(&(since, keys)) = commands.get(called) else {
            faults.push(format!(
                "{name}.lua calls {called}, which is not among the commands checked"
            ));
            continue;
        };
        if since > OLDEST {
            faults.push(format!("{name}.lua calls {called}: Redis {since:?}"));
        }
        for (position, arg) in args.iter().enumerate() {
            if keys.at(position) && !from_keys(source, arg) {
                faults.push(format!(
                    "{name}.lua calls {called} on {arg}, a key that does not come in KEYS[]"
                ));
            }
        }
    }
    faults
}

/// Checks that every script of `scripts/` calls only commands of the oldest Redis, on keys it is given in `KEYS[]`:
/// every key argument of each call, not only the first.
#[test]
fn every_script_calls_only_commands_of_the_oldest_redis_on_keys_it_is_given() {
    let scripts = scripts();
    assert!(
        scripts.iter().any(|(name, _)| name == "groups (assembled)"),
        "{scripts:?}"
    );
    let mut seen = 0;
    for (name, source) in &scripts {
        seen += calls(source).len();
        let faults = faults(name, source);
        assert!(faults.is_empty(), "{faults:#?}");
    }
    assert!(seen > 80, "{seen} calls read");
}

/// Checks that the check finds what it is to find: a key made inside a script, a command named at run time, a command
/// of a later Redis.
#[test]
fn the_check_finds_a_key_made_inside_a_script() {
    let made = "local key = KEYS[1]\nlocal other = ARGV[1] .. 'x'\nredis.call('GET', other)\n";
    let calls = calls(made);
    assert_eq!(calls, [("'GET'".to_owned(), vec!["other".to_owned()])]);
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

/// Checks that every key argument is checked, not only the first: a command of several keys (`DEL`, `EXISTS`) whose
/// second key is made in the script is refused, and one whose keys all come in `KEYS[]` passes; a
/// command's arguments that are not keys (`SET`'s value, `HSET`'s fields) are not taken for keys.
#[test]
fn the_check_reads_every_key_argument() {
    let second = "redis.call('DEL', KEYS[1], ARGV[1])\n";
    assert_eq!(
        faults("second", second),
        ["second.lua calls DEL on ARGV[1], a key that does not come in KEYS[]"]
    );
    let exists = "local key = KEYS[1]\nredis.call('EXISTS', key, 'limiter:' .. key)\n";
    assert_eq!(
        faults("exists", exists).len(),
        1,
        "{:?}",
        faults("exists", exists)
    );
    assert!(faults("both", "redis.call('DEL', KEYS[1], KEYS[2])\n").is_empty());
    let values = "redis.call('SET', KEYS[1], ARGV[1], 'PX', f(ARGV[2], 3))\n\
                  redis.call('HSET', KEYS[2], 'w', ARGV[3], 'n', 1)\n";
    assert!(
        faults("values", values).is_empty(),
        "{:?}",
        faults("values", values)
    );
    assert_eq!(
        calls("redis.call('ZADD', KEYS[1], f(a, b), 'm, n', \"x)\")")[0].1,
        ["KEYS[1]", "f(a, b)", "'m, n'", "\"x)\""]
    );
}

/// Checks that a key built from an entry of `KEYS` is not one: `KEYS[1] .. 'x'`, written in the call, held in a name,
/// or passed to a function, is refused; a name set from `KEYS[...]` in one place and from something else in
/// another is refused too.
#[test]
fn the_check_refuses_a_key_built_from_one_of_keys() {
    let direct = "redis.call('GET', KEYS[1] .. ':x')\n";
    assert_eq!(faults("direct", direct).len(), 1);
    let held = "local key = KEYS[1] .. ':x'\nredis.call('ZCARD', key)\n";
    assert_eq!(faults("held", held).len(), 1);
    let indexed = "redis.call('GET', KEYS[1]:sub(2))\nredis.call('GET', KEYS[1][2])\n";
    assert_eq!(
        faults("indexed", indexed).len(),
        2,
        "{:?}",
        faults("indexed", indexed)
    );
    let passed = "local f = function(key) redis.call('DEL', key) end\nf(KEYS[1] .. 'x')\n";
    assert_eq!(faults("passed", passed).len(), 1);
    let reassigned =
        "local key = KEYS[1]\nif ARGV[1] then key = key .. ARGV[1] end\nredis.call('GET', key)\n";
    assert_eq!(faults("reassigned", reassigned).len(), 1);
    let looped = "for _, key in ipairs(ARGV) do redis.call('DEL', key) end\n";
    assert_eq!(faults("looped", looped).len(), 1);
    assert!(faults("computed", "redis.call('GET', KEYS[k + i])\n").is_empty());
}

/// Checks that the check reads the scripts where they are, each `.lua` file of the directory whatever its name: a
/// script added there is checked (and its fault found) without being listed anywhere.
#[test]
fn the_check_reads_every_script_of_the_directory() {
    let directory = std::env::temp_dir().join(format!("limiter-checked-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    std::fs::write(directory.join("added.lua"), "redis.call('GET', ARGV[1])\n").unwrap();
    std::fs::write(directory.join("notes.txt"), "redis.call('GET', ARGV[1])\n").unwrap();
    let found = scripts_in(&directory);
    std::fs::remove_dir_all(&directory).unwrap();
    let names: Vec<&str> = found.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["added"]);
    assert_eq!(faults(&found[0].0, &found[0].1).len(), 1);

    // The scripts' own directory: every `.lua` file there is among those the check reads, by name, against a
    // list written here (not the check's own reading of the directory), as are the scripts `build.rs` assembles.
    let files = [
        "ban",
        "give_back",
        "groups",
        "inspect",
        "instances",
        "lease",
        "one_limit",
        "overrides",
        "pause",
        "renew",
        "reports",
    ];
    let algorithms = [
        "sliding_log",
        "fixed_window",
        "sliding_window",
        "token_bucket",
        "leaky_bucket",
        "in_flight",
        "calendar",
    ];
    let templates = [
        "groups",
        "give_back",
        "lease",
        "ban",
        "pause",
        "renew",
        "inspect",
    ];
    let expected: Vec<String> = files
        .iter()
        .map(|name| name.to_string())
        .chain(
            algorithms
                .iter()
                .map(|algorithm| format!("one_limit {algorithm} (assembled)")),
        )
        .chain(templates.iter().map(|name| format!("{name} (assembled)")))
        .collect();
    let names: Vec<String> = scripts().into_iter().map(|(name, _)| name).collect();
    assert_eq!(names, expected);

    // And the assembled scripts are each what `build.rs` wrote, every file it wrote among them: read from its
    // output directory, not from `assembled()`'s list.
    let out = Path::new(env!("OUT_DIR")).join("scripts");
    let mut written: BTreeMap<String, String> = scripts_in(&out.join("one_limit"))
        .into_iter()
        .map(|(algorithm, source)| (format!("one_limit {algorithm}"), source))
        .chain(scripts_in(&out))
        .collect();
    for (name, source) in super::assembled() {
        let file = written.remove(&name);
        assert_eq!(file.as_deref(), Some(source), "{name}");
    }
    assert!(written.is_empty(), "not checked: {:?}", written.keys());
}
