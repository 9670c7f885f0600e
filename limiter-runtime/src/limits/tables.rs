//! The tables of a limits file: the top level (`[defaults]`, `[policies.<name>]`), a policy's fields and its
//! `plans`, each read top-down in the file's order, so the first mistake found is the first written.

use std::ops::Range;

use toml::de::{DeString, DeTable, DeValue};
use toml::Spanned;

use super::checks::{check_plan, check_policy};
use super::error::{LimitsError, Source};
use super::fields::{is_name, listed, Field, Place};
use super::values::{kind_of, read, Setting, Written};
use super::LimitsFile;
use crate::{Plan, Rule};

/// One field of a table, read, and where its key is.
pub(crate) type Read = (Setting, Range<usize>);

/// A key of a table and its value.
type Entry<'t, 'i> = (&'t Spanned<DeString<'i>>, &'t Spanned<DeValue<'i>>);

/// Reads the whole document.
pub(crate) fn file(source: Source<'_>, root: &DeTable<'_>) -> Result<LimitsFile, LimitsError> {
    let mut limits = LimitsFile {
        defaults: Rule::new(),
        policies: Vec::new(),
    };
    for (key, value) in in_order(root) {
        match &**key.get_ref() {
            "defaults" => {
                let table = table_of(source, key, value, "`[defaults]`")?;
                let settings = settings(source, Place::Defaults, table, |_| Ok(()))?;
                limits.defaults = rule(settings);
            }
            "policies" => {
                let table = table_of(
                    source,
                    key,
                    value,
                    "a table of policies, `[policies.<name>]`",
                )?;
                for (name, policy) in in_order(table) {
                    limits.policies.push(self::policy(source, name, policy)?);
                }
            }
            other => {
                let problem = format!(
                    "unknown table `{other}` at the top level; expected one of: `[defaults]`, \
                     `[policies.<name>]`"
                );
                return Err(source.limits(&key.span(), problem));
            }
        }
    }
    Ok(limits)
}

/// Reads `[policies.<name>]`: its fields, how they fit together, and its plans.
fn policy(
    source: Source<'_>,
    name: &Spanned<DeString<'_>>,
    value: &Spanned<DeValue<'_>>,
) -> Result<Rule, LimitsError> {
    let policy = checked_name(source, name, "policy")?;
    let table = table_of(
        source,
        name,
        value,
        &format!("a policy, `[policies.{policy}]`"),
    )?;
    let place = Place::Policy(policy);
    let mut plans = Vec::new();
    let settings = settings(source, place, table, |(key, value)| {
        let table = table_of(
            source,
            key,
            value,
            "a table of plans, `[policies.<name>.plans.<plan>]`",
        )?;
        for (plan, value) in in_order(table) {
            plans.push(self::plan(source, policy, plan, value)?);
        }
        Ok(())
    })?;
    let kind = check_policy(source, place, &settings)?;
    let mut rule = rule(settings).policy(policy.to_owned());
    for (name, settings) in plans {
        for (setting, key) in &settings {
            check_plan(
                source,
                Place::Plan { policy, plan: name },
                kind,
                setting,
                key,
            )?;
        }
        rule = rule.plan(name, plan_of(settings));
    }
    Ok(rule)
}

/// Reads `[policies.<policy>.plans.<name>]`.
fn plan<'t>(
    source: Source<'t>,
    policy: &'t str,
    name: &'t Spanned<DeString<'_>>,
    value: &'t Spanned<DeValue<'_>>,
) -> Result<(&'t str, Vec<Read>), LimitsError> {
    let plan = checked_name(source, name, "plan")?;
    let expected = format!("a plan, `[policies.{policy}.plans.{plan}]`");
    let table = table_of(source, name, value, &expected)?;
    let settings = settings(source, Place::Plan { policy, plan }, table, |_| Ok(()))?;
    Ok((plan, settings))
}

/// Reads the fields of a table at `place`, each where it may be written, in the file's order; a policy's
/// `plans` go to `plans`.
fn settings<'t, 'i>(
    source: Source<'t>,
    place: Place<'t>,
    table: &'t DeTable<'i>,
    mut plans: impl FnMut(Entry<'t, 'i>) -> Result<(), LimitsError>,
) -> Result<Vec<Read>, LimitsError> {
    let mut fields = Vec::new();
    for (key, value) in in_order(table) {
        let name = &**key.get_ref();
        if name == "plans" && matches!(place, Place::Policy(_)) {
            plans((key, value))?;
            continue;
        }
        let field = match Field::named(name) {
            Some(field) if allowed(place, field).is_ok() => field,
            found => {
                let why = found.and_then(|field| allowed(place, field).err());
                return Err(source.limits(&key.span(), unknown(place, name, why)));
            }
        };
        let written = Written {
            source,
            field,
            place,
            value,
        };
        fields.push((read(&written)?, key.span()));
    }
    Ok(fields)
}

/// Returns whether `field` may be written at `place`, or why not.
fn allowed(place: Place<'_>, field: Field) -> Result<(), String> {
    match place {
        Place::Defaults => match field.not_a_default() {
            Some(why) => Err(why.to_owned()),
            None => Ok(()),
        },
        Place::Plan { .. } if !Field::PLAN.contains(&field) => Err(format!(
            "a plan sets only {}; the policy's other values apply to every plan",
            listed(Field::PLAN.map(Field::name))
        )),
        _ => Ok(()),
    }
}

/// Returns the sentence of a key `name` that `place` does not take (`why`, when it is a field written in the
/// wrong place).
fn unknown(place: Place<'_>, name: &str, why: Option<String>) -> String {
    if let Some(why) = why {
        return format!("`{name}` {place} is not allowed: {why}");
    }
    match (place, name) {
        (Place::Policy(policy), "name") => format!(
            "`name` {place} is not a field: a policy's name is its table's, `[policies.{policy}]`"
        ),
        (Place::Defaults, "plans") => {
            "`plans` in [defaults] is not allowed: plans belong to a policy, `[policies.<name>.plans.<plan>]`"
                .to_owned()
        }
        _ => {
            let fields: Vec<&str> = match place {
                Place::Plan { .. } => Field::PLAN.map(Field::name).to_vec(),
                Place::Policy(_) => Field::POLICY.map(Field::name).into_iter().chain(["plans"]).collect(),
                _ => Field::POLICY
                    .into_iter()
                    .filter(|field| field.not_a_default().is_none())
                    .map(Field::name)
                    .collect(),
            };
            format!("unknown field `{name}` {place}; expected one of: {}", listed(fields))
        }
    }
}

/// Returns the name of a policy or a plan (`what`), checked: `[A-Za-z0-9_.-]+`.
fn checked_name<'t>(
    source: Source<'_>,
    name: &'t Spanned<DeString<'_>>,
    what: &str,
) -> Result<&'t str, LimitsError> {
    let text: &str = name.get_ref();
    match is_name(text) {
        true => Ok(text),
        false => Err(source.limits(
            &name.span(),
            format!(
                "the {what} name {text:?} is not a name: it takes ASCII letters, digits, `_`, `.` and `-`, at least one"
            ),
        )),
    }
}

/// Returns the table `value` of `key`, or an error saying it should be `expected`.
fn table_of<'t, 'i>(
    source: Source<'_>,
    key: &Spanned<DeString<'_>>,
    value: &'t Spanned<DeValue<'i>>,
    expected: &str,
) -> Result<&'t DeTable<'i>, LimitsError> {
    match value.get_ref() {
        DeValue::Table(table) => Ok(table),
        other => {
            let problem = format!("`{}` is {expected}, not {}", key.get_ref(), kind_of(other));
            Err(source.limits(&value.span(), problem))
        }
    }
}

/// Returns the entries of `table` in the order they are written (the parser's map keeps its own order).
fn in_order<'t, 'i>(table: &'t DeTable<'i>) -> Vec<Entry<'t, 'i>> {
    let mut entries: Vec<Entry<'t, 'i>> = table.iter().collect();
    entries.sort_by_key(|(key, _)| key.span().start);
    entries
}

/// Returns the rule the fields of a policy or of the defaults make.
fn rule(settings: Vec<Read>) -> Rule {
    let mut period = None;
    let mut rule = Rule::new();
    for (setting, _) in settings {
        rule = match setting {
            Setting::Prefix(prefix) => rule.prefix(prefix),
            Setting::Algorithm(algorithm) => rule.algorithm(algorithm),
            Setting::Max(max) => rule.max(max),
            Setting::Window(window) => rule.window(window),
            Setting::Message(message) => rule.message(message),
            Setting::Penalty(penalty) => rule.penalty(penalty),
            Setting::Reserve(reserves) => Rule {
                reserves: Some(reserves),
                ..rule
            },
            Setting::Burst(burst) => rule.burst(burst),
            Setting::MaxWait(wait) => rule.max_wait(wait),
            Setting::InFlight(permits) => rule.in_flight(permits),
            Setting::Shadow(shadow) => rule.shadow(shadow),
            Setting::OnError(on_error) => rule.on_error(on_error),
            Setting::Lease(units) => rule.lease(units),
            Setting::LeaseTtl(ttl) => rule.lease_ttl(ttl),
            Setting::InFlightTtl(ttl) => rule.in_flight_ttl(ttl),
            Setting::Period(p) => {
                period = Some(p);
                rule.period(p)
            }
            Setting::Tz(zone) => rule.tz(zone),
            Setting::Anchor(day) => rule.anchor(day),
        };
    }
    // A period's algorithm is the calendar's, whatever `algorithm = "fixed_window"` was written after it.
    match period {
        Some(period) => rule.period(period),
        None => rule,
    }
}

/// Returns the plan the fields of a plan make.
fn plan_of(settings: Vec<Read>) -> Plan {
    settings
        .into_iter()
        .fold(Plan::new(), |plan, (setting, _)| match setting {
            Setting::Max(max) => plan.max(max),
            Setting::Window(window) => plan.window(window),
            Setting::Burst(burst) => plan.burst(burst),
            Setting::Reserve(reserves) => Plan {
                reserves: Some(reserves),
                ..plan
            },
            Setting::Penalty(penalty) => plan.penalty(penalty),
            Setting::InFlight(permits) => plan.in_flight(permits),
            // Not a plan's: refused as the plan was read.
            _ => plan,
        })
}
