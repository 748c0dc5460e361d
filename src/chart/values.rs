//! The chart's values: one model gives `values.yaml` (each key with its comment) and
//! `values.schema.json` (which Helm checks every install, upgrade, lint and template against).
//!
//! `values.yaml` is the user's to edit. A re-render keeps the file as it is when it already has
//! every key of the model; when the model has keys the file lacks (a webhook was added, a newer
//! kopgen has a new value), the file is written again from the model with the user's value for
//! every key they had set, and their own keys kept.

use serde_json::{Value, json};

/// One key of `values.yaml`: its comment, and either a value or the keys below it.
struct Key {
    name: &'static str,
    doc: &'static str,
    node: Node,
}

enum Node {
    /// A value, with its default and its JSON schema.
    Leaf(Value, Value),
    Branch(Vec<Key>),
}

fn leaf(name: &'static str, doc: &'static str, default: Value, schema: Value) -> Key {
    Key {
        name,
        doc,
        node: Node::Leaf(default, schema),
    }
}

fn branch(name: &'static str, doc: &'static str, keys: Vec<Key>) -> Key {
    Key {
        name,
        doc,
        node: Node::Branch(keys),
    }
}

/// What the values depend on in the project.
pub struct Facts {
    /// The project has webhooks; their certificates come from this mode by default.
    pub webhooks: Option<crate::project::Certificates>,
}

fn model(facts: &Facts) -> Vec<Key> {
    let mut keys = vec![
        leaf(
            "nameOverride",
            "The start of every resource's name (kustomize's namePrefix in config/); empty: the chart's name.",
            json!(""),
            json!({"type": "string", "maxLength": 52}),
        ),
        branch(
            "manager",
            "The manager's Deployment.",
            vec![
                leaf(
                    "replicas",
                    "Replicas; with leader election one reconciles, the others wait (shards: auto shares the work).",
                    json!(1),
                    json!({"type": "integer", "minimum": 0}),
                ),
                branch(
                    "image",
                    "The manager's image.",
                    vec![
                        leaf(
                            "repository",
                            "",
                            json!("controller"),
                            json!({"type": "string", "minLength": 1}),
                        ),
                        leaf(
                            "tag",
                            "",
                            json!("latest"),
                            json!({"type": "string", "minLength": 1}),
                        ),
                        leaf(
                            "pullPolicy",
                            "",
                            json!("IfNotPresent"),
                            json!({"enum": ["Always", "IfNotPresent", "Never"]}),
                        ),
                    ],
                ),
                leaf(
                    "imagePullSecrets",
                    "Secrets to pull the image with: a list of {name: ...}.",
                    json!([]),
                    json!({"type": "array", "items": {"type": "object"}}),
                ),
                branch(
                    "leaderElection",
                    "Leader election through a Lease (--leader-elect).",
                    vec![leaf("enable", "", json!(true), json!({"type": "boolean"}))],
                ),
                branch(
                    "shards",
                    "Every replica reconciles a share of the objects, by the hash of their UID (--shards=auto).",
                    vec![leaf("enable", "", json!(false), json!({"type": "boolean"}))],
                ),
                branch(
                    "logging",
                    "The manager's log.",
                    vec![
                        leaf(
                            "format",
                            "json for log collectors, text for people (--log-format).",
                            json!("json"),
                            json!({"enum": ["json", "text"]}),
                        ),
                        leaf(
                            "level",
                            "A tracing EnvFilter, e.g. info,kube=debug (--log-level).",
                            json!("info"),
                            json!({"type": "string", "minLength": 1}),
                        ),
                    ],
                ),
                leaf(
                    "env",
                    "More environment variables of the manager container.",
                    json!([]),
                    json!({"type": "array", "items": {"type": "object"}}),
                ),
                leaf(
                    "resources",
                    "The manager container's resources.",
                    json!({"limits": {"cpu": "500m", "memory": "256Mi"}, "requests": {"cpu": "10m", "memory": "64Mi"}}),
                    json!({"type": "object"}),
                ),
                leaf("nodeSelector", "", json!({}), json!({"type": "object"})),
                leaf(
                    "tolerations",
                    "",
                    json!([]),
                    json!({"type": "array", "items": {"type": "object"}}),
                ),
                leaf("affinity", "", json!({}), json!({"type": "object"})),
            ],
        ),
        branch(
            "crd",
            "The CustomResourceDefinitions.",
            vec![
                leaf(
                    "enable",
                    "Install them with the chart (false: they are installed apart, e.g. by make install).",
                    json!(true),
                    json!({"type": "boolean"}),
                ),
                leaf(
                    "keep",
                    "Keep them when the release is uninstalled: deleting a CRD deletes every object of its kind.",
                    json!(true),
                    json!({"type": "boolean"}),
                ),
            ],
        ),
        branch(
            "metrics",
            "The /metrics endpoint on port 8443 and its Service.",
            vec![
                leaf("enable", "", json!(true), json!({"type": "boolean"})),
                leaf(
                    "secure",
                    "HTTPS, served only to tokens allowed to get /metrics (false: plain HTTP).",
                    json!(true),
                    json!({"type": "boolean"}),
                ),
            ],
        ),
        branch(
            "prometheus",
            "A ServiceMonitor for the Prometheus Operator (bind Prometheus to the metrics-reader ClusterRole).",
            vec![leaf("enable", "", json!(false), json!({"type": "boolean"}))],
        ),
        branch(
            "networkPolicy",
            "NetworkPolicies: /metrics only from namespaces labelled metrics: enabled, and the webhook port.",
            vec![leaf("enable", "", json!(false), json!({"type": "boolean"}))],
        ),
    ];
    if let Some(mode) = facts.webhooks {
        keys.push(branch("webhook", "The admission and conversion webhooks.", vec![
            leaf("enable", "", json!(true), json!({"type": "boolean"})),
            leaf(
                "certificates",
                "cert-manager issues the certificate (cert-manager must be installed), or self-managed: the manager makes and renews its own.",
                json!(mode.name()),
                json!({"enum": ["cert-manager", "self-managed"]}),
            ),
        ]));
    }
    keys
}

/// `values.schema.json`: every key of the model with its type; keys of the user's own are allowed.
pub fn schema(facts: &Facts) -> String {
    fn object(keys: &[Key]) -> Value {
        let mut properties = serde_json::Map::new();
        for key in keys {
            let mut schema = match &key.node {
                Node::Leaf(_, schema) => schema.clone(),
                Node::Branch(keys) => object(keys),
            };
            if !key.doc.is_empty()
                && let Some(map) = schema.as_object_mut()
            {
                map.insert("description".into(), json!(key.doc));
            }
            properties.insert(key.name.into(), schema);
        }
        json!({"type": "object", "properties": properties})
    }
    let mut schema = object(&model(facts));
    if let Some(map) = schema.as_object_mut() {
        map.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft-07/schema#"),
        );
    }
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// `values.yaml`: `existing` (the user's file) when it has every key of the model, else the
/// model's keys with the user's values, followed by the user's own keys.
pub fn render(facts: &Facts, existing: Option<&str>) -> Result<String, String> {
    let user: Option<Value> = match existing {
        Some(text) => match crate::yaml::from_str(text) {
            Ok(Value::Null) => None,
            Ok(value @ Value::Object(_)) => Some(value),
            Ok(_) => return Err("not a mapping of values".into()),
            Err(e) => return Err(e.to_string()),
        },
        None => None,
    };
    let model = model(facts);
    if let (Some(text), Some(user)) = (existing, &user) {
        if has_every_key(&model, user) {
            return Ok(text.to_owned());
        }
        // The missing keys added where they belong, every line of the user's kept (comments
        // too), when the file is laid out in blocks; else the whole file is written again.
        if let Some(added) = with_missing_keys(text, &model, user) {
            return Ok(added);
        }
    }
    let mut out = String::from(
        "# Values of the chart kopgen renders from the project (values.schema.json checks them).\n\
         # Edit freely: `kopgen manifests` keeps your values, and your own keys for templates you add.\n",
    );
    emit(&model, user.as_ref(), "", &mut out)?;
    Ok(out)
}

/// `text` (a `values.yaml`) with `webhook.certificates` set to `mode`, every other line as it
/// is: `kopgen edit --webhook-certificates` switches the chart's default with `config/`.
pub fn with_certificates(text: &str, mode: crate::project::Certificates) -> String {
    let mode = mode.name();
    let mut in_webhook = false;
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        if !line.starts_with([' ', '#', '\n']) {
            in_webhook = line.trim_end() == "webhook:";
        }
        let indent = line.len() - line.trim_start().len();
        if in_webhook && indent > 0 && line.trim_start().starts_with("certificates:") {
            out.push_str(&format!("{}certificates: {mode}\n", &line[..indent]));
        } else {
            out.push_str(line);
        }
    }
    out
}

/// `text` with the keys of `model` it lacks inserted at the end of their parent's block, each
/// as kopgen writes it (its comment, its default); `None` where the layout does not allow it (a
/// parent written in flow style, a tab) or the result would not read back with the user's
/// values and every key.
fn with_missing_keys(text: &str, model: &[Key], user: &Value) -> Option<String> {
    if text.contains('\t') {
        return None;
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut inserts: Vec<(usize, String)> = Vec::new();
    missing_in_block(&lines, 0..lines.len(), None, model, user, &mut inserts)?;
    inserts.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    for (at, block) in inserts {
        let added: Vec<String> = block.lines().map(str::to_owned).collect();
        out.splice(at..at, added);
    }
    let mut result = out.join("\n");
    result.push('\n');
    let read: Value = crate::yaml::from_str(&result).ok()?;
    let kept = |v: &Value| -> bool { same_user_values(user, v) };
    (has_every_key(model, &read) && kept(&read)).then_some(result)
}

/// Whether every value of `user` is in `read` unchanged.
fn same_user_values(user: &Value, read: &Value) -> bool {
    match (user, read) {
        (Value::Object(user), Value::Object(read)) => user
            .iter()
            .all(|(k, v)| read.get(k).is_some_and(|r| same_user_values(v, r))),
        _ => user == read,
    }
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// Whether a line holds no key (blank or a comment).
fn is_filler(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.is_empty() || trimmed.starts_with('#')
}

/// Collects the inserts that give the block `range` of `lines` (the value of a mapping whose
/// key is indented `parent`, `None` at the top) the keys of `keys` it lacks.
fn missing_in_block(
    lines: &[&str],
    range: std::ops::Range<usize>,
    parent: Option<usize>,
    keys: &[Key],
    user: &Value,
    inserts: &mut Vec<(usize, String)>,
) -> Option<()> {
    let content: Vec<usize> = range.clone().filter(|i| !is_filler(lines[*i])).collect();
    // The block's own indent: its first key's, or one step in from its parent.
    let indent = content
        .first()
        .map(|i| indent_of(lines[*i]))
        .unwrap_or_else(|| parent.map_or(0, |p| p + 2));
    // After its last line with content, before the comments and blank lines that follow.
    let end = content.last().map_or(range.start, |i| i + 1);
    for key in keys {
        let line = content.iter().copied().find(|i| {
            let line = lines[*i];
            indent_of(line) == indent
                && line
                    .trim_start()
                    .strip_prefix(key.name)
                    .is_some_and(|rest| rest.starts_with(':'))
        });
        match (user.get(key.name), &key.node, line) {
            (None, _, _) => {
                let mut block = String::new();
                emit(std::slice::from_ref(key), None, "", &mut block).ok()?;
                let pad = " ".repeat(indent);
                let block: String = block.lines().map(|l| format!("{pad}{l}\n")).collect();
                inserts.push((end, block));
            }
            (Some(_), Node::Leaf(..), _) => {}
            (Some(value), Node::Branch(children), Some(at)) => {
                // Its value must be a block below the key, not flow style on the key's line.
                let rest = lines[at].trim_start()[key.name.len() + 1..].trim();
                if !(rest.is_empty() || rest.starts_with('#')) || !value.is_object() {
                    return None;
                }
                let below = (at + 1..range.end)
                    .find(|i| !is_filler(lines[*i]) && indent_of(lines[*i]) <= indent)
                    .unwrap_or(range.end);
                missing_in_block(lines, at + 1..below, Some(indent), children, value, inserts)?;
            }
            (Some(_), Node::Branch(_), None) => return None,
        }
    }
    Some(())
}

fn has_every_key(keys: &[Key], user: &Value) -> bool {
    keys.iter()
        .all(|key| match (user.get(key.name), &key.node) {
            (None, _) => false,
            (Some(_), Node::Leaf(..)) => true,
            (Some(value), Node::Branch(keys)) => value.is_object() && has_every_key(keys, value),
        })
}

/// The model's keys under `path` (empty: the top), with the user's values, then the user's own
/// keys; a user's value where the model has keys below must be a mapping (or empty).
fn emit(keys: &[Key], user: Option<&Value>, path: &str, out: &mut String) -> Result<(), String> {
    let indent = if path.is_empty() {
        0
    } else {
        2 * (path.matches('.').count() + 1)
    };
    let pad = " ".repeat(indent);
    for key in keys {
        if !key.doc.is_empty() {
            out.push_str(&format!("{pad}# {}\n", key.doc));
        }
        let mine = user.and_then(|u| u.get(key.name));
        let here = if path.is_empty() {
            key.name.to_owned()
        } else {
            format!("{path}.{}", key.name)
        };
        match &key.node {
            Node::Leaf(default, _) => {
                let value = match mine {
                    Some(value) => value.clone(),
                    None => default.clone(),
                };
                out.push_str(&entry(key.name, &value, indent));
            }
            Node::Branch(keys) => {
                if let Some(value) = mine.filter(|m| !m.is_object() && !m.is_null()) {
                    let value = crate::yaml::to_string(value).unwrap_or_default();
                    return Err(format!(
                        "`{here}` is `{}` where a mapping of values is expected",
                        value.trim_end()
                    ));
                }
                out.push_str(&format!("{pad}{}:\n", key.name));
                emit(keys, mine.filter(|m| m.is_object()), &here, out)?;
            }
        }
    }
    // The user's own keys at this level, after the model's.
    if let Some(Value::Object(map)) = user {
        for (name, value) in map {
            let name = name.as_str();
            if !keys.iter().any(|k| k.name == name) {
                let name = crate::yaml::to_string(&name).unwrap_or_default();
                out.push_str(&entry(name.trim_end(), value, indent));
            }
        }
    }
    Ok(())
}

/// `name: value` at `indent`, the value inline when it is a scalar or empty, else below.
fn entry(name: &str, value: &Value, indent: usize) -> String {
    let pad = " ".repeat(indent);
    let text = crate::yaml::to_string(value).unwrap_or_default();
    let inline = match value {
        Value::Array(items) => items.is_empty(),
        Value::Object(map) => map.is_empty(),
        _ => true,
    };
    if inline {
        // A scalar on several lines (a block scalar) starts after the key, its lines below.
        let mut lines = text.trim_end().lines();
        let mut out = format!("{pad}{name}: {}\n", lines.next().unwrap_or_default());
        for line in lines {
            out.push_str(&format!("{pad}{line}\n"));
        }
        return out;
    }
    let mut out = format!("{pad}{name}:\n");
    let inner = if matches!(value, Value::Array(_)) {
        indent
    } else {
        indent + 2
    };
    for line in text.lines() {
        out.push_str(&format!("{}{line}\n", " ".repeat(inner)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            webhooks: Some(crate::project::Certificates::CertManager),
        }
    }

    #[test]
    fn the_rendered_values_read_back_as_the_model_defaults() {
        let text = render(&facts(), None).expect("renders");
        let values: Value = crate::yaml::from_str(&text).expect("YAML");
        assert_eq!(values["manager"]["replicas"], Value::from(1));
        assert_eq!(
            values["manager"]["resources"]["limits"]["cpu"],
            Value::from("500m")
        );
        assert_eq!(
            values["webhook"]["certificates"],
            Value::from("cert-manager")
        );
        assert_eq!(values["manager"]["tolerations"], Value::Array(vec![]));
        // A file with every key is kept as it is, comments and all.
        let edited = text.replace("replicas: 1", "replicas: 3 # mine");
        assert_eq!(render(&facts(), Some(&edited)).expect("renders"), edited);
    }

    #[test]
    fn a_file_missing_keys_gets_them_and_keeps_the_users_values_and_keys() {
        let old = "manager:\n  replicas: 3\n  tolerations:\n  - key: a\n    operator: Exists\n  mine: x\nextra:\n  team: blue\n";
        let text = render(&facts(), Some(old)).expect("renders");
        let values: Value = crate::yaml::from_str(&text).expect("YAML");
        assert_eq!(values["manager"]["replicas"], Value::from(3));
        assert_eq!(values["manager"]["tolerations"][0]["key"], Value::from("a"));
        assert_eq!(values["manager"]["mine"], Value::from("x"));
        assert_eq!(values["extra"]["team"], Value::from("blue"));
        assert_eq!(values["manager"]["image"]["tag"], Value::from("latest"));
        assert_eq!(values["webhook"]["enable"], Value::from(true));
        // A second render keeps it.
        assert_eq!(render(&facts(), Some(&text)).expect("renders"), text);
    }

    /// The user's comments and layout stay when keys are added (kopgen 0.2's chart gained
    /// keys): each missing key goes at the end of its parent's block, with kopgen's comment.
    #[test]
    fn keys_added_to_a_users_file_keep_its_comments() {
        let full = render(&facts(), None).expect("renders");
        // The user's file: kopgen's, commented, with `webhook` and `manager.image` gone.
        let mut old = String::from("# Our team's values.\n");
        let mut skip = None;
        for line in full.lines() {
            let indent = line.len() - line.trim_start().len();
            if let Some(at) = skip {
                if indent > at || line.trim_start().starts_with('#') && indent >= at {
                    continue;
                }
                skip = None;
            }
            if line == "webhook:" || line == "  image:" {
                skip = Some(indent);
                continue;
            }
            old.push_str(line);
            old.push('\n');
            if line.trim_start().starts_with("replicas:") {
                old.push_str("  # two zones\n");
            }
        }
        let old = old.replace("replicas: 1", "replicas: 2 # HA");
        let text = render(&facts(), Some(&old)).expect("renders");
        for kept in ["# Our team's values.", "  # two zones", "replicas: 2 # HA"] {
            assert!(text.contains(kept), "{kept:?} is gone:\n{text}");
        }
        let values: Value = crate::yaml::from_str(&text).expect("YAML");
        assert_eq!(values["manager"]["replicas"], Value::from(2));
        assert_eq!(values["webhook"]["enable"], Value::from(true));
        assert_eq!(values["manager"]["image"]["tag"], Value::from("latest"));
        assert_eq!(render(&facts(), Some(&text)).expect("renders"), text);
    }

    #[test]
    fn the_certificate_mode_is_switched_in_place() {
        let text = render(&facts(), None).expect("renders") + "mine:\n  certificates: x\n";
        let switched = with_certificates(&text, crate::project::Certificates::SelfManaged);
        let values: Value = crate::yaml::from_str(&switched).expect("YAML");
        assert_eq!(
            values["webhook"]["certificates"],
            Value::from("self-managed")
        );
        assert_eq!(values["mine"]["certificates"], Value::from("x"));
        assert_eq!(switched.lines().count(), text.lines().count());
    }

    #[test]
    fn a_values_file_that_is_not_a_mapping_is_an_error() {
        assert!(render(&facts(), Some("- a\n")).is_err());
        assert!(render(&facts(), Some("a: [\n")).is_err());
        let said = render(&facts(), Some("manager:\n  image: x\n")).expect_err("refused");
        assert!(said.contains("`manager.image` is `x`"), "{said}");
        assert!(render(&facts(), Some("? [a]\n: b\n")).is_err());
        // A value on several lines stays one value.
        let text = render(&facts(), Some("notes: \"one\\ntwo\\n\"\n")).expect("renders");
        let values: Value = crate::yaml::from_str(&text).expect("YAML");
        assert_eq!(values["notes"], Value::from("one\ntwo\n"));
    }

    #[test]
    fn the_schema_types_every_key_and_allows_the_users_own() {
        let schema: Value = serde_json::from_str(&schema(&facts())).expect("JSON");
        let manager = &schema["properties"]["manager"]["properties"];
        assert_eq!(manager["replicas"]["type"], "integer");
        assert_eq!(
            schema["properties"]["webhook"]["properties"]["certificates"]["enum"],
            json!(["cert-manager", "self-managed"])
        );
        assert!(schema.get("additionalProperties").is_none());
        let without = Facts { webhooks: None };
        assert!(!super::schema(&without).contains("\"webhook\""));
    }
}
