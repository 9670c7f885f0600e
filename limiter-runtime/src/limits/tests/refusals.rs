//! Each mistake a limits file can hold, refused at its line and column with what was expected there.

use super::parse;

/// Checks that `text` is refused at `line`:`column` with an error that says `says`.
#[track_caller]
fn refused(text: &str, line: usize, column: usize, says: &str) {
    let error = match parse(text) {
        Ok(read) => panic!("read, not refused: {read:?}\n{text}"),
        Err(error) => error,
    };
    let shown = error.to_string();
    assert_eq!(
        (error.line(), error.column()),
        (Some(line), Some(column)),
        "{shown}"
    );
    assert!(
        shown.starts_with(&format!("limits.toml:{line}:{column}: ")),
        "{shown}"
    );
    assert!(shown.contains(says), "{shown}\nshould say: {says}");
}

/// Checks the sentence of an unknown field whole: file, line, column, the field, where, and what is allowed.
#[test]
fn an_unknown_field_is_named_with_those_allowed() {
    let error = parse("[policies.search]\nmax = 5\n  maxx = 5\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "limits.toml:3:3: unknown field `maxx` in policy \"search\"; expected one of: `prefix`, `algorithm`, \
         `max`, `window`, `message`, `penalty`, `reserve`, `burst`, `max_wait`, `in_flight`, `shadow`, \
         `on_error`, `lease`, `lease_ttl`, `in_flight_ttl`, `period`, `tz`, `anchor`, `plans`"
    );
    assert_eq!(error.path(), std::path::Path::new("limits.toml"));
    refused(
        "[defaults]\nwindow = \"1m\"\nwindo = \"1m\"\n",
        3,
        1,
        "unknown field `windo` in [defaults]",
    );
    refused(
        "[policies.s.plans.pro]\nmaxx = 1\n",
        2,
        1,
        "unknown field `maxx` in plan \"pro\" of policy \"s\"; expected one of: `max`, `window`, `burst`, \
         `reserve`, `penalty`, `in_flight`",
    );
    refused(
        "[policies.s]\nname = \"t\"\n",
        2,
        1,
        "a policy's name is its table's, `[policies.s]`",
    );
    refused(
        "[defaults]\nplans.pro.max = 1\n",
        2,
        1,
        "plans belong to a policy",
    );
}

/// Checks that a plan refuses a field plans do not take, and one its policy's kind has not.
#[test]
fn a_plan_takes_only_what_a_plan_varies() {
    refused(
        "[policies.s.plans.pro]\nmax = 1\nalgorithm = \"token_bucket\"\n",
        3,
        1,
        "`algorithm` in plan \"pro\" of policy \"s\" is not allowed: a plan sets only `max`",
    );
    refused(
        "[policies.s]\nmax = 5\n[policies.s.plans.pro]\nin_flight = 2\n",
        4,
        1,
        "`in_flight` in plan \"pro\" of policy \"s\" does not apply: the policy limits a rate",
    );
    refused(
        "[policies.s]\nin_flight = 5\n[policies.s.plans.pro]\nmax = 2\n",
        4,
        1,
        "the policy limits calls in flight, not a rate",
    );
}

/// Checks that the defaults refuse what would make every policy a kind of its own.
#[test]
fn the_defaults_take_no_kind_of_policy() {
    refused(
        "[defaults]\nin_flight = 4\n",
        2,
        1,
        "`in_flight` in [defaults] is not allowed",
    );
    refused(
        "[defaults]\nperiod = \"day\"\n",
        2,
        1,
        "`period` in [defaults] is not allowed",
    );
}

/// Checks the top level: only `[defaults]` and `[policies.<name>]`, each a table.
#[test]
fn the_top_level_holds_two_tables() {
    refused(
        "[polices.search]\nmax = 1\n",
        1,
        2,
        "unknown table `polices` at the top level; expected one of: `[defaults]`, `[policies.<name>]`",
    );
    refused("max = 1\n", 1, 1, "unknown table `max` at the top level");
    refused(
        "defaults = 5\n",
        1,
        12,
        "`defaults` is `[defaults]`, not an integer",
    );
    refused(
        "[policies]\nsearch = 5\n",
        2,
        10,
        "`search` is a policy, `[policies.search]`, not an integer",
    );
    refused(
        "[policies.s]\nplans = \"pro\"\n",
        2,
        9,
        "`plans` is a table of plans",
    );
}

/// Checks the types of values: a quoted number, a float, a string where a boolean goes.
#[test]
fn a_value_of_the_wrong_type_is_refused_at_the_value() {
    refused(
        "[policies.s]\nmax = \"100\"\n",
        2,
        7,
        "`max` in policy \"s\" takes a whole number, at least 1, e.g. `max = 100`, not a string (write it \
         without quotes)",
    );
    refused("[policies.s]\nmax = 1.5\n", 2, 7, "not a float");
    refused("[policies.s]\nshadow = \"yes\"\n", 2, 10, "takes `true`");
    refused("[policies.s]\nmessage = 5\n", 2, 11, "takes a string");
    refused(
        "[policies.s]\nwindow = [1]\n",
        2,
        10,
        "takes whole seconds (`window = 10`) or a duration string",
    );
}

/// Checks that a limit of zero, or a negative one, is refused where zero is not allowed.
#[test]
fn zero_and_negative_limits_are_refused() {
    refused("[policies.s]\nmax = 0\n", 2, 7, "`max = 0` admits no call");
    refused("[policies.s]\nmax = -5\n", 2, 7, "`max = -5` is negative");
    refused(
        "[policies.s]\nalgorithm = \"token_bucket\"\nburst = 0\n",
        3,
        9,
        "`burst = 0` admits no call",
    );
    refused(
        "[policies.s]\nin_flight = 0\n",
        2,
        13,
        "`in_flight = 0` admits no call",
    );
    refused(
        "[policies.s.plans.p]\nmax = 0\n",
        2,
        7,
        "`max = 0` admits no call",
    );
    refused(
        "[policies.s]\nlease = 0\n",
        2,
        9,
        "`lease = 0` admits no call",
    );
    refused(
        "[policies.s]\nmax = 18446744073709551616\n",
        2,
        7,
        "`max` is too large",
    );
    refused(
        "[policies.s]\nwindow = 0\n",
        2,
        10,
        "`window` must be longer than zero",
    );
    refused(
        "[policies.s]\nwindow = \"0s\"\n",
        2,
        10,
        "`window` must be longer than zero",
    );
    refused(
        "[policies.s]\nwindow = -1\n",
        2,
        10,
        "`window = -1` is negative",
    );
    refused(
        "[defaults]\nanchor = 32\n",
        2,
        10,
        "`anchor = 32` is not a day of a month",
    );
}

/// Checks that the texts go through the grammar: an unknown algorithm, a bad duration, penalty, reserve, zone,
/// period or failure policy, each at the character the grammar points at when the string is written plainly.
#[test]
fn texts_are_read_by_the_grammar() {
    refused(
        "[policies.s]\nalgorithm = \"gcra\"\n",
        2,
        13,
        "`algorithm` in policy \"s\": unknown algorithm `gcra`: expected sliding_log, fixed_window",
    );
    refused(
        "[policies.s]\nalgorithm = \"in_flight\"\n",
        2,
        13,
        "is not chosen by name",
    );
    refused(
        "[policies.s]\nwindow = \"10x\"\n",
        2,
        11,
        "`window` in policy \"s\" is not a duration: expected whole numbers",
    );
    // The second `1m`: the grammar's range, inside the string.
    refused(
        "[policies.s]\nwindow = \"1m1m\"\n",
        2,
        13,
        "`m` is written twice",
    );
    refused("[policies.s]\nwindow = \"10\"\n", 2, 11, "`10` has no unit");
    // Escaped: the string is not written as it reads, so the value itself.
    refused(
        "[policies.s]\nwindow = \"1\\u006d1m\"\n",
        2,
        10,
        "`m` is written twice",
    );
    refused(
        "[policies.s]\npenalty = \"1h..1m\"\n",
        2,
        12,
        "the first block is longer than the longest",
    );
    refused(
        "[policies.s]\nreserve = \"critical 20%, urgent 5%\"\n",
        2,
        26,
        "unknown priority `urgent`",
    );
    refused(
        "[policies.s]\nreserve = \"low 20%\"\n",
        2,
        12,
        "kept for every call",
    );
    refused(
        "[policies.s]\non_error = \"never\"\n",
        2,
        12,
        "unknown on_error `never`: expected open, closed or local",
    );
    refused(
        "[policies.s]\nperiod = \"year\"\n",
        2,
        10,
        "unknown period `year`: expected day, week or month",
    );
    refused(
        "[policies.s]\nperiod = \"day\"\ntz = \"Europe/Berln\"\n",
        3,
        6,
        "unknown time zone `Europe/Berln`",
    );
}

/// Checks that a policy written twice is refused at the second, in the file's terms.
#[test]
fn a_duplicate_policy_is_refused_at_the_second() {
    refused(
        "[policies.a]\nmax = 1\n\n[policies.a]\nmax = 2\n",
        4,
        11,
        "the policy \"a\" is written twice",
    );
    refused(
        "[policies.a.plans.pro]\nmax = 1\n[policies.a.plans.pro]\nmax = 2\n",
        3,
        19,
        "the plan \"pro\" of policy \"a\" is written twice",
    );
    refused(
        "[policies.a]\nmax = 1\nmax = 2\n",
        3,
        1,
        "`max` is written twice",
    );
}

/// Checks that a policy's or plan's name is `[A-Za-z0-9_.-]+`.
#[test]
fn a_name_is_letters_digits_and_marks() {
    refused(
        "[policies.\"\"]\nmax = 1\n",
        1,
        11,
        "the policy name \"\" is not a name",
    );
    refused(
        "[policies.\"a b\"]\nmax = 1\n",
        1,
        11,
        "the policy name \"a b\" is not a name",
    );
    refused(
        "[policies.a.plans.\"pro/2\"]\nmax = 1\n",
        1,
        19,
        "the plan name \"pro/2\" is not a name",
    );
    assert!(parse("[policies.\"v1.search_all-x\"]\nmax = 1\n").is_ok());
}

/// Checks how a policy's fields fit together, as the attribute's arguments do.
#[test]
fn fields_that_do_not_fit_together_are_refused() {
    refused(
        "[policies.t]\nperiod = \"month\"\nalgorithm = \"token_bucket\"\n",
        3,
        1,
        "`algorithm = \"token_bucket\"` in policy \"t\" cannot be used with `period`",
    );
    refused(
        "[policies.t]\nwindow = \"1m\"\nperiod = \"day\"\n",
        2,
        1,
        "`window` in policy \"t\" cannot be used with `period`",
    );
    refused(
        "[policies.t]\nperiod = \"week\"\nanchor = 3\n",
        3,
        1,
        "it needs `period = \"month\"`, not `period = \"week\"`",
    );
    refused(
        "[policies.t]\nanchor = 3\n",
        2,
        1,
        "`anchor` in policy \"t\" is the billing day of a month",
    );
    refused(
        "[policies.t]\ntz = \"UTC\"\n",
        2,
        1,
        "`tz` in policy \"t\" is the time zone a calendar quota counts",
    );
    refused(
        "[policies.t]\nin_flight = 3\nmax = 5\n",
        3,
        1,
        "`max` in policy \"t\" cannot be used with `in_flight`: a policy is one limit",
    );
}

/// Checks that text that is not TOML is refused at the parser's position.
#[test]
fn text_that_is_not_toml_is_refused_where_it_stops_being() {
    refused("[policies.a\nmax = 1\n", 1, 12, "this is not TOML");
    refused("[policies.a]\nmax = \n", 2, 7, "this is not TOML");
    refused("[policies.a]\nmax = 1 2\n", 2, 7, "this is not TOML");
}
