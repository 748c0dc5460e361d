//! The breaking-change gate: a CRD compared with its previous revision, as crdify compares
//! them (kubernetes-sigs/crdify, which OLM v1's upgrade preflight runs).
//!
//! Three validators, as in crdify: CRD-wide checks (scope, fields removed from any version,
//! stored versions removed), property checks within each version the two revisions share,
//! and property checks between the served versions of the new revision (only issues the old
//! revision did not already have). Each property check compares one schema node with its
//! children removed, claims the keywords it understands, and whatever else differs is an
//! `unhandled` change. [`config`] sets each check's enforcement; [`source`] reads revisions
//! from files, git and clusters.
//!
//! CRDs are compared as JSON values, so that a revision read from YAML and one derived from
//! the Rust types compare alike (numbers by value, Go's zero values as absent).

pub mod config;
mod property;
mod report;
pub mod source;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

pub use config::{Config, ConfigError, Enforcement};
pub use report::{Baseline, rule};

/// Where a change was found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// The CRD as a whole (scope, stored versions).
    Crd,
    /// A version both revisions have.
    Version(String),
    /// Two served versions of the new revision, older first (`v1alpha1 -> v1`).
    Served(String),
}

/// One step along a schema, as crdify names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    Field(String),
    Items,
    ItemsAt(usize),
    AllOf(usize),
    AnyOf(usize),
    OneOf(usize),
    Not,
    AdditionalProperties,
    PatternProperties(String),
    AdditionalItems,
    Definitions(String),
    Dependencies(String),
}

/// A property's place in a version's schema.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<Step>);

impl Path {
    fn child(&self, step: Step) -> Path {
        let mut steps = self.0.clone();
        steps.push(step);
        Path(steps)
    }

    /// The path as the lint's findings name fields (`spec`, `ports`, `[*]`, `{*}`): what the
    /// Rust locator follows. It stops at the first step no Rust field corresponds to.
    pub fn fields(&self) -> Vec<String> {
        let mut out = Vec::new();
        for step in &self.0 {
            match step {
                Step::Field(name) => out.push(name.clone()),
                Step::Items | Step::ItemsAt(_) => out.push("[*]".into()),
                Step::AdditionalProperties => out.push("{*}".into()),
                _ => break,
            }
        }
        out
    }
}

impl std::fmt::Display for Path {
    /// crdify's form: `^.spec.ports.items`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("^")?;
        for step in &self.0 {
            match step {
                Step::Field(name) => write!(f, ".{name}")?,
                Step::Items => f.write_str(".items")?,
                Step::ItemsAt(i) => write!(f, ".items[{i}]")?,
                Step::AllOf(i) => write!(f, ".allOf[{i}]")?,
                Step::AnyOf(i) => write!(f, ".anyOf[{i}]")?,
                Step::OneOf(i) => write!(f, ".oneOf[{i}]")?,
                Step::Not => f.write_str(".not")?,
                Step::AdditionalProperties => f.write_str(".additionalProperties")?,
                Step::PatternProperties(k) => write!(f, ".patternProperties[{k}]")?,
                Step::AdditionalItems => f.write_str(".additionalItems")?,
                Step::Definitions(k) => write!(f, ".definitions[{k}]")?,
                Step::Dependencies(k) => write!(f, ".dependencies[{k}]")?,
            }
        }
        Ok(())
    }
}

/// One incompatible change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Change {
    pub scope: Scope,
    /// The property (empty for CRD-wide changes).
    pub path: Path,
    /// crdify's name of the check (`enum`, `maxLength`, `existingFieldRemoval`, ...).
    pub check: &'static str,
    /// `Error` or `Warn`: changes under `None` are not reported.
    pub enforcement: Enforcement,
    /// A tightened validation that validation ratcheting (GA in Kubernetes 1.33) lets
    /// existing objects keep failing as long as an update leaves the field unchanged.
    pub ratcheted: bool,
    pub message: String,
    /// The child field the change is about, where there is one (a new required field).
    pub field: Option<String>,
}

impl Change {
    /// What to do about a change of this check.
    pub fn help(&self) -> &'static str {
        report::help(self.check)
    }
}

/// The changes from `old` to `new` (both whole CRDs), sorted.
pub fn compare(old: &Value, new: &Value, config: &Config) -> Vec<Change> {
    let old = normalized(old);
    let new = normalized(new);
    let mut changes = Vec::new();
    crd_checks(&old, &new, config, &mut changes);
    for old_version in versions(&old) {
        let name = str_at(old_version, "name");
        let Some(new_version) = versions(&new)
            .into_iter()
            .find(|v| str_at(v, "name") == name)
        else {
            continue;
        };
        let scope = Scope::Version(name.to_owned());
        compare_versions(old_version, new_version, config, &scope, &mut changes);
    }
    served_checks(&old, &new, config, &mut changes);
    changes.sort();
    changes.dedup();
    changes
}

fn crd_checks(old: &Value, new: &Value, config: &Config, out: &mut Vec<Change>) {
    let mut push = |check: &'static str, path: Path, scope: Scope, message: String| {
        let enforcement = config.enforcement(check, false);
        if enforcement != Enforcement::None {
            out.push(Change {
                scope,
                path,
                check,
                enforcement,
                ratcheted: false,
                message,
                field: None,
            });
        }
    };
    let (old_scope, new_scope) = (str_at(&old["spec"], "scope"), str_at(&new["spec"], "scope"));
    if old_scope != new_scope {
        push(
            "scope",
            Path::default(),
            Scope::Crd,
            format!("scope changed : {old_scope:?} -> {new_scope:?}"),
        );
    }
    for new_version in versions(new) {
        let name = str_at(new_version, "name");
        let Some(old_version) = versions(old)
            .into_iter()
            .find(|v| str_at(v, "name") == name)
        else {
            continue;
        };
        let new_fields = flatten(new_version);
        for path in flatten(old_version).into_keys() {
            if !new_fields.contains_key(&path) {
                push(
                    "existingFieldRemoval",
                    path.clone(),
                    Scope::Version(name.to_owned()),
                    format!("removed field : {name}.{path}"),
                );
            }
        }
    }
    // A version objects are stored in: the cluster's `status.storedVersions`, and the storage
    // version of a revision from git (objects written by that release are stored in it).
    let new_names: BTreeSet<&str> = versions(new).iter().map(|v| str_at(v, "name")).collect();
    let mut stored: Vec<&str> = old["status"]["storedVersions"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for version in versions(old) {
        if version["storage"] == Value::Bool(true) && !stored.contains(&str_at(version, "name")) {
            stored.push(str_at(version, "name"));
        }
    }
    let removed: Vec<&str> = stored
        .into_iter()
        .filter(|v| !new_names.contains(v))
        .collect();
    if !removed.is_empty() {
        push(
            "storedVersionRemoval",
            Path::default(),
            Scope::Crd,
            format!("stored versions removed : [{}]", removed.join(" ")),
        );
    }
}

/// crdify's served-version validator: each pair of the new revision's served versions,
/// less the issues the old revision's pairs already had.
fn served_checks(old: &Value, new: &Value, config: &Config, out: &mut Vec<Change>) {
    if config.ignores_conversion()
        && new["spec"]["conversion"]["strategy"].as_str() == Some("Webhook")
    {
        return;
    }
    let known: BTreeSet<(Scope, Path, &'static str, String)> = served_pairs(old, config)
        .into_iter()
        .map(|c| (c.scope, c.path, c.check, c.message))
        .collect();
    for change in served_pairs(new, config) {
        let key = (
            change.scope.clone(),
            change.path.clone(),
            change.check,
            change.message.clone(),
        );
        if !known.contains(&key) {
            out.push(change);
        }
    }
}

/// The most served versions compared pair by pair, as crdify does; past it (no real CRD comes
/// near) each is compared with the next, so the work and the findings grow linearly.
pub const MAX_PAIRWISE: usize = 32;

fn served_pairs(crd: &Value, config: &Config) -> Vec<Change> {
    let mut served: Vec<&Value> = versions(crd)
        .into_iter()
        .filter(|v| v["served"] == Value::Bool(true))
        .collect();
    // Oldest first, as Kubernetes orders versions (alpha, beta, GA; then by number).
    served.sort_by_key(|v| {
        std::cmp::Reverse(crate::manifests::kinds::version_priority(str_at(v, "name")))
    });
    let schemas: Vec<&Value> = served
        .iter()
        .map(|v| &v["schema"]["openAPIV3Schema"])
        .collect();
    let flat: Vec<BTreeMap<Path, &Value>> = served.iter().map(|v| flatten(v)).collect();
    let pairwise = served.len() <= MAX_PAIRWISE;
    let mut out = Vec::new();
    for i in 0..served.len() {
        let later = match pairwise {
            true => i + 1..served.len(),
            false => i + 1..(i + 2).min(served.len()),
        };
        for j in later {
            // Two versions with one schema have nothing to tell apart.
            if schemas[i] == schemas[j] {
                continue;
            }
            let scope = Scope::Served(format!(
                "{} -> {}",
                str_at(served[i], "name"),
                str_at(served[j], "name")
            ));
            compare_flat(&flat[i], &flat[j], config, &scope, &mut out);
        }
    }
    out
}

/// Whether `crd` serves too many versions to compare every pair ([`MAX_PAIRWISE`]).
pub fn served_compared_in_sequence(crd: &Value) -> bool {
    let served = versions(crd)
        .into_iter()
        .filter(|v| v["served"] == Value::Bool(true))
        .count();
    served > MAX_PAIRWISE
}

/// Every property of `old` compared with the same property of `new`, children left out.
fn compare_versions(
    old: &Value,
    new: &Value,
    config: &Config,
    scope: &Scope,
    out: &mut Vec<Change>,
) {
    compare_flat(&flatten(old), &flatten(new), config, scope, out);
}

/// [`compare_versions`] of two versions already flattened.
fn compare_flat(
    old: &BTreeMap<Path, &Value>,
    new_props: &BTreeMap<Path, &Value>,
    config: &Config,
    scope: &Scope,
    out: &mut Vec<Change>,
) {
    for (path, old_node) in old {
        let (path, old_node) = (path.clone(), *old_node);
        let mut a = without_children(old_node);
        let mut b = new_props
            .get(&path)
            .map(|n| without_children(n))
            .unwrap_or_default();
        if a == b {
            continue;
        }
        for (check, ratchetable, message, field) in property::compare(&mut a, &mut b, config) {
            let enforcement = config.enforcement(check, ratchetable);
            if enforcement != Enforcement::None {
                out.push(Change {
                    scope: scope.clone(),
                    path: path.clone(),
                    check,
                    enforcement,
                    ratcheted: ratchetable,
                    message,
                    field,
                });
            }
        }
    }
}

/// A version's schema nodes by path.
fn flatten(version: &Value) -> BTreeMap<Path, &Value> {
    let mut out = BTreeMap::new();
    walk(
        &version["schema"]["openAPIV3Schema"],
        Path::default(),
        &mut out,
    );
    out
}

fn walk<'a>(node: &'a Value, path: Path, out: &mut BTreeMap<Path, &'a Value>) {
    let Some(map) = node.as_object() else {
        return;
    };
    out.insert(path.clone(), node);
    match map.get("items") {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, path.child(Step::ItemsAt(i)), out);
            }
        }
        Some(item) => walk(item, path.child(Step::Items), out),
        None => {}
    }
    for (key, step) in [
        ("allOf", Step::AllOf as fn(usize) -> Step),
        ("anyOf", Step::AnyOf),
        ("oneOf", Step::OneOf),
    ] {
        for (i, sub) in map
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            walk(sub, path.child(step(i)), out);
        }
    }
    if let Some(not) = map.get("not") {
        walk(not, path.child(Step::Not), out);
    }
    for (key, step) in [
        ("properties", Step::Field as fn(String) -> Step),
        ("patternProperties", Step::PatternProperties),
        ("definitions", Step::Definitions),
        ("dependencies", Step::Dependencies),
    ] {
        for (name, sub) in map
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            walk(sub, path.child(step(name.clone())), out);
        }
    }
    if let Some(sub) = map.get("additionalProperties") {
        walk(sub, path.child(Step::AdditionalProperties), out);
    }
    if let Some(sub) = map.get("additionalItems") {
        walk(sub, path.child(Step::AdditionalItems), out);
    }
}

/// A node with `properties` and `items` removed, as crdify compares one property at a time.
fn without_children(node: &Value) -> Map<String, Value> {
    let mut map = node.as_object().cloned().unwrap_or_default();
    map.remove("properties");
    map.remove("items");
    map
}

fn versions(crd: &Value) -> Vec<&Value> {
    crd["spec"]["versions"]
        .as_array()
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn str_at<'a>(value: &'a Value, key: &str) -> &'a str {
    value[key].as_str().unwrap_or_default()
}

/// Integral numbers as integers (`10.0` from a Rust `f64` equals `10` from YAML), and Go's
/// zero values dropped from schema nodes: crdify compares Go structs, where an empty string,
/// a `false` plain bool or an empty list is the same as no value.
fn normalized(value: &Value) -> Value {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, value)| !is_zero(key, value))
                .map(|(key, value)| (key.clone(), normalized(value)))
                .collect(),
        ),
        _ => value.clone(),
    }
}

/// JSONSchemaProps fields that Go holds by value (not by pointer): their zero value is no value.
fn is_zero(key: &str, value: &Value) -> bool {
    const PLAIN_BOOLS: &[&str] = &[
        "nullable",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "uniqueItems",
    ];
    match value {
        Value::Null => true,
        Value::String(s) => s.is_empty() && key != "default" && key != "example",
        Value::Bool(false) => PLAIN_BOOLS.contains(&key),
        Value::Array(a) => a.is_empty() && key != "default" && key != "example",
        Value::Object(o) => o.is_empty() && key != "default" && key != "example",
        Value::Number(_) | Value::Bool(true) => false,
    }
}

#[cfg(test)]
mod tests;
