//! crdify's property checks: one schema node of the old revision against the same node of the
//! new one, children removed. Each check takes the keywords it understands out of both nodes;
//! what still differs afterwards is reported as `unhandled`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::config::{Config, Policy};

/// A check's verdict: (check, whether validation ratcheting covers it, message, the child
/// field it is about).
pub type Verdict = (&'static str, bool, String, Option<String>);

/// Every check on `a` (old) and `b` (new), `unhandled` last.
pub fn compare(
    a: &mut Map<String, Value>,
    b: &mut Map<String, Value>,
    config: &Config,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    let mut report =
        |check: &'static str, ratchetable: bool, message: Option<String>, field: Option<String>| {
            if let Some(message) = message {
                out.push((check, ratchetable, message, field));
            }
        };
    report("default", false, default(a, b), None);
    report("description", false, description(a, b), None);
    report("enum", true, enumeration(a, b, config), None);
    for key in ["maximum", "maxItems", "maxLength", "maxProperties"] {
        report(key, true, bound(a, b, key, Direction::Max), None);
    }
    for key in ["minimum", "minItems", "minLength", "minProperties"] {
        report(key, true, bound(a, b, key, Direction::Min), None);
    }
    report("nullable", false, nullable(a, b, config), None);
    report("pattern", true, pattern(a, b, config), None);
    let (message, first) = required(a, b);
    report("required", false, message, first);
    report("type", false, type_(a, b), None);
    if a != b {
        report("unhandled", false, Some(unhandled(a, b)), None);
    }
    out
}

fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    map.remove(key)
}

/// JSON as Go's `encoding/json` writes it compactly (crdify prints raw values so).
fn raw(value: &Value) -> String {
    value.to_string()
}

fn default(a: &mut Map<String, Value>, b: &mut Map<String, Value>) -> Option<String> {
    match (take(a, "default"), take(b, "default")) {
        (None, Some(new)) => Some(format!(
            "default added when there was none previously : {:?}",
            raw(&new)
        )),
        (Some(old), None) => Some(format!("default value removed : {:?}", raw(&old))),
        (Some(old), Some(new)) if old != new => Some(format!(
            "default value changed : {:?} -> {:?}",
            raw(&old),
            raw(&new)
        )),
        _ => None,
    }
}

fn text(map: &mut Map<String, Value>, key: &str) -> String {
    match take(map, key) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    }
}

fn description(a: &mut Map<String, Value>, b: &mut Map<String, Value>) -> Option<String> {
    let (old, new) = (text(a, "description"), text(b, "description"));
    (old != new).then(|| format!("description changed : {old:?} -> {new:?}"))
}

fn values(map: &mut Map<String, Value>, key: &str) -> BTreeSet<String> {
    match take(map, key) {
        Some(Value::Array(items)) => items.iter().map(raw).collect(),
        _ => BTreeSet::new(),
    }
}

fn list(set: impl IntoIterator<Item = String>) -> String {
    format!("[{}]", set.into_iter().collect::<Vec<_>>().join(" "))
}

fn enumeration(
    a: &mut Map<String, Value>,
    b: &mut Map<String, Value>,
    config: &Config,
) -> Option<String> {
    let (old, new) = (values(a, "enum"), values(b, "enum"));
    let removed: Vec<String> = old.difference(&new).cloned().collect();
    let added: Vec<String> = new.difference(&old).cloned().collect();
    if old.is_empty() && !new.is_empty() {
        Some(format!(
            "enum constraint added when there was none previously : {}",
            list(new)
        ))
    } else if !removed.is_empty() {
        Some(format!("allowed enum values removed : {}", list(removed)))
    } else if !added.is_empty() && config.policy("enum", "additionPolicy") != Policy::Allow {
        Some(format!("allowed enum values added : {}", list(added)))
    } else {
        None
    }
}

#[derive(Clone, Copy)]
enum Direction {
    Max,
    Min,
}

/// A number as Go's `%v` prints it.
fn number(value: &Value) -> Option<(f64, String)> {
    let n = value.as_f64()?;
    let shown = if n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    };
    Some((n, shown))
}

fn bound(
    a: &mut Map<String, Value>,
    b: &mut Map<String, Value>,
    key: &str,
    direction: Direction,
) -> Option<String> {
    let old = take(a, key).as_ref().and_then(number);
    let new = take(b, key).as_ref().and_then(number);
    let (word, tighter) = match direction {
        Direction::Max => ("maximum", "decreased"),
        Direction::Min => ("minimum", "increased"),
    };
    match (old, new) {
        (None, Some((_, new))) => Some(format!(
            "{word} constraint added when there was none previously : {new}"
        )),
        (Some((old, old_shown)), Some((new, new_shown))) => {
            let tightened = match direction {
                Direction::Max => new < old,
                Direction::Min => new > old,
            };
            tightened.then(|| format!("{word} {tighter} : {old_shown} -> {new_shown}"))
        }
        _ => None,
    }
}

fn flag(map: &mut Map<String, Value>, key: &str) -> bool {
    take(map, key) == Some(Value::Bool(true))
}

fn nullable(
    a: &mut Map<String, Value>,
    b: &mut Map<String, Value>,
    config: &Config,
) -> Option<String> {
    match (flag(a, "nullable"), flag(b, "nullable")) {
        (false, true) if config.policy("nullable", "additionPolicy") != Policy::Allow => {
            Some("nullable added : false -> true".into())
        }
        (true, false) if config.policy("nullable", "removalPolicy") != Policy::Allow => {
            Some("nullable removed : true -> false".into())
        }
        _ => None,
    }
}

fn pattern(
    a: &mut Map<String, Value>,
    b: &mut Map<String, Value>,
    config: &Config,
) -> Option<String> {
    let (old, new) = (text(a, "pattern"), text(b, "pattern"));
    if old == new {
        None
    } else if old.is_empty() {
        Some(format!("pattern added : {old:?} -> {new:?}"))
    } else if new.is_empty() {
        (config.policy("pattern", "removalPolicy") != Policy::Allow)
            .then(|| format!("pattern removed : {old:?} -> {new:?}"))
    } else {
        Some(format!("pattern changed : {old:?} -> {new:?}"))
    }
}

/// The message, and the first new required field.
fn required(
    a: &mut Map<String, Value>,
    b: &mut Map<String, Value>,
) -> (Option<String>, Option<String>) {
    let names = |set: BTreeSet<String>| -> BTreeSet<String> {
        set.into_iter()
            .map(|raw| serde_json::from_str::<String>(&raw).unwrap_or(raw))
            .collect()
    };
    let (old, new) = (names(values(a, "required")), names(values(b, "required")));
    let added: Vec<String> = new.difference(&old).cloned().collect();
    let first = added.first().cloned();
    (
        (!added.is_empty()).then(|| format!("new required fields: {}", list(added))),
        first,
    )
}

fn type_(a: &mut Map<String, Value>, b: &mut Map<String, Value>) -> Option<String> {
    let (old, new) = (text(a, "type"), text(b, "type"));
    (old != new).then(|| format!("type changed : {old:?} -> {new:?}"))
}

/// The keywords still differing, each with its old and new value.
fn unhandled(a: &Map<String, Value>, b: &Map<String, Value>) -> String {
    let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let shown = |v: Option<&Value>| v.map_or_else(|| "(none)".to_owned(), raw);
    let changed: Vec<String> = keys
        .into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| format!("{k}: {} -> {}", shown(a.get(k)), shown(b.get(k))))
        .collect();
    format!("unhandled changes found : {}", changed.join("; "))
}
